/**
 * Code comments and the docs cite docs/ in this repository, never SPEC section numbers (a document
 * a reader of the package cannot open): no "SPEC 3.1" / "SPEC section 2" under src/, in docs/*.md or
 * in README.md, and every docs/*.md page a source file names exists.
 */
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? sources(join(dir, d.name)) : /\.(ts|js)$/.test(d.name) ? [join(dir, d.name)] : []));
}

/** The pages a reader gets: docs/*.md and README.md. */
function pages(): string[] {
  const docs = join(repo, "docs");
  return [...readdirSync(docs).filter((n) => n.endsWith(".md")).map((n) => join(docs, n)), join(repo, "README.md")];
}

/** `file:line: text` for each line of `files` (default: the sources under src/) matching `re`. */
function matches(re: RegExp, files: readonly string[] = sources(join(repo, "src"))): string[] {
  const out: string[] = [];
  for (const file of files) {
    readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (re.test(line)) out.push(`${relative(repo, file)}:${i + 1}: ${line.trim()}`);
      });
  }
  return out;
}

const SPEC_CITATION = /\bSPEC\s+(section\s+)?\d/i;

describe("doc citations in src/", () => {
  it("the pattern finds a SPEC citation and passes a docs/ one", () => {
    expect(SPEC_CITATION.test("/** The worker pool (SPEC 4.3): claims */")).toBe(true);
    expect(SPEC_CITATION.test("/** Core data types (SPEC section 2). */")).toBe(true);
    expect(SPEC_CITATION.test("/** The worker pool (docs/host.md, Workers, leases, fencing). */")).toBe(false);
    expect(SPEC_CITATION.test("## Checks, in order (SPEC 3.1)")).toBe(true);
    expect(SPEC_CITATION.test("serves SPEC section 8's HTTP API")).toBe(true);
  });

  it("no comment cites a SPEC section", () => {
    expect(matches(SPEC_CITATION)).toEqual([]);
  });

  it("every docs/ page a source file names exists", () => {
    const missing = new Set<string>();
    for (const hit of matches(/docs\/[A-Za-z0-9_-]+\.md/)) {
      for (const m of hit.matchAll(/docs\/([A-Za-z0-9_-]+\.md)/g)) if (!existsSync(join(repo, "docs", m[1]!))) missing.add(`${hit.split(": ")[0]} docs/${m[1]}`);
    }
    expect([...missing]).toEqual([]);
  });
});

describe("doc citations in docs/ and README.md", () => {
  it("reads the pages (README.md and more than one docs/ page)", () => {
    expect(pages().length).toBeGreaterThan(2);
    expect(readFileSync(join(repo, "README.md"), "utf8").length).toBeGreaterThan(0);
  });

  it("no page cites a SPEC section", () => {
    expect(matches(SPEC_CITATION, pages())).toEqual([]);
  });
});
