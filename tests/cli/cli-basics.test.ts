/**
 * The real `writ` binary: usage errors (exit 2, no stack), config errors (3), an unreachable store
 * (4), signing keys on disk, migrate, and doctor on a healthy and on broken setups.
 */
import { chmodSync, existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TEST_CONFIG, json, workspace, writ } from "./helpers.js";

let ws: ReturnType<typeof workspace>;
beforeAll(() => {
  ws = workspace({ "writ.config.ts": TEST_CONFIG, "bad.json": '{"action": "payments.refund",', "broken.config.ts": "export default defineConfig({ actions: [] );\n" });
});
afterAll(() => ws.cleanup());

function noStack(stderr: string): void {
  expect(stderr).not.toMatch(/\n\s+at .+:\d+:\d+/);
}

describe("usage errors exit 2 with a message naming the problem", () => {
  it("unknown command, unknown flag, missing argument, bad JSON file, missing subcommand", async () => {
    const [cmd, flag, arg, file, sub, value] = await Promise.all([
      writ(ws.dir, ["frobnicate"]),
      writ(ws.dir, ["ls", "--bogus"]),
      writ(ws.dir, ["get"]),
      writ(ws.dir, ["submit", "--file", "bad.json"]),
      writ(ws.dir, ["approvals"]),
      writ(ws.dir, ["ls", "--status", "sleeping"]),
    ]);
    expect([cmd.code, flag.code, arg.code, file.code, sub.code, value.code]).toEqual([2, 2, 2, 2, 2, 2]);
    expect(cmd.stderr).toContain("unknown command `writ frobnicate`");
    expect(flag.stderr).toContain("unknown option --bogus");
    expect(arg.stderr).toContain("`writ get` needs <invocation-id>");
    expect(file.stderr).toContain("--file bad.json is not valid JSON");
    expect(sub.stderr).toContain("needs a subcommand: ls, approve, deny, revoke");
    expect(value.stderr).toContain("--status must be one of");
    for (const r of [cmd, flag, arg, file, sub, value]) {
      noStack(r.stderr);
      expect(r.stdout).toBe("");
    }
  });

  it("--json errors are one JSON object on stderr with a stable code", async () => {
    const r = await writ(ws.dir, ["--json", "get"]);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stderr)).toEqual({ error: { code: "USAGE", message: expect.stringContaining("needs <invocation-id>"), exitCode: 2 } });
  });
});

describe("config errors exit 3", () => {
  it("a missing config file and a config that does not compile are named", async () => {
    const [missing, broken] = await Promise.all([writ(ws.dir, ["ls", "--config", "nope.config.ts"]), writ(ws.dir, ["ls", "--config", "broken.config.ts"])]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain("config file nope.config.ts does not exist");
    expect(broken.code).toBe(3);
    expect(broken.stderr).toContain("broken.config.ts failed to load");
    noStack(missing.stderr);
  });
});

describe("keys, migrate and doctor", () => {
  it("doctor names what is missing before setup, then passes after keys generate and migrate", async () => {
    const before = await writ(ws.dir, ["doctor", "--json"]);
    expect(before.code).toBe(1);
    const report = json<{ checks: Array<{ name: string; status: string; fix?: string }> }>(before);
    const byName = Object.fromEntries(report.checks.map((c) => [c.name, c]));
    expect(byName.config!.status).toBe("ok");
    expect(byName.policy!.status).toBe("ok");
    expect(byName.connectors!.status).toBe("ok");
    expect(byName.keys).toMatchObject({ status: "problem", fix: expect.stringContaining("writ keys generate") });
    expect(byName.store).toMatchObject({ status: "problem", fix: expect.stringContaining("writ migrate") });
    // doctor changes nothing: no database was created
    expect(existsSync(join(ws.dir, ".writ", "writ.db"))).toBe(false);

    const g1 = await writ(ws.dir, ["keys", "generate", "--kid", "k1", "--json"]);
    expect(g1.code).toBe(0);
    expect(json<{ key: { kid: string; status: string } }>(g1).key).toMatchObject({ kid: "k1", status: "active" });
    expect(statSync(join(ws.dir, ".writ", "keys", "k1.private.json")).mode & 0o777).toBe(0o600);
    const g2 = await writ(ws.dir, ["keys", "generate", "--kid", "k2"]);
    expect(g2.code).toBe(0);
    expect(g2.stdout).toContain("generated key k2");
    const dup = await writ(ws.dir, ["keys", "generate", "--kid", "k2"]);
    expect(dup.code).toBe(3);
    expect(dup.stderr).toContain("a key k2 already exists");

    const ls = json<{ items: Array<{ kid: string; status: string; privateFile: { mode: string } | null }> }>(await writ(ws.dir, ["keys", "ls", "--json"]));
    expect(ls.items.map((k) => [k.kid, k.status, k.privateFile?.mode])).toEqual([
      ["k1", "retired", "0600"],
      ["k2", "active", "0600"],
    ]);
    const revoked = await writ(ws.dir, ["keys", "revoke", "k1"]);
    expect(revoked.code).toBe(0);
    expect(existsSync(join(ws.dir, ".writ", "keys", "k1.private.json"))).toBe(false);
    const quiet = await writ(ws.dir, ["keys", "ls", "-q"]);
    expect(quiet.stdout).toBe("k1\nk2\n");
    const unknown = await writ(ws.dir, ["keys", "revoke", "k9"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no key k9");

    const m = await writ(ws.dir, ["migrate", "--json"]);
    expect(m.code).toBe(0);
    expect(json(m)).toMatchObject({ store: "sqlite", schemaVersion: expect.any(Number) });

    const healthy = await writ(ws.dir, ["doctor"]);
    expect(healthy.code).toBe(0);
    expect(healthy.stdout).toContain("all checks passed");

    // A private key others can read is a problem doctor names, with the fix.
    chmodSync(join(ws.dir, ".writ", "keys", "k2.private.json"), 0o644);
    const loose = await writ(ws.dir, ["doctor"]);
    expect(loose.code).toBe(1);
    expect(loose.stdout).toMatch(/FAIL\s+keys\s+the private key .*k2\.private\.json is readable by others \(mode 0644\)/);
    expect(loose.stdout).toContain("fix: chmod 600");
    chmodSync(join(ws.dir, ".writ", "keys", "k2.private.json"), 0o600);
  });

  it("doctor on broken configs: a step without its connector operation, a policy that does not parse, a config that does not load", async () => {
    const missingOp = TEST_CONFIG.replace('operation: "refund"', 'operation: "refnud"');
    const badPolicy = TEST_CONFIG.replace(/policy: \{ cedar: \{ policies: [^}]+\} \}/, 'policy: { cedar: { policies: "permit (principal, action, resource" } }');
    expect(badPolicy).not.toBe(TEST_CONFIG);
    writeFileSync(join(ws.dir, "missing-op.config.ts"), missingOp);
    writeFileSync(join(ws.dir, "bad-policy.config.ts"), badPolicy);
    const [op, pol, load] = await Promise.all([
      writ(ws.dir, ["doctor", "--config", "missing-op.config.ts"]),
      writ(ws.dir, ["doctor", "--config", "bad-policy.config.ts", "--json"]),
      writ(ws.dir, ["doctor", "--config", "broken.config.ts"]),
    ]);
    expect(op.code).toBe(1);
    expect(op.stdout).toContain("action payments.refund step refund calls demo-payments.refnud, but connector demo-payments has no operation refnud");
    expect(pol.code).toBe(1);
    const polReport = json<{ checks: Array<{ name: string; status: string; detail: string }> }>(pol);
    expect(polReport.checks.find((c) => c.name === "policy")).toMatchObject({ status: "problem", detail: expect.stringContaining("does not parse") });
    expect(load.code).toBe(3);
    expect(load.stdout).toMatch(/FAIL\s+config\s+config .*broken\.config\.ts failed to load/);
  });

  it("an unreachable store exits 4", async () => {
    writeFileSync(join(ws.dir, "blocked"), "a file where the database directory should be\n");
    writeFileSync(join(ws.dir, "unreachable.config.ts"), TEST_CONFIG.replace('path: ".writ/writ.db"', 'path: "blocked/writ.db"'));
    const [ls, migrate, doctor] = await Promise.all([
      writ(ws.dir, ["ls", "--config", "unreachable.config.ts"]),
      writ(ws.dir, ["migrate", "--config", "unreachable.config.ts"]),
      writ(ws.dir, ["doctor", "--config", "unreachable.config.ts"]),
    ]);
    expect(ls.code).toBe(4);
    expect(ls.stderr).toContain("cannot open sqlite database");
    noStack(ls.stderr);
    expect(migrate.code).toBe(4);
    expect(doctor.code).toBe(4);
    expect(doctor.stdout).toMatch(/FAIL\s+store\s+the sqlite database .*blocked\/writ\.db cannot be created: .*blocked is not a directory/);
  });
});
