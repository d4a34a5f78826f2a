/**
 * The first hour with real MCP clients (issue 25). Clients such as Claude Desktop start `writ mcp`
 * from a directory of their own, with the config given by an absolute path.
 *
 * Invariants checked:
 * - relative paths in a config resolve against the config file's directory: `writ mcp` started
 *   elsewhere serves the config's store, and creates nothing in its working directory;
 * - with no store at all, `writ mcp` says where the store would be and creates nothing; an unknown
 *   key in an empty store says the store is empty and where it is, and never prints the key;
 * - one default space: demo keys cover all the tenant's spaces, and `writ mcp` and `/mcp` still
 *   work without naming one (the config's demo space); the CLI takes the tenant's only space;
 * - the MCP examples run as written: docs/mcp.md's Claude Desktop JSON (its command, args and env,
 *   placeholders filled in) from another working directory, listing tools and calling one;
 *   README's `writ mcp` line; the `/mcp` endpoint with the same key.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, describe, expect, it } from "vitest";
import { BIN, REPO, TEST_CONFIG, childEnv } from "../cli/helpers.js";

const root = mkdtempSync(join(tmpdir(), "writ-mcp-first-hour-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A directory of its own, as an MCP client has. */
function elsewhere(name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A project with TEST_CONFIG (store `.writ/writ.db`, relative) and the repository's node_modules. */
function project(name: string): { dir: string; config: string } {
  const dir = elsewhere(name);
  symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
  writeFileSync(join(dir, "writ.config.ts"), TEST_CONFIG);
  return { dir, config: join(dir, "writ.config.ts") };
}

function writ(cwd: string, args: string[], env: Record<string, string> = {}): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, env: childEnv(env), input: "", encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function stdioClient(command: string, args: string[], env: Record<string, string>, cwd: string): Promise<Client> {
  const client = new Client({ name: "first-hour", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, env: { ...(childEnv() as Record<string, string>), ...env }, cwd, stderr: "ignore" }), { timeout: 60_000 });
  return client;
}

describe("writ mcp started from a directory of its own", () => {
  it("serves the store the config names (relative paths against the config's directory) and creates nothing where it runs", async () => {
    const p = project("app");
    const created = writ(p.dir, ["api-keys", "create", "--tenant", "acme", "--key-space", "prod", "--role", "submit", "--name", "bot", "--principal", "agent:bot"]);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim().split("\n").at(-1)!;
    const cwd = elsewhere("claude-desktop");
    const client = await stdioClient(process.execPath, [BIN, "mcp"], { WRIT_CONFIG: p.config, WRIT_MCP_KEY: key }, cwd);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain("writ_invocation_status");
    } finally {
      await client.close();
    }
    expect(readdirSync(cwd)).toEqual([]);
    // The CLI's default space follows the same rule: the tenant's only space (its key names prod).
    const ls = writ(cwd, ["ls", "--tenant", "acme"], { WRIT_CONFIG: p.config });
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stderr).toContain("(no invocations in acme/prod; tenant from --tenant, space from the tenant's only space");
  }, 120_000);

  it("with no store yet it says where the store would be, exits 4 and creates nothing", () => {
    const p = project("fresh");
    const cwd = elsewhere("client-fresh");
    const r = writ(cwd, ["mcp"], { WRIT_CONFIG: p.config, WRIT_MCP_KEY: "writ_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBB" });
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(join(p.dir, ".writ", "writ.db"));
    expect(r.stderr).not.toContain("BBBBBBBB");
    expect(r.stdout).toBe("");
    expect(existsSync(join(p.dir, ".writ", "writ.db"))).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);
  }, 60_000);

  it("an unknown key in an empty store says the store is empty and where it is, without the key", () => {
    const p = project("empty");
    expect(writ(p.dir, ["migrate"]).code).toBe(0);
    const secret = "writ_AAAAAAAAAAAA_SECRETSECRETSECRETSECRETSE";
    const r = writ(elsewhere("client-empty"), ["mcp"], { WRIT_CONFIG: p.config, WRIT_MCP_KEY: secret });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not valid");
    expect(r.stderr).toContain("the store is empty");
    expect(r.stderr).toContain(join(p.dir, ".writ", "writ.db"));
    expect(r.stderr).not.toContain("SECRET");
  }, 60_000);

  it("writ ls in a directory without a store lists nothing and creates no state directory", () => {
    const p = project("readonly");
    const r = writ(p.dir, ["ls", "--tenant", "acme", "--space", "prod"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("no store yet");
    expect(existsSync(join(p.dir, ".writ", "writ.db"))).toBe(false);
    expect(existsSync(join(p.dir, ".writ", "keys"))).toBe(false);
  }, 60_000);

  // Invariant: every listing command only reads: where no store exists yet each answers an empty
  // list (exit 0, saying no store exists yet) and creates neither the store nor a key.
  it("the other listing commands create nothing either", () => {
    const p = project("readonly-lists");
    for (const cmd of [["approvals", "ls"], ["reconcile", "ls"], ["authorities", "ls"], ["api-keys", "ls"], ["journal", "ls"]]) {
      const r = writ(p.dir, [...cmd, "--tenant", "acme", "--space", "prod"]);
      expect(r.code, `${cmd.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stderr, cmd.join(" ")).toContain("no store yet");
      // (.writ/cache may hold the compiled config: a cache, not state.)
      expect(existsSync(join(p.dir, ".writ", "writ.db")), cmd.join(" ")).toBe(false);
      expect(existsSync(join(p.dir, ".writ", "keys")), cmd.join(" ")).toBe(false);
    }
  }, 120_000);
});

/** The demo (examples/writ.config.ts) bootstrapped by `writ serve`, its state in a directory of its own. */
async function demoServe(state: string): Promise<{ url: string; agentKey: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [BIN, "serve", "--config", join(REPO, "examples", "writ.config.ts"), "--port", "0", "--json", "--quiet"], { cwd: elsewhere("serve"), env: childEnv({ WRIT_DEMO_DIR: state }) });
  let out = "";
  const banner = await new Promise<{ url: string; demo: { agentKey: string } }>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 60_000);
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      try {
        resolve(JSON.parse(out) as { url: string; demo: { agentKey: string } });
        clearTimeout(t);
      } catch {
        // not complete yet
      }
    });
  });
  const exited = new Promise((r) => child.on("close", r));
  return { url: banner.url, agentKey: banner.demo.agentKey, stop: async () => void (child.kill("SIGTERM"), await exited) };
}

describe("the MCP examples of the docs, as written", () => {
  it("docs/mcp.md's Claude Desktop config and the /mcp endpoint work with the demo's agent key, naming no space", async () => {
    const state = join(root, "demo-state");
    const served = await demoServe(state);
    try {
      // The Claude Desktop JSON of docs/mcp.md, parsed as written.
      const doc = readFileSync(join(REPO, "docs", "mcp.md"), "utf8");
      const block = /Claude Desktop \(`claude_desktop_config\.json`\)[\s\S]*?```json\n([\s\S]*?)\n```/.exec(doc);
      expect(block, "docs/mcp.md has the Claude Desktop JSON").not.toBeNull();
      const server = (JSON.parse(block![1]!) as { mcpServers: { writ: { command: string; args: string[]; env: Record<string, string> } } }).mcpServers.writ;
      // The placeholders, filled in as a user would: the installed writ binary, the config, the key.
      const fill = (s: string): string =>
        s.replace("/path/to/project/node_modules/.bin/writ", BIN).replace("/path/to/writ.config.ts", join(REPO, "examples", "writ.config.ts")).replace("writ_...", served.agentKey);
      const command = fill(server.command);
      expect(command).toBe(BIN);
      const client = await stdioClient(process.execPath, [command, ...server.args.map(fill)], { ...Object.fromEntries(Object.entries(server.env).map(([k, v]) => [k, fill(v)])), WRIT_DEMO_DIR: state }, elsewhere("claude-home"));
      try {
        const tools = (await client.listTools()).tools.map((t) => t.name);
        expect(tools).toEqual(expect.arrayContaining(["payments.refund", "messages.send", "writ_invocation_status"]));
        const r = (await client.callTool({ name: "payments.refund", arguments: { paymentId: "pay_mcp_1", amount: 1200, currency: "EUR" } }, undefined, { timeout: 60_000 })) as { structuredContent?: { status: string } };
        expect(r.structuredContent?.status).toBe("succeeded");
      } finally {
        await client.close();
      }
      // README's stdio line, run as written in a project whose writ.config.ts is the demo's.
      const readme = readFileSync(join(REPO, "README.md"), "utf8");
      const line = /^WRIT_MCP_KEY=writ_\.\.\. writ (mcp [^#\n]*?)\s*#/m.exec(readme);
      expect(line, "README.md has the writ mcp line").not.toBeNull();
      const app = elsewhere("readme-app");
      writeFileSync(join(app, "writ.config.ts"), `export { default } from ${JSON.stringify(join(REPO, "examples", "writ.config.ts"))};\n`);
      const readmeClient = await stdioClient(process.execPath, [BIN, ...line![1]!.split(/\s+/)], { WRIT_MCP_KEY: served.agentKey, WRIT_DEMO_DIR: state }, app);
      try {
        expect((await readmeClient.listTools()).tools.map((t) => t.name)).toContain("payments.refund");
      } finally {
        await readmeClient.close();
      }
      // The /mcp endpoint of README's and docs/mcp.md's HTTP examples: the same key, no space named.
      const http = new Client({ name: "first-hour-http", version: "1.0.0" });
      await http.connect(new StreamableHTTPClientTransport(new URL(`${served.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${served.agentKey}` } } }));
      try {
        expect((await http.listTools()).tools.map((t) => t.name)).toContain("payments.refund");
      } finally {
        await http.close();
      }
    } finally {
      await served.stop();
    }
  }, 180_000);
});
