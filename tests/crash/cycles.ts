/**
 * Kill cycles on one store: spawn a child, let it report some executions, SIGKILL it at a moment
 * drawn from the seed, reopen the store here, check every invariant (invariants.ts), and go again
 * with a fresh child on the same store, which first re-executes keys the killed ones left behind.
 */
import { generateSigningKey, createKeyring, type SigningKey } from "../../src/index.js";
import { spawnChild, type ChildRun } from "./child.js";
import { checkCrash, planRevisits, takeSnapshot, type Expectation, type Snapshot } from "./invariants.js";
import type { CrashTarget } from "./targets.js";
import { prng, type Report } from "./workload.js";

export interface CrashOptions {
  target: CrashTarget;
  /** Children to kill, one after another, on the same store. */
  kills: number;
  seed: number;
  /** Each child is killed after a number of reported executions drawn from this range. */
  reports: readonly [min: number, max: number];
  /** @defaultValue 8 */
  concurrency?: number;
  log?: (line: string) => void;
}

export interface CycleSummary {
  run: number;
  reported: number;
  revisitsReported: number;
  attempts: number;
  /** Executions the kill caught between consumption and settlement. */
  inFlight: number;
  journalEntries: number;
  checkpoints: number;
  states: Partial<Record<Report["state"], number>>;
  problems: string[];
}

/** Runs `kills` kill cycles; stops after the first cycle whose check finds problems. */
export async function crashCycles(o: CrashOptions): Promise<CycleSummary[]> {
  const rand = prng(o.seed);
  const concurrency = o.concurrency ?? 8;
  const key: SigningKey = generateSigningKey({ kid: "crash-key" });
  const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
  const out: CycleSummary[] = [];
  let prev: Snapshot | null = null;
  let expectations = new Map<string, Expectation>();
  for (let run = 0; run < o.kills; run++) {
    const [min, max] = o.reports;
    const after = min + Math.floor(rand() * (max - min + 1));
    const delayMs = Math.floor(rand() * 25);
    const childSeed = Math.floor(rand() * 2_147_483_647);
    o.log?.(`[crash ${o.target.name}] seed=${o.seed} run=${run}: SIGKILL after ${after} reports + ${delayMs} ms (child seed ${childSeed}, ${expectations.size} revisits; replay: WRIT_SEED=${o.seed})`);
    const child: ChildRun = spawnChild({
      WRIT_CRASH_STORE: o.target.child.store,
      WRIT_CRASH_TARGET: o.target.child.target,
      WRIT_CRASH_RUN: String(run),
      WRIT_CRASH_SEED: String(childSeed),
      WRIT_CRASH_CONCURRENCY: String(concurrency),
      WRIT_CRASH_KEY: JSON.stringify(key),
      WRIT_CRASH_REVISIT: JSON.stringify([...expectations.keys()]),
    });
    const t0 = performance.now();
    try {
      await child.waitForReports(after, 60_000);
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    } finally {
      await child.kill();
    }
    const t1 = performance.now();
    await o.target.quiesce(run);
    const store = await o.target.open();
    let snap: Snapshot;
    try {
      snap = await takeSnapshot(store, o.target, keyring);
    } finally {
      await store.close();
    }
    const t2 = performance.now();
    const problems = checkCrash({ snap, prev, reports: child.reports, checkpoints: child.checkpoints, expectations, concurrency });
    const states: CycleSummary["states"] = {};
    for (const r of child.reports) states[r.state] = (states[r.state] ?? 0) + 1;
    const summary: CycleSummary = {
      run,
      reported: child.reports.length,
      revisitsReported: child.reports.filter((r) => r.revisit).length,
      attempts: snap.attempts.size,
      inFlight: [...snap.attempts.values()].filter((a) => a.state === "EXECUTING" && !prev?.attempts.has(a.attemptId)).length,
      journalEntries: snap.scopes.reduce((n, v) => n + v.journal.length, 0),
      checkpoints: snap.scopes.reduce((n, v) => n + v.checkpoints.length, 0),
      states,
      problems,
    };
    o.log?.(
      `[crash ${o.target.name}] run=${run}: ${summary.reported} reported (${summary.revisitsReported} revisits), ${summary.inFlight} in flight at the kill, ` +
        `${summary.attempts} attempts, ${summary.journalEntries} journal entries, ${summary.checkpoints} checkpoints, states ${JSON.stringify(states)}: ` +
        (problems.length === 0 ? "all invariants hold" : `${problems.length} PROBLEMS`) +
        ` (child ${Math.round(t1 - t0)} ms, reopen and read ${Math.round(t2 - t1)} ms)`,
    );
    out.push(summary);
    if (problems.length > 0) break;
    prev = snap;
    expectations = planRevisits(snap, rand, run);
  }
  return out;
}
