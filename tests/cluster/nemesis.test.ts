/**
 * A Writ cluster under a seeded nemesis (docs/cluster-tests.md): PostgreSQL (a primary and its
 * synchronous hot standby, reached through a multi-host URL), a provider, three `writ worker`
 * processes and a `writ serve`, each in its own network namespace, while the test submits a stream
 * of requests (a third of them over HTTP to `writ serve`). Each seed's schedule brings every fault
 * kind once, in a seeded order: a worker cut from PostgreSQL, a worker cut from the provider, the
 * server cut from PostgreSQL (both ways or one way), a lossy slow link, a worker paused past its lease, a worker
 * SIGKILLed and restarted, PostgreSQL SIGKILLed and restarted, the primary SIGKILLed and the
 * standby promoted (the old primary fenced and rebuilt as a standby).
 *
 * Invariants (fixtures/checker.ts, C1-C7), checked after the faults healed: no non-idempotent
 * step reaches the provider twice; idempotent steps are sent at most once per attempt, applied
 * once, always under their one stable key; every admitted invocation is settled or waits for a
 * person with one open reconciliation naming the unknown step; no success without its effects;
 * every journal verifies; everything settles within the recovery bound and `writ serve` answers
 * again, never restarted; nothing acknowledged before a failover is missing after it (C7); leases
 * follow one clock (C8); no idempotency key has two invocations, even when its HTTP submit
 * failed and was repeated (C9). A finding fails the test
 * with the seed, the nemesis history and the offending invocations.
 *
 * Replay a seed: WRIT_CLUSTER_SEEDS=<seed> npx vitest run tests/cluster/nemesis.test.ts
 */
import { describe, expect, it } from "vitest";
import { clusterForFile } from "./fixtures/cluster.js";
import { clusterUnavailable } from "./fixtures/netns.js";
import { FAULT_KINDS, schedule } from "./fixtures/nemesis.js";
import { DEFAULTS } from "./fixtures/config.js";
import { runRound } from "./fixtures/run.js";
import { readCommitted } from "../../src/core/store.js";
import { plantWorkerClock } from "./fixtures/plant.js";
import { SCOPES } from "./fixtures/workload.js";

const why = clusterUnavailable();
// Never skipped silently: the reason is printed and names the test.
if (why !== null) console.warn(`[cluster] skipped: ${why}`);
const suite = why === null ? describe : describe.skip;

/** Fixed seeds: each schedule covers every fault kind once (the order and timings vary by seed). */
const SEEDS = (process.env.WRIT_CLUSTER_SEEDS ?? "1").split(",").map(Number);
const log = (l: string): void => console.log(`[cluster] ${l}`);

suite(`a cluster of three workers under a seeded nemesis${why === null ? "" : ` (skipped: ${why})`}`, () => {
  const cluster = clusterForFile(log);

  for (const seed of SEEDS) {
    it(`seed ${seed}: every fault kind once; nothing twice, nothing lost, journals verify, recovery bounded`, async () => {
      const c = cluster();
      const faults = schedule(seed, { workers: c.workers.length, leaseMs: DEFAULTS.leaseMs, cover: true });
      // The schedule covers what this test claims to cover.
      expect(new Set(faults.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
      const r = await runRound(c, { seed, faults, run: `s${seed}`, replay: `WRIT_CLUSTER_SEEDS=${seed} npx vitest run tests/cluster/nemesis.test.ts`, log });
      if (r.result.findings.length > 0) console.error(r.text);
      expect(r.result.findings, r.text).toEqual([]);
      // The run did what it is about: work was admitted, applied, and some of it was in flight.
      expect(r.result.figures.invocations).toBeGreaterThan(50);
      expect(r.result.figures.effects).toBeGreaterThan(0);
      expect(r.result.figures.retried, "some invocations needed more than one attempt").toBeGreaterThan(0);
      // The skewed worker worked on its skewed clock (else the clock-skew fault proved nothing).
      expect(r.history).toMatch(/claimed [1-9]\d* invocations on its skewed clock/);
      // writ serve took its share over HTTP; cut from PostgreSQL, it made some submits fail (they
      // were repeated with their keys), and answered again after the heal in the same process.
      expect(r.result.figures.httpAcked).toBeGreaterThan(10);
      expect(r.result.figures.httpFailedKeys, "some HTTP submits failed while writ serve was cut off").toBeGreaterThan(0);
      expect(r.history).toMatch(/server: \/healthz answered 200 \d+ ms after the heal/);
      for (const w of c.workers) expect(w.alive(), `${w.name} runs after the round: ${w.tail().slice(-500)}`).toBe(true);
    }, 240_000);
  }

  // Invariant (the finding of seed 1083795732, docs/cluster-tests.md): workers cut from the
  // provider long enough for their calls to time out open the scopes' breakers for the whole fleet
  // (the scenario is asserted to happen); after the heal the calls the breakers held run within
  // the cooldown, one probe and a short recheck, and nothing runs twice or is lost. With the
  // cluster's 5-s cooldown the old wait (the earlier of the probe's slot and a cooldown) fits this
  // bound too: tests/host/breakers.test.ts pins the recheck itself, on a manual clock.
  it("workers cut from the provider open the breakers; after the heal the held calls run within a cooldown and a recheck", async () => {
    const c = cluster();
    const before = Date.now();
    // Every worker cut from the provider at once, `writ serve`'s too (it runs the calls handed to
    // it): their calls time out one after another (no success in between resets the count), so
    // the breakers open for certain.
    const faults = [
      ...[0, 1, 2].map((worker) => ({ at: 1_000, kind: "partition-provider" as const, worker, holdMs: 10_000 })),
      { at: 1_000, kind: "partition-provider" as const, server: true, holdMs: 10_000 },
    ];
    const r = await runRound(c, { seed: 7, faults, run: "breaker", replay: "(a fixed schedule: see nemesis.test.ts)", log });
    if (r.result.findings.length > 0) console.error(r.text);
    expect(r.result.findings, r.text).toEqual([]);
    // Each breaker remembers when it last opened (closing keeps `openedAt`).
    const opened: string[] = [];
    let lastOpenedIn = 0;
    for (const scope of SCOPES) {
      const rows = await readCommitted(c.rt.store, (tx) => tx.listBreakers(scope, { limit: 100 }));
      for (const b of rows) {
        if (b.openedAt < before) continue;
        opened.push(`${scope.spaceId} ${b.operation} opened ${b.openedAt - before} ms in`);
        lastOpenedIn = Math.max(lastOpenedIn, b.openedAt - before);
      }
    }
    log(`breaker round: ${opened.length} breakers opened during the round (${opened.join("; ")}); recovery ${r.recoveryMs} ms`);
    // The scenario happened (else this proves nothing): the timeouts opened a breaker.
    expect(opened.length, "a breaker opened while the workers were cut from the provider").toBeGreaterThan(0);
    // At most the rest of a cooldown, a probe's round trip and rechecks; 5 s for polling under load.
    // The cooldown runs from the breaker's last opening: calls can still time out after the heal
    // (in one run of the suite a breaker opened 9 s after it, the time of three 3-s timeouts in a
    // row; why is not known: the http connector opens a connection per call, so it is no pooled
    // connection the partition left dead), and that breaker then holds its calls for a cooldown of
    // its own.
    const healedIn = Math.max(...faults.map((f) => f.at + f.holdMs));
    expect(r.recoveryMs).not.toBeNull();
    expect(r.recoveryMs!).toBeLessThanOrEqual(Math.max(0, lastOpenedIn - healedIn) + DEFAULTS.breakerCooldownMs + 5_000);
  }, 180_000);

  // Invariant: the checker is not blind to lease bugs. With one worker planted under the old rule
  // (leases on the worker's own clock, 5 minutes ahead; its config hides the store's clock, Writ's
  // source is untouched), a short round must fail under C8 with the full report (seed, replay
  // line, nemesis history, the invocation). The worker runs as before afterwards.
  it("a planted bug is caught: one worker taking leases on its own clock 5 min ahead fails C8 with a full report", async () => {
    const c = cluster();
    const restore = await plantWorkerClock(c, 0, 300_000);
    let r;
    try {
      r = await runRound(c, { seed: 99, faults: [{ at: 2_500, kind: "pause-worker", worker: 1, holdMs: 1_000 }], run: "planted", replay: "(a planted bug: see nemesis.test.ts)", log });
    } finally {
      await restore();
    }
    log(`planted bug: ${r.result.findings.length} findings (${[...new Set(r.result.findings.map((f) => f.invariant))].join(", ")}); the report starts:\n${r.text.split("\n").slice(0, 10).join("\n")}`);
    expect(r.result.findings.map((f) => f.invariant)).toContain("C8 leases on one clock");
    expect(r.text).toMatch(/\[C8 leases on one clock\] \S+ stolen: \S+ took the lease while \S+ held it for \d+ ms more/);
    expect(r.text).toContain("seed 99");
    expect(r.text).toContain("start pause-worker w1");
    expect(c.workers[0]!.alive()).toBe(true);
  }, 180_000);
});
