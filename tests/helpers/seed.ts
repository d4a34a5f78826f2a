/** Seeds for randomized tests: WRIT_SEED replays a run; every use prints the seed. */
export const SEED = process.env.WRIT_SEED !== undefined ? Number(process.env.WRIT_SEED) : Date.now() % 2_147_483_647;

/** fast-check parameters for one property; logs the seed so a failing run can be replayed. */
export function fcRun(suite: string, name: string, numRuns: number): { seed: number; numRuns: number } {
  console.log(`[${suite}] ${name}: fast-check seed=${SEED} numRuns=${numRuns} (replay: WRIT_SEED=${SEED})`);
  return { seed: SEED, numRuns };
}

/** Deterministic PRNG (mulberry32): a seed replays a schedule, a shuffle or a workload. */
export { prng } from "../../src/stores/conformance/fixtures.js";
