/**
 * `npm run bench`: every benchmark, ratios measured side by side in one run, JSON under bench/results/.
 * Select some with `npm run bench -- boundary` (names: boundary).
 */
import { benchBoundaryMemory } from "./boundary.js";
import { fmt, writeResult } from "./lib.js";

const only = new Set(process.argv.slice(2));
const want = (name: string): boolean => only.size === 0 || only.has(name);
const rounds = Number(process.env.WRIT_BENCH_ROUNDS ?? 5);

if (want("boundary")) {
  const r = await benchBoundaryMemory(rounds);
  console.log(`boundary (memory store, no-op connector): ${fmt(r.boundaryPerSec)}/s | raw Ed25519 verify: ${fmt(r.verifyPerSec)}/s | ratio ${r.ratio.toFixed(3)} (goal >= 0.9; medians of ${rounds} interleaved rounds)`);
  console.log("  ->", writeResult("boundary", { ...r, goal: 0.9 }));
}
