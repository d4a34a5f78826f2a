/**
 * Running many seeds (docs/simulation.md): each failing seed is printed with its one-line replay
 * command. WRIT_SIM_SEED=<n> runs that seed alone (and prints its trace with WRIT_SIM_TRACE=1);
 * WRIT_SIM_FROM=<n> moves the first seed; WRIT_SIM_STORE narrows a replay to one store.
 */
import { simConfig, type SimConfig } from "./config.js";
import { replayCommand, runSeed, type SimResult, type SimStoreKind } from "./run.js";

export interface SeedsOutcome {
  seeds: number;
  failures: Array<{ seed: number; violations: string[]; replay: string }>;
  ms: number;
  cpuMs: number;
  events: number;
  statuses: Record<string, number>;
  notes: string[];
  /** Seeds that batched, and their batch operations with more than one member (and those members). */
  batching: { seeds: number; multi: number; members: number; failedAlone: number; settlesLeaseLost: number; diedMidBatch: number };
  /** Invocations retention pruned, and in how many seeds (docs/retention.md). */
  pruned: { invocations: number; seeds: number };
  /** Seeds whose workers archived journal segments, and how many (docs/archives.md). */
  archive: { seeds: number; segments: number };
}

/** The seeds a suite runs: `count` from WRIT_SIM_FROM (default 1), or WRIT_SIM_SEED alone. */
export function seedList(count: number, env: NodeJS.ProcessEnv = process.env): number[] {
  if (env.WRIT_SIM_SEED !== undefined) return [Number(env.WRIT_SIM_SEED)];
  const from = env.WRIT_SIM_FROM !== undefined ? Number(env.WRIT_SIM_FROM) : 1;
  return Array.from({ length: count }, (_, i) => from + i);
}

/** True when this store should run (WRIT_SIM_STORE narrows a replay). */
export function storeSelected(kind: SimStoreKind, env: NodeJS.ProcessEnv = process.env): boolean {
  return env.WRIT_SIM_STORE === undefined || env.WRIT_SIM_STORE === kind;
}

/** The batch counters a seed reports that the suite adds up. */
const BATCH_COUNTS = ["multi", "members", "failedAlone", "settlesLeaseLost", "diedMidBatch"] as const;

export async function runSeeds(kind: SimStoreKind, seeds: number[], file: string, config: SimConfig = simConfig()): Promise<SeedsOutcome> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const out: SeedsOutcome = { seeds: seeds.length, failures: [], ms: 0, cpuMs: 0, events: 0, statuses: {}, notes: [], batching: { seeds: 0, multi: 0, members: 0, failedAlone: 0, settlesLeaseLost: 0, diedMidBatch: 0 }, pruned: { invocations: 0, seeds: 0 }, archive: { seeds: 0, segments: 0 } };
  for (const seed of seeds) {
    let r: SimResult;
    try {
      r = await runSeed(seed, kind, config);
    } catch (e) {
      out.failures.push({ seed, violations: [`the run threw: ${e instanceof Error ? e.stack ?? e.message : String(e)}`], replay: replayCommand(seed, kind, file) });
      continue;
    }
    out.events += r.events;
    if (r.stats.batchMax !== null) {
      out.batching.seeds++;
      for (const k of BATCH_COUNTS) out.batching[k] += r.stats.batches[k];
    }
    out.pruned.invocations += r.stats.pruned;
    if (r.stats.pruned > 0) out.pruned.seeds++;
    if (r.stats.archiveSegments > 0) {
      out.archive.seeds++;
      out.archive.segments += r.stats.archiveSegments;
    }
    for (const [k, v] of Object.entries(r.stats.statuses)) out.statuses[k] = (out.statuses[k] ?? 0) + v;
    for (const n of r.notes) out.notes.push(`seed ${seed}: ${n}`);
    if (r.violations.length > 0) {
      const f = { seed, violations: r.violations.map((v) => `${v.invariant}${v.item ? ` (item ${v.item})` : ""}: ${v.message}`), replay: replayCommand(seed, kind, file) };
      out.failures.push(f);
      console.log(`[sim] ${kind} seed ${seed} FAILED:\n  ${f.violations.join("\n  ")}\n  replay: ${f.replay}`);
      if (r.trace) console.log(r.trace.join("\n"));
    }
  }
  out.ms = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  out.cpuMs = (cpu.user + cpu.system) / 1000;
  console.log(
    `[sim] ${kind}: ${seeds.length} seeds (${seeds[0]}..${seeds[seeds.length - 1]}) in ${(out.ms / 1000).toFixed(1)} s wall, ${(out.cpuMs / 1000).toFixed(1)} s CPU: ${((seeds.length * 1000) / out.ms).toFixed(1)} seeds/s, ${out.events} trace events; final statuses ${JSON.stringify(out.statuses)}; batching in ${out.batching.seeds} seeds: ${out.batching.multi} batches of 2+ members (${out.batching.members} members), ${out.batching.failedAlone} members failed alone (${out.batching.settlesLeaseLost} settlements for a lost lease), ${out.batching.diedMidBatch} crashes with a batch queued or in flight; retention pruned ${out.pruned.invocations} invocations in ${out.pruned.seeds} seeds; journal archived in ${out.archive.seeds} seeds (${out.archive.segments} segments); ${out.failures.length} failing`,
  );
  return out;
}
