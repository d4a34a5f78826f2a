/**
 * Soak of tests/crash/boundary-crash.test.ts: many SIGKILLs per store, each a fresh child on the
 * same store, so that later children start from (and re-execute keys of) the states many crashes
 * left. Same invariants (tests/crash/invariants.ts). `npm run test:long`; WRIT_CRASH_KILLS sets the
 * kills per store (default 25), WRIT_SEED replays a run's choices.
 */
import { afterEach, describe, expect, it } from "vitest";
import { killAllChildren, liveChildren } from "../crash/child.js";
import { crashCycles, type CycleSummary } from "../crash/cycles.js";
import { onFreshPostgres, onTempSqlite } from "../crash/targets.js";
import { pgServerOrNull } from "../helpers/pg.js";
import { SEED } from "../helpers/seed.js";

const server = await pgServerOrNull();
const KILLS = Number(process.env.WRIT_CRASH_KILLS ?? 25);
/** Wider than the main suite's: some kills come early in a child's life, some late. */
const REPORTS: [number, number] = [50, 800];

afterEach(async () => {
  await killAllChildren();
  expect(liveChildren()).toBe(0);
});

function expectClean(summaries: CycleSummary[]): void {
  expect(summaries.map((s) => s.problems)).toEqual(Array.from({ length: KILLS }, () => []));
  // Over many kills some must have caught executions in flight, or the soak proved little.
  expect(summaries.reduce((n, s) => n + s.inFlight, 0)).toBeGreaterThan(0);
  const total = summaries[summaries.length - 1]!;
  console.log(`[crash soak] ${KILLS} kills: ${total.attempts} attempts, ${total.journalEntries} journal entries, ${summaries.reduce((n, s) => n + s.inFlight, 0)} executions caught in flight`);
}

describe("boundary crash durability soak (real processes, SIGKILL)", () => {
  it(`sqlite: ${KILLS} kills`, async () => {
    expectClean(await onTempSqlite((target) => crashCycles({ target, kills: KILLS, seed: SEED, reports: REPORTS, log: console.log })));
  });

  it.skipIf(server === null)(`postgres: ${KILLS} kills`, async () => {
    expectClean(await onFreshPostgres((target) => crashCycles({ target, kills: KILLS, seed: SEED + 1, reports: REPORTS, log: console.log })));
  });
});
