/**
 * The package's entries (package.json "exports"), on the compiled dist/ (`npm run build` first):
 * - `writ/core` reaches no Node built-in and no package: its whole static and dynamic import graph,
 *   read from the compiled files, stays among relative files of dist/;
 * - no public entry re-exports with `export *`;
 * - `import "writ"` (a fresh process) loads none of better-sqlite3, pg, cedar-wasm; opening a SQLite
 *   store then loads better-sqlite3 (so the check sees a driver when one is loaded);
 * - drivers are injected: a store built with an injected driver calls it, not the default.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { REPO } from "../cli/helpers.js";

const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { exports: Record<string, { import: string; types: string } | string> };
const entries = Object.entries(pkg.exports).filter((e): e is [string, { import: string; types: string }] => typeof e[1] === "object");

function built(rel: string): string {
  const p = join(REPO, rel);
  if (!existsSync(p)) throw new Error(`${rel} is missing: run \`npm run build\` first`);
  return p;
}

/** Every specifier a compiled module imports (static, re-export, side-effect, dynamic with a literal), outside doc comments. */
function specifiers(source: string): string[] {
  const out: string[] = [];
  // Doc comments are kept in dist/ and hold examples (`import { createClient } from "writ/client"`): not imports.
  const code = source.replace(/\/\*\*[\s\S]*?\*\//g, "");
  for (const m of code.matchAll(/(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)|\brequire\(\s*["']([^"']+)["']\s*\)|\bimport\(\s*([^"'\s)][^)]*)\)/gm)) {
    out.push(m[1] ?? m[2] ?? m[3] ?? m[4] ?? `<non-literal ${m[5]}>`);
  }
  return out;
}

/** The import graph from `entry`: each file and what leaves dist/ (built-ins, packages, non-literals). */
function graph(entry: string): { files: Set<string>; outside: string[] } {
  const files = new Set<string>();
  const outside: string[] = [];
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of specifiers(readFileSync(file, "utf8"))) {
      if (spec.startsWith("./") || spec.startsWith("../")) todo.push(resolve(dirname(file), spec));
      else outside.push(`${file.slice(REPO.length + 1)} imports ${spec}`);
    }
  }
  return { files, outside };
}

describe("package entries", () => {
  it("every subpath entry the brief names exists with types, and compiled", () => {
    expect(entries.map(([k]) => k).sort()).toEqual([".", "./ai-sdk", "./cedar", "./client", "./core", "./host", "./langchain", "./node", "./openai-agents", "./postgres", "./server", "./sqlite"]);
    for (const [, e] of entries) {
      built(e.import);
      built(e.types);
    }
  });

  it("writ/core loads no Node built-in and no package (its compiled import graph stays inside dist/)", () => {
    const { files, outside } = graph(built((pkg.exports["./core"] as { import: string }).import));
    expect(outside).toEqual([]);
    // The graph is the real one: the boundary, the journal and the memory store are in it.
    const names = [...files].map((f) => f.slice(REPO.length + 1));
    expect(names).toEqual(expect.arrayContaining(["dist/core/boundary.js", "dist/core/journal.js", "dist/stores/memory/memory-store.js"]));
    // And the check sees an import that leaves: the root entry's graph reaches node:crypto.
    expect(graph(built("dist/index.js")).outside.some((o) => o.endsWith("imports node:crypto"))).toBe(true);
  });

  it("writ/client loads no Node built-in and no package; each adapter only its framework (compiled import graphs)", () => {
    const client = graph(built((pkg.exports["./client"] as { import: string }).import));
    expect(client.outside).toEqual([]);
    expect([...client.files].map((f) => f.slice(REPO.length + 1))).toEqual(expect.arrayContaining(["dist/client/client.js", "dist/client/tools.js"]));
    for (const [entry, peer] of [["./ai-sdk", "ai"], ["./openai-agents", "@openai/agents"], ["./langchain", "@langchain/core/tools"]] as const) {
      const g = graph(built((pkg.exports[entry] as { import: string }).import));
      expect(g.outside.map((o) => o.replace(/^.* imports /, "")), entry).toEqual([peer]);
    }
  });

  it("no public entry re-exports with export *", () => {
    for (const [name, e] of entries) {
      const source = e.import.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts");
      expect(readFileSync(join(REPO, source), "utf8"), `${name} (${source})`).not.toMatch(/^export \*|^export type \*/m);
    }
  });

  it("import \"writ\" loads no driver; opening a SQLite store loads better-sqlite3", () => {
    const script = `
      import { createRequire } from "node:module";
      const cache = createRequire(import.meta.url).cache;
      const loaded = () => Object.keys(cache).filter((k) => /node_modules\\/(better-sqlite3|pg|@cedar-policy\\/cedar-wasm)\\//.test(k)).map((k) => k.match(/node_modules\\/((@[^/]+\\/)?[^/]+)/)[1]);
      const writ = await import(${JSON.stringify(join(REPO, "dist/index.js"))});
      const before = [...new Set(loaded())];
      const store = writ.sqliteStore({ path: ":memory:" });
      await store.close();
      console.log(JSON.stringify({ before, after: [...new Set(loaded())] }));`;
    const out = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: REPO, encoding: "utf8" })) as { before: string[]; after: string[] };
    expect(out.before).toEqual([]);
    expect(out.after).toEqual(["better-sqlite3"]);
  });
});

describe("injected drivers", () => {
  it("sqliteStore({ driver }) opens its connections through the driver given", async () => {
    const opened: string[] = [];
    const driver = class extends Database {
      constructor(path: string, options?: Database.Options) {
        super(path, options);
        opened.push(path);
      }
    };
    const store = sqliteStore({ path: ":memory:", driver });
    await store.migrate();
    expect(await store.schemaVersion()).toBeGreaterThan(0);
    await store.close();
    expect(opened).toEqual([":memory:"]);
    // better-sqlite3's own constructor fits the declared slice as it is.
    const plain = sqliteStore({ path: ":memory:", driver: Database });
    await plain.close();
    expect(() => sqliteStore({ path: ":memory:", driver: "better-sqlite3" as never })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });

  it("postgresStore({ url, pg }) builds its pool with the driver given", async () => {
    const configs: unknown[] = [];
    class Pool {
      constructor(config: unknown) {
        configs.push(config);
      }
      connect(): Promise<never> {
        return Promise.reject(new Error("injected pool: no database"));
      }
      end(): Promise<void> {
        return Promise.resolve();
      }
      on(): this {
        return this;
      }
    }
    const store = postgresStore({ url: "postgres://u@127.0.0.1:1/db", pg: { Pool } }, { autoMigrate: false });
    await expect(store.transact(async () => 1)).rejects.toThrow(/injected pool: no database/);
    await store.close();
    expect(configs).toEqual([expect.objectContaining({ connectionString: "postgres://u@127.0.0.1:1/db", max: 10 })]);
    // The pg module fits the declared slice.
    const typed = postgresStore({ url: "postgres://u@127.0.0.1:1/db", pg });
    await typed.close();
    expect(() => postgresStore({ url: "postgres://u@127.0.0.1:1/db", pg: { Pool: 1 } as never })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
  });
});
