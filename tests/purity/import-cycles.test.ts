/**
 * No runtime import cycles anywhere in src/ (the core, the host, the stores, the server, the CLI, …):
 * a module that needs another's function imports it one way only. Type-only imports are erased
 * at runtime and do not count. The graph is read from the sources (static `import … from` and
 * `export … from`; a folder's `index.ts` counts like any module).
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(__dirname, "../../src");

/** Runtime (non type-only) relative imports of every .ts file under `dirs`, as a graph of paths. */
function graph(dirs: string[]): Map<string, string[]> {
  const g = new Map<string, string[]>();
  const files = dirs.flatMap((d) => fs.readdirSync(path.join(ROOT, d)).filter((f) => f.endsWith(".ts")).map((f) => path.join(ROOT, d, f)));
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    const deps: string[] = [];
    for (const m of text.matchAll(/^import\s+(type\s+)?([^;]*?)\s+from\s+"(\.[^"]+)";/gms)) {
      if (m[1] !== undefined) continue; // `import type`
      const names = m[2]!;
      // `import { type A, type B }` is erased too.
      if (/^\{[^}]*\}$/s.test(names) && names.slice(1, -1).split(",").every((n) => n.trim() === "" || n.trim().startsWith("type "))) continue;
      deps.push(path.resolve(path.dirname(file), m[3]!.replace(/\.js$/, ".ts")));
    }
    // Re-exports load their module too (`export { a } from`, `export * from`), unless type-only.
    for (const m of text.matchAll(/^export\s+(type\s+)?(\*(?:\s+as\s+\w+)?|\{[^}]*\})\s+from\s+"(\.[^"]+)";/gms)) {
      if (m[1] !== undefined) continue;
      const names = m[2]!;
      if (names.startsWith("{") && names.slice(1, -1).split(",").every((n) => n.trim() === "" || n.trim().startsWith("type "))) continue;
      deps.push(path.resolve(path.dirname(file), m[3]!.replace(/\.js$/, ".ts")));
    }
    g.set(file, deps.filter((d) => files.includes(d)));
  }
  return g;
}

/** Every folder under src/ (relative to it) that holds .ts files, src/ itself included. */
function allDirs(rel = ""): string[] {
  const here = path.join(ROOT, rel);
  const entries = fs.readdirSync(here, { withFileTypes: true });
  const out = entries.some((e) => e.isFile() && e.name.endsWith(".ts")) ? [rel] : [];
  for (const e of entries) if (e.isDirectory()) out.push(...allDirs(path.join(rel, e.name)));
  return out;
}

function cycles(g: Map<string, string[]>): string[][] {
  const out: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, "open");
    stack.push(n);
    for (const d of g.get(n) ?? []) {
      if (state.get(d) === "open") out.push([...stack.slice(stack.indexOf(d)), d].map((f) => path.relative(ROOT, f)));
      else if (state.get(d) === undefined) visit(d);
    }
    stack.pop();
    state.set(n, "done");
  };
  for (const n of g.keys()) if (state.get(n) === undefined) visit(n);
  return out;
}

describe("import cycles", () => {
  it("src/ has no runtime import cycle, across all of its folders", () => {
    const dirs = allDirs();
    expect(dirs).toEqual(expect.arrayContaining(["core", "host", "stores/postgres", "server", "cli"]));
    expect(cycles(graph(dirs))).toEqual([]);
  });

  it("the detector finds a cycle when there is one", () => {
    const a = path.join(ROOT, "x/a.ts");
    const b = path.join(ROOT, "x/b.ts");
    expect(cycles(new Map([[a, [b]], [b, [a]]]))).toEqual([["x/a.ts", "x/b.ts", "x/a.ts"]]);
  });
});
