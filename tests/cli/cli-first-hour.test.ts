/**
 * The first hour with the CLI (issue "a smoother first hour"): config and tenant found where
 * `npm start` finds them (package.json's writ.config field, the config's demo section) and named
 * when a list is empty; every --help exits 0; `ls` shows why an invocation was denied; `get` shows
 * who voted and their note; `-q --invocation` gives exactly one id with several pending; `journal
 * export` writes into the state directory, not the working tree.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMANDS, runCli } from "../../src/cli/run.js";
import { REPO, TEST_CONFIG, json, workspace, writ } from "./helpers.js";

/** TEST_CONFIG with a demo section: scope demo/default, as examples/writ.config.ts has. */
const DEMO_CONFIG = `import { withDemo } from ${JSON.stringify(join(REPO, "src/cli/demo.js"))};\n` + TEST_CONFIG.replace("export default defineConfig(", "export default withDemo(defineConfig(").replace(/\}\);\s*$/, '}), { tenantId: "demo", spaceId: "default" });\n');
/** No WRIT_TENANT / WRIT_SPACE: the defaults come from the config. */
const NO_SCOPE_ENV = { WRIT_TENANT: "", WRIT_SPACE: "" };

let ws: ReturnType<typeof workspace>;
beforeAll(() => {
  ws = workspace({ "package.json": JSON.stringify({ name: "app", private: true, writ: { config: "conf/demo.config.ts" } }) });
  mkdirSync(join(ws.dir, "conf"));
  writeFileSync(join(ws.dir, "conf", "demo.config.ts"), DEMO_CONFIG);
});
afterAll(() => ws.cleanup());

function buffers(): { io: { stdout: { write(s: string): boolean }; stderr: { write(s: string): boolean }; stdoutIsTTY: boolean }; out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return {
    io: { stdout: { write: (s) => ((out += s), true) }, stderr: { write: (s) => ((err += s), true) }, stdoutIsTTY: false },
    out: () => out,
    err: () => err,
  };
}

describe("help", () => {
  it("every command, every group and `help <group>` answer --help with exit 0", async () => {
    const groups = [...new Set(COMMANDS.filter((c) => c.name.includes(" ")).map((c) => c.name.split(" ")[0]!))];
    const calls = [["--help"], ["-h"], ["help"], ...COMMANDS.map((c) => [...c.name.split(" "), "--help"]), ...groups.map((g) => [g, "--help"]), ...groups.map((g) => ["help", g])];
    for (const args of calls) {
      const b = buffers();
      const code = await runCli(args, { cwd: ws.dir, env: {}, io: b.io });
      expect(code, `writ ${args.join(" ")}: ${b.err()}`).toBe(0);
      expect(b.out()).toMatch(/^Usage: writ /m);
    }
    expect(groups.sort()).toEqual(["api-keys", "approvals", "authorities", "completions", "journal", "keys", "notifications", "reconcile", "retention"]);
    const b = buffers();
    await runCli(["approvals", "--help"], { cwd: ws.dir, env: {}, io: b.io });
    for (const sub of ["approvals ls", "approvals approve <approval-id>", "approvals deny", "approvals revoke"]) expect(b.out()).toContain(sub);
    // A subcommand that does not exist is still a usage error, --help or not.
    expect(await runCli(["approvals", "nope", "--help"], { cwd: ws.dir, env: {}, io: buffers().io })).toBe(2);
  });
});

describe("where the CLI finds its config and scope", () => {
  it("uses package.json's writ.config and the config's demo scope, and says so when a list is empty", async () => {
    const empty = await writ(ws.dir, ["ls"], { env: NO_SCOPE_ENV });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe("(none)\n");
    expect(empty.stderr).toContain("no invocations in demo/default; scope from the demo section of conf/demo.config.ts; config conf/demo.config.ts (from the writ.config field of package.json)");
    // -q and --json stay clean for scripts.
    const quiet = await writ(ws.dir, ["ls", "-q"], { env: NO_SCOPE_ENV });
    expect([quiet.stdout, quiet.stderr]).toEqual(["", ""]);
    // Flags and the environment still win, and the hint says which was used.
    const byEnv = await writ(ws.dir, ["approvals", "ls"], { env: { WRIT_TENANT: "acme", WRIT_SPACE: "" } });
    expect(byEnv.stderr).toContain("no pending approvals in acme/default; tenant from $WRIT_TENANT, space from the demo section of conf/demo.config.ts");
    const doctor = json<{ configPath: string }>(await writ(ws.dir, ["doctor", "--json"], { env: NO_SCOPE_ENV }));
    expect(doctor.configPath).toBe(join(ws.dir, "conf", "demo.config.ts"));
  });

  it("a package.json naming a missing config is a config error (exit 3)", async () => {
    const other = workspace({ "package.json": JSON.stringify({ writ: { config: "gone.config.ts" } }) });
    try {
      const r = await writ(other.dir, ["ls"]);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain("(field writ.config), which does not exist");
    } finally {
      other.cleanup();
    }
  });
});

describe("what the lists and get show", () => {
  const sub = (key: string, amount: number) => ["submit", "--action", "payments.refund", "--actor", "agent:support-bot", "--authority", "support-bot", "--params", JSON.stringify({ paymentId: key, amount, currency: "EUR" }), "--idempotency-key", key, "--as", "user:bob", "--json"];
  const ids: Record<string, string> = {};

  it("ls shows the reason of a denial; -q --invocation picks one approval among several", async () => {
    expect((await writ(ws.dir, ["authorities", "create", "support-bot", "--principal", "agent:support-bot", "--action", "payments.*", "--as", "user:alice"], { env: NO_SCOPE_ENV })).code).toBe(0);
    for (const [name, amount] of [["big1", 25000], ["big2", 30000], ["huge", 900000]] as const) {
      const r = await writ(ws.dir, sub(name, amount), { env: NO_SCOPE_ENV });
      expect(r.code, r.stderr).toBe(0);
      ids[name] = json<{ invocation: { invocationId: string } }>(r).invocation.invocationId;
    }
    expect((await writ(ws.dir, ["worker", "--once"], { env: NO_SCOPE_ENV })).code).toBe(0);

    const denied = await writ(ws.dir, ["ls", "--status", "denied"], { env: NO_SCOPE_ENV });
    expect(denied.stdout).toMatch(/REASON/);
    const row = denied.stdout.split("\n").find((l) => l.startsWith(ids.huge!));
    expect(row).toMatch(/refund-too-large/);

    const all = await writ(ws.dir, ["approvals", "ls", "-q"], { env: NO_SCOPE_ENV });
    expect(all.stdout.trim().split("\n")).toHaveLength(2);
    const one = await writ(ws.dir, ["approvals", "ls", "-q", "--invocation", ids.big2!], { env: NO_SCOPE_ENV });
    expect(one.stdout).toMatch(/^apr_[^\n]+\n$/);
    const newest = await writ(ws.dir, ["ls", "-q", "--status", "awaiting_approval", "--limit", "1"], { env: NO_SCOPE_ENV });
    expect(newest.stdout).toBe(`${ids.big2}\n`);

    const approved = await writ(ws.dir, ["approvals", "approve", one.stdout.trim(), "--as", "user:carol", "--note", "customer called"], { env: NO_SCOPE_ENV });
    expect(approved.code, approved.stderr).toBe(0);
    const got = await writ(ws.dir, ["get", ids.big2!], { env: NO_SCOPE_ENV });
    expect(got.stdout).toMatch(/approve\s+user:carol\s+\S+\s+-\s+customer called/);
    const gotJson = json<{ approval: { votes: Array<{ approver: { id: string }; note?: string }> } }>(await writ(ws.dir, ["get", ids.big2!, "--json"], { env: NO_SCOPE_ENV }));
    expect(gotJson.approval.votes).toEqual([expect.objectContaining({ approver: { type: "user", id: "carol" }, verdict: "approve", note: "customer called" })]);
  });

  it("journal export writes into the state directory by default, nothing into the working tree", async () => {
    const before = readdirSync(ws.dir).sort();
    const r = await writ(ws.dir, ["journal", "export"], { env: NO_SCOPE_ENV });
    expect(r.code, r.stderr).toBe(0);
    // The state directory is the config's (conf/.writ: relative paths resolve against the config's directory).
    expect(r.stdout).toMatch(/^exported \d+ entries of demo\/default to conf\/\.writ\/exports\/journal-demo-default\.jsonl\n$/);
    expect(readdirSync(ws.dir).sort()).toEqual(before);
    expect(existsSync(join(ws.dir, "conf", ".writ", "exports", "journal-demo-default.jsonl"))).toBe(true);
    const offline = await writ(ws.dir, ["journal", "verify", "--file", "conf/.writ/exports/journal-demo-default.jsonl", "--json"], { env: NO_SCOPE_ENV });
    expect(json<{ ok: boolean }>(offline).ok).toBe(true);
  });
});
