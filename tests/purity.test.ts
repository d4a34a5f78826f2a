/**
 * Core purity (SPEC section 1), enforced by a test: `src/core` imports nothing outside itself (or a
 * reviewed package allowlist) and uses none of the ambient globals that read time or entropy,
 * schedule timers or do I/O. The checker itself is in `tests/purity/check-purity.ts`; the
 * fixtures under `tests/fixtures/impure-core/` prove it catches what it claims to.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkCorePurity, formatViolation, type PurityReport } from "./purity/check-purity.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fixtures = path.join(repo, "tests/fixtures/impure-core");

describe("core purity: src/core", () => {
  it("imports nothing outside the core and uses no banned ambient globals", { timeout: 5_000 }, () => {
    const report = checkCorePurity(path.join(repo, "src/core"));
    expect(report.files.length).toBeGreaterThan(0);
    const lines = report.violations.map((v) => formatViolation(v, repo));
    expect(lines, `src/core is not pure:\n${lines.join("\n")}`).toEqual([]);
  });
});

/** Sorts by line number: `  12 global:fetch`. */
const key = (line: number, rule: string): string => `${String(line).padStart(4)} ${rule}`;

/** `line rule` pairs a fixture declares with trailing `// expect: rule[, rule...]` comments. */
function expectedOf(file: string): string[] {
  const out: string[] = [];
  fs.readFileSync(file, "utf8")
    .split("\n")
    .forEach((text, i) => {
      const m = /\/\/ expect: (.+)$/.exec(text);
      if (m) for (const rule of m[1]!.split(",")) out.push(key(i + 1, rule.trim()));
    });
  return out.sort();
}

function actualOf(report: PurityReport, file: string): string[] {
  return report.violations
    .filter((v) => v.file === file)
    .map((v) => key(v.line, v.rule))
    .sort();
}

describe("core purity: the checker on tests/fixtures/impure-core", () => {
  const report = checkCorePurity(fixtures);
  const fixtureFiles = (fs.readdirSync(fixtures, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts"))
    .map((f) => fs.realpathSync(path.join(fixtures, f)))
    .sort();
  const isClean = (f: string): boolean => path.relative(fixtures, f).startsWith(`clean${path.sep}`);

  it("checks every fixture file and reports only inside the root", () => {
    expect(report.files).toEqual(fixtureFiles);
    for (const v of report.violations) expect(fixtureFiles).toContain(v.file);
  });

  it.each(fixtureFiles.map((f) => [path.relative(fixtures, f), f]))("%s: exactly the expected violations", (_name, file) => {
    const expected = expectedOf(file);
    if (isClean(file)) expect(expected, "clean fixtures expect nothing").toEqual([]);
    else expect(expected.length, "an impure fixture must name the rule it expects").toBeGreaterThan(0);
    const detail = report.violations.filter((v) => v.file === file).map((v) => formatViolation(v, fixtures));
    expect(actualOf(report, file), detail.join("\n")).toEqual(expected);
  });

  it("covers every violation kind SPEC section 1 names", () => {
    const declared = new Set(fixtureFiles.flatMap(expectedOf).map((e) => e.trimStart().slice(e.trimStart().indexOf(" ") + 1)));
    const required = [
      "import:node-builtin", // static node: import, dynamic import("node:fs")
      "import:package", // bare package not on the allowlist
      "import:outside-core", // relative import and re-export escaping the root
      "import:non-literal", // dynamic import of a non-literal
      "import:unresolved",
      "global:require",
      "global:Date.now",
      "global:new Date()",
      "global:Date()",
      "global:performance",
      "global:setTimeout",
      "global:Math.random",
      "global:process",
      "global:Buffer",
      "global:crypto",
      "global:fetch",
      "global:globalThis",
      "global:eval",
      "global:Function",
    ];
    expect(required.filter((r) => !declared.has(r))).toEqual([]);
  });

  it("lets allowlisted packages (and their subpaths) through, type-only or not", () => {
    const allowed = checkCorePurity(fixtures, { allowedPackages: new Set(["pino", "@scope/pkg"]) });
    const bare = path.join(fixtures, "bare-package.ts");
    // Only the `#internal/x` subpath import remains: it is not a package name.
    expect(actualOf(allowed, bare)).toEqual([key(5, "import:package")]);
  });
});

describe("core purity: the checker's file walk", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "writ-purity-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("skips *.test.ts files unless core code imports them", () => {
    fs.writeFileSync(path.join(dir, "a.ts"), 'import { x } from "./b.test.js";\nexport const y = x;\n');
    fs.writeFileSync(path.join(dir, "b.test.ts"), "export const x = Date.now();\n");
    fs.writeFileSync(path.join(dir, "c.test.ts"), "setTimeout(() => undefined, 1);\n");
    const report = checkCorePurity(dir);
    const real = fs.realpathSync(dir);
    expect(report.files).toEqual([path.join(real, "a.ts"), path.join(real, "b.test.ts")]);
    expect(report.violations.map((v) => `${path.basename(v.file)}:${v.line} ${v.rule}`)).toEqual(["b.test.ts:1 global:Date.now"]);
  });
});
