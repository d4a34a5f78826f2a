/** Seeds for randomized tests: WRIT_SEED replays a run; every use prints the seed. */
export const SEED = process.env.WRIT_SEED !== undefined ? Number(process.env.WRIT_SEED) : Date.now() % 2_147_483_647;

/** fast-check parameters for one property; logs the seed so a failing run can be replayed. */
export function fcRun(suite: string, name: string, numRuns: number): { seed: number; numRuns: number } {
  console.log(`[${suite}] ${name}: fast-check seed=${SEED} numRuns=${numRuns} (replay: WRIT_SEED=${SEED})`);
  return { seed: SEED, numRuns };
}

/** Deterministic PRNG (mulberry32): a seed replays a schedule, a shuffle or a workload. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
