/**
 * `npm run bench`: every benchmark, ratios measured side by side in one run, JSON under bench/results/.
 * Select some with `npm run bench -- boundary` (names: boundary, policy).
 */
import { benchBoundaryMemory } from "./boundary.js";
import { fmt, writeResult } from "./lib.js";
import { benchPolicy } from "./policy.js";

const only = new Set(process.argv.slice(2));
const want = (name: string): boolean => only.size === 0 || only.has(name);
const rounds = Number(process.env.WRIT_BENCH_ROUNDS ?? 5);

if (want("boundary")) {
  const r = await benchBoundaryMemory(rounds);
  console.log(`boundary (memory store, no-op connector): ${fmt(r.boundaryPerSec)}/s | raw Ed25519 verify: ${fmt(r.verifyPerSec)}/s | ratio ${r.ratio.toFixed(3)} (goal >= 0.9; medians of ${rounds} interleaved rounds)`);
  console.log("  ->", writeResult("boundary", { ...r, goal: 0.9 }));
}

if (want("policy")) {
  const r = await benchPolicy(rounds);
  console.log(`policy (cedar, ${r.policies} policies, schema): evaluate+sign ${fmt(r.evaluateSignPerSec)}/s | evaluate ${fmt(r.evaluatePerSec)}/s | raw cedar-wasm (pre-parsed) ${fmt(r.rawPerSec)}/s | ratio ${r.ratio.toFixed(3)} (evaluate alone ${r.evaluateRatio.toFixed(3)})`);
  console.log(`  re-parse per call: ${fmt(r.reparsePerSec)}/s, pre-parsed is ${r.preparseSpeedup.toFixed(1)}x faster (medians of ${rounds} interleaved rounds)`);
  console.log("  ->", writeResult("policy", r));
}
