/**
 * writ/client runs wherever fetch does: no file under src/client imports a Node built-in, and the
 * client proper (src/client/index.ts and what it reaches) imports no package at all. Each adapter
 * imports only its own framework (an optional peer) besides the client. Read from the sources with
 * TypeScript's own import scanner (static, re-export, side-effect and dynamic imports).
 */
import { readFileSync, readdirSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO } from "../cli/helpers.js";

const CLIENT = join(REPO, "src/client");

function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName);
}

const isBuiltin = (spec: string): boolean => spec.startsWith("node:") || builtinModules.includes(spec.split("/")[0]!);

/** Every file reachable from `entry` through relative imports, and the packages they import. */
function graph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (files.has(file)) continue;
    files.add(file);
    for (const spec of importsOf(file)) {
      if (spec.startsWith(".")) todo.push(resolve(dirname(file), spec.replace(/\.js$/, ".ts")));
      else packages.add(spec);
    }
  }
  return { files: [...files].map((f) => relative(REPO, f)).sort(), packages: [...packages].sort() };
}

describe("writ/client imports", () => {
  it("no file under src/client imports a Node built-in", () => {
    const files = (readdirSync(CLIENT, { recursive: true }) as string[]).filter((f) => f.endsWith(".ts")).map((f) => join(CLIENT, f));
    expect(files.length).toBeGreaterThan(5);
    const bad = files.flatMap((f) => importsOf(f).filter(isBuiltin).map((s) => `${relative(REPO, f)} imports ${s}`));
    expect(bad).toEqual([]);
    // The check sees a built-in where there is one.
    expect(importsOf(join(REPO, "scripts/client-types.ts")).filter(isBuiltin)).toContain("node:fs");
  });

  it("the client entry reaches no package and stays inside src/client (and core types)", () => {
    const g = graph(join(CLIENT, "index.ts"));
    expect(g.packages).toEqual([]);
    expect(g.files).toEqual(expect.arrayContaining(["src/client/client.ts", "src/client/errors.ts", "src/client/tools.ts"]));
    for (const f of g.files) expect(f.startsWith("src/client/") || f.startsWith("src/core/") || f === "src/mcp/results.ts" || f === "src/mcp/schema.ts", f).toBe(true);
    for (const f of g.files.filter((x) => x.startsWith("src/core/"))) expect(graph(join(REPO, f)).packages, f).toEqual([]);
  });

  it.each([
    ["ai-sdk", ["ai"]],
    ["openai-agents", ["@openai/agents"]],
    ["langchain", ["@langchain/core/tools"]],
  ])("the %s adapter imports only its framework besides the client", (name, framework) => {
    const g = graph(join(CLIENT, "adapters", `${name}.ts`));
    expect(g.packages).toEqual(framework);
  });
});
