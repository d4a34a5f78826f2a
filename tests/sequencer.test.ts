/**
 * The suite's file order (tests/helpers/sequencer.ts): every file the slow-first list names exists
 * (a renamed file would silently fall back to its usual place), and the list puts them first.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import SlowFirstSequencer, { SLOW_FIRST } from "./helpers/sequencer.js";

const ROOT = join(import.meta.dirname, "..");

describe("slow-first sequencer", () => {
  it("names only files that exist, each once", () => {
    for (const f of SLOW_FIRST) expect(existsSync(join(ROOT, f)), f).toBe(true);
    expect(new Set(SLOW_FIRST).size).toBe(SLOW_FIRST.length);
  });

  it("starts the listed files first, in the list's order, and keeps the others' order", async () => {
    const project = { name: "", config: { sequence: { groupOrder: 0 }, isolate: true } };
    const spec = (rel: string) => ({ moduleId: join(ROOT, rel), project }) as never;
    const ctx = {
      config: { root: ROOT },
      // No cached results or sizes: the base order is the input's.
      cache: { getFileTestResults: () => undefined, getFileStats: () => undefined },
    };
    const seq = new SlowFirstSequencer(ctx as never);
    const files = ["tests/a.test.ts", SLOW_FIRST[2]!, "tests/b.test.ts", SLOW_FIRST[0]!, "tests/c.test.ts"];
    const sorted = await seq.sort(files.map(spec));
    expect(sorted.map((s: { moduleId: string }) => s.moduleId.slice(ROOT.length + 1))).toEqual([SLOW_FIRST[0], SLOW_FIRST[2], "tests/a.test.ts", "tests/b.test.ts", "tests/c.test.ts"]);
  });
});
