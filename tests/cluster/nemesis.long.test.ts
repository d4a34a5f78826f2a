/**
 * The long variant of nemesis.test.ts (npm run test:long): random nemesis schedules, with faults
 * that overlap on different machines, round after round on one cluster for a configurable time.
 * Each round submits (a third of the requests over HTTP to `writ serve`), faults (every kind,
 * the server's partition from PostgreSQL and failovers among them), heals, waits for everything to
 * settle and runs the checker (fixtures/checker.ts, C1-C9); a finding fails the run with the
 * round's seed, its nemesis history and the offending invocations.
 *
 * WRIT_CLUSTER_MINUTES: how long (default 10); WRIT_CLUSTER_ROUND_S: the faulting part of a round
 * (default 60); WRIT_SEED: the first round's seed (default: the time; printed), round i uses
 * seed + i. Replay one round (the failure report prints the line):
 * WRIT_SEED=<its seed> WRIT_CLUSTER_MINUTES=0 npm run test:long -- tests/cluster
 */
import { describe, expect, it } from "vitest";
import { SEED } from "../helpers/seed.js";
import { clusterForFile } from "./fixtures/cluster.js";
import { clusterUnavailable } from "./fixtures/netns.js";
import { schedule } from "./fixtures/nemesis.js";
import { DEFAULTS } from "./fixtures/config.js";
import { runRound } from "./fixtures/run.js";

const why = clusterUnavailable();
if (why !== null) console.warn(`[cluster-long] skipped: ${why}`);
const enabled = why === null && process.env.WRIT_LONG === "1";
if (why === null && !enabled) console.warn("[cluster-long] skipped: set WRIT_LONG=1 (npm run test:long)");
const suite = enabled ? describe : describe.skip;

const minutes = Number(process.env.WRIT_CLUSTER_MINUTES ?? "10");
const roundMs = Number(process.env.WRIT_CLUSTER_ROUND_S ?? "60") * 1_000;
const log = (l: string): void => console.log(`[cluster-long] ${l}`);

suite(`a cluster under random nemesis schedules for ${minutes} min${why === null ? "" : ` (skipped: ${why})`}`, () => {
  const cluster = clusterForFile(log);

  it("round after round: nothing twice, nothing lost, journals verify, recovery bounded", async () => {
    const c = cluster();
    const end = Date.now() + minutes * 60_000;
    log(`first seed ${SEED}; round i uses seed ${SEED} + i; ${minutes} min of rounds of ${roundMs / 1000} s of faults`);
    const totals = { rounds: 0, faults: 0, invocations: 0, effects: 0, reconciliations: 0, httpAcked: 0, httpFailedKeys: 0 };
    for (let i = 0; i === 0 || Date.now() < end; i++) {
      const seed = SEED + i;
      const faults = schedule(seed, { workers: c.workers.length, leaseMs: DEFAULTS.leaseMs, durationMs: roundMs, overlap: 0.3 });
      const r = await runRound(c, { seed, faults, run: `r${seed}`, replay: `WRIT_SEED=${seed} WRIT_CLUSTER_MINUTES=0 npm run test:long -- tests/cluster`, log });
      if (r.result.findings.length > 0) console.error(r.text);
      expect(r.result.findings, r.text).toEqual([]);
      totals.rounds += 1;
      totals.faults += faults.length;
      totals.invocations += r.result.figures.invocations;
      totals.effects += r.result.figures.effects;
      totals.reconciliations += r.result.figures.openReconciliations;
      totals.httpAcked += r.result.figures.httpAcked;
      totals.httpFailedKeys += r.result.figures.httpFailedKeys;
      for (const w of c.workers) expect(w.alive(), `${w.name} runs after round ${i}: ${w.tail().slice(-500)}`).toBe(true);
    }
    log(`done: ${JSON.stringify(totals)}`);
  }, (minutes + 10) * 60_000);
});
