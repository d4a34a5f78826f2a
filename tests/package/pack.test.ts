/**
 * The package as a user gets it: `npm pack` (the `prepare` script builds dist/ first), the tarball
 * installed into a fresh temporary project (offline from the npm cache where it can, install
 * scripts off), the README's
 * library quickstart run there with plain node, and `npx writ --help` answering from the compiled
 * CLI. Slow (a build and an install): about a minute.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO } from "../cli/helpers.js";

const TIMEOUT = 600_000;
let dir: string;
let project: string;
let tarball: string;

/** The README's library quickstart: the first ```js block under "## Using it". */
export function readmeQuickstart(readme: string): string {
  const section = readme.split(/^## /m).find((s) => s.startsWith("Using it"));
  const code = section ? /```js\n([\s\S]*?)```/.exec(section)?.[1] : undefined;
  if (!code) throw new Error('README.md has no ```js block under "## Using it"');
  return code;
}

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false" } });
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "writ-pack-"));
  const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", dir], REPO)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(dir, packed[0]!.filename);
  project = join(dir, "app");
  run("mkdir", ["-p", project], dir);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "writ-pack-test", private: true, type: "module" }, null, 2));
  // --ignore-scripts: better-sqlite3's install would compile its addon from source where no
  // prebuilt binary can be fetched (minutes); nothing here opens a SQLite database, and the addon
  // is loaded only when one is opened.
  run("npm", ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", tarball], project);
}, TIMEOUT);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the packed package", () => {
  it("ships the compiled library and CLI (JS, declarations, source maps) and no benchmark", () => {
    const installed = join(project, "node_modules", "writ");
    const dist = readdirSync(join(installed, "dist"));
    expect(dist).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "index.js.map", "cli"]));
    expect(readdirSync(join(installed, "dist", "cli"))).toEqual(expect.arrayContaining(["main.js", "main.d.ts", "main.js.map"]));
    expect(readdirSync(installed)).not.toContain("bench");
    // Only what Writ needs is installed with it: no benchmark-only dependency, and no tsx (the
    // installed CLI runs dist/; tsx only runs a checkout's edited sources).
    const modules = readdirSync(join(project, "node_modules"));
    for (const devOnly of ["graphile-worker", "autocannon", "postgres", "tsx"]) expect(modules).not.toContain(devOnly);
  });

  it("runs the README's library quickstart with plain node", () => {
    writeFileSync(join(project, "quickstart.mjs"), readmeQuickstart(readFileSync(join(REPO, "README.md"), "utf8")));
    const out = run(process.execPath, ["quickstart.mjs"], project);
    expect(out).toMatch(/^SUCCEEDED re_/m);
  }, TIMEOUT);

  it("every subpath entry imports by its package name, with the names it documents", () => {
    const expected: Record<string, string[]> = {
      writ: ["createBoundary", "createHost", "sqliteStore", "postgresStore", "cedarPolicy", "defineConfig"],
      "writ/core": ["createBoundaryCore", "memoryStore", "signDecisionWith", "appendJournal", "WritError"],
      "writ/sqlite": ["sqliteStore", "SQLITE_SCHEMA_VERSION"],
      "writ/postgres": ["postgresStore", "POSTGRES_SCHEMA_VERSION"],
      "writ/cedar": ["cedarPolicy", "prepareCedarPolicySet"],
      "writ/host": ["createHost", "createHostCore", "versionedCedarPolicy"],
      "writ/server": ["createApp", "startServer", "openRuntime"],
      "writ/node": ["nodeCryptoPort", "systemClock", "systemRandom", "defaultPorts"],
      "writ/client": ["createClient", "WritApiError", "isWritApiError", "governedTools"],
    };
    const script = `const want = ${JSON.stringify(expected)};
const missing = [];
for (const [entry, names] of Object.entries(want)) {
  const m = await import(entry);
  for (const n of names) if (typeof m[n] === "undefined") missing.push(entry + " " + n);
}
console.log(JSON.stringify(missing));`;
    writeFileSync(join(project, "entries.mjs"), script);
    expect(JSON.parse(run(process.execPath, ["entries.mjs"], project))).toEqual([]);
  }, TIMEOUT);

  it("ships the client and the adapters; writ/client imports without the optional peers, an adapter names the peer it lacks", () => {
    const client = readdirSync(join(project, "node_modules", "writ", "dist", "client"));
    expect(client).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "openapi.d.ts", "adapters"]));
    expect(readdirSync(join(project, "node_modules", "writ", "dist", "client", "adapters"))).toEqual(expect.arrayContaining(["ai-sdk.js", "openai-agents.js", "langchain.js", "ai-sdk.d.ts"]));
    // Optional peers are not installed with writ.
    const modules = readdirSync(join(project, "node_modules"));
    for (const peer of ["ai", "@openai", "@langchain"]) expect(modules).not.toContain(peer);
    const script = `const c = await import("writ/client");
const client = c.createClient({ baseUrl: "http://127.0.0.1:1", apiKey: "writ_x_y", retry: { retries: 0 } });
const out = { client: typeof client.invocations.wait, adapters: {} };
for (const a of ["writ/ai-sdk", "writ/openai-agents", "writ/langchain"]) {
  try { await import(a); out.adapters[a] = "loaded"; } catch (e) { out.adapters[a] = e.code + " " + String(e.message).split("\\n")[0]; }
}
console.log(JSON.stringify(out));`;
    writeFileSync(join(project, "client.mjs"), script);
    const out = JSON.parse(run(process.execPath, ["client.mjs"], project)) as { client: string; adapters: Record<string, string> };
    expect(out.client).toBe("function");
    expect(out.adapters["writ/ai-sdk"]).toMatch(/^ERR_MODULE_NOT_FOUND .*'ai'/);
    expect(out.adapters["writ/openai-agents"]).toMatch(/^ERR_MODULE_NOT_FOUND .*'@openai\/agents'/);
    expect(out.adapters["writ/langchain"]).toMatch(/^ERR_MODULE_NOT_FOUND .*'@langchain\/core'/);
  }, TIMEOUT);

  it("`npx writ --help` answers from the compiled CLI, exit 0", () => {
    const out = run("npx", ["--no-install", "writ", "--help"], project);
    expect(out).toContain("Usage: writ <command> [flags]");
    expect(out).toContain("approvals approve");
    // The bin picks the compiled entry (dist/), not the sources through tsx.
    const which = run(process.execPath, ["--input-type=module", "-e", "const { builtCli } = await import('./node_modules/writ/bin/built.js'); console.log(String(builtCli().entry))"], project);
    expect(which.trim()).toMatch(/\/node_modules\/writ\/dist\/cli\/main\.js$/);
  }, TIMEOUT);
});
