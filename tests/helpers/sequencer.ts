/**
 * The order `npm test` starts its files in: the slowest files first, so the two workers are not
 * left with one long file running alone at the end of the run. Vitest orders by the durations of
 * the previous run in its cache, and a clean checkout (CI's) has none: it then orders by file
 * size, which put the 60-second simulator file last (about 50 s of the run with one worker idle).
 *
 * `SLOW_FIRST` names the files that took longest in a full run (seconds with two workers,
 * 2026-12-06); they start first, in this order, then every other file in Vitest's own order.
 * A stale list costs only packing, never a test: a file missing here runs in its usual place.
 */
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

export const SLOW_FIRST: readonly string[] = [
  "tests/host-crash/kill-points.test.ts", // 103 s
  "tests/console/console-long.browser.test.ts", // 93 s
  "tests/cluster/nemesis.test.ts", // 83 s
  "tests/console/console.browser.test.ts", // 75 s
  "tests/host-crash/pg-restart.test.ts", // 63 s
  "tests/sim/sim.test.ts", // 61 s
  "tests/stores/postgres-plans.test.ts", // 31 s
  "tests/cli/cli-flow.test.ts", // 28 s
  "tests/cli/cli-first-hour.test.ts", // 26 s
  "tests/host-crash/random-short.test.ts", // 20 s
  "tests/crash/boundary-crash.test.ts", // 19 s
  "tests/mcp/first-hour.test.ts", // 18 s
  "tests/cli/cli-archive-witness.test.ts", // 18 s
  "tests/journal/sequencer-pg.test.ts", // 16 s
  "tests/cli/cli-archive.test.ts", // 15 s
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (f: TestSpecification): number => {
      const i = SLOW_FIRST.indexOf(relative(root, f.moduleId).split("\\").join("/"));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    // Stable: files outside the list keep Vitest's order among themselves.
    return base
      .map((f, i) => ({ f, i, r: rank(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((x) => x.f);
  }
}
