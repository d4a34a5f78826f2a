/**
 * The hand-off to an idle worker on every store (docs/host.md, "Hand-off to an idle worker"): on
 * memory and SQLite the generic composition admits a queued, due invocation already claimed for
 * the waiting worker, in the admission's one transaction; on PostgreSQL its native function does
 * (tests/host/handoff-pg.test.ts checks its statements and notifications; here PostgreSQL runs
 * behind a wrapper that counts transaction operations, so through the generic composition too).
 *
 * Invariants, per store: three lone invocations, submitted one after the other while the worker
 * sleeps (its poll an hour away, its clock never moved), each succeed with one connector call;
 * after the worker's first, empty claim no `claimInvocations` runs; each invocation's events go
 * submitted, then claimed; a replay of the first claims nothing. An admission whose answer is
 * lost leaves a lease the worker's heartbeats never extend: it lapses and the worker runs the
 * invocation once (the case on PostgreSQL's native function: tests/host/handoff-pg.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCommitted, type Store } from "../../src/core/store.js";
import { faultStore } from "../helpers/fault-store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { untilRead } from "../helpers/wait.js";
import { expectLapsedThenRun, grantAuthority, makeHostBench } from "./fixture.js";

/**
 * `inner` behind a fault store that counts the worker's claims, its reads of when to poll next and
 * the heartbeats committed; while `loseAdmission` is set, an admission's commit loses its answer.
 */
function watched(inner: Store): { store: ReturnType<typeof faultStore>; seen: { claims: number; nextRunReads: number; beats: number; loseAdmission: boolean } } {
  const seen = { claims: 0, nextRunReads: 0, beats: 0, loseAdmission: false };
  const store = faultStore(inner, {
    failRead: (method) => {
      if (method === "nextRunAt") seen.nextRunReads++;
      return false;
    },
    failWhen: (c) => {
      if (c.method === "claimInvocations") seen.claims++;
      return seen.loseAdmission && c.method === "insertInvocation";
    },
    mode: "lost-ack",
    beforeCommit: (writes) => {
      if (writes.some((w) => w.method === "heartbeat")) seen.beats++;
    },
  });
  return { store, seen };
}

for (const factory of allStoreFactories()) {
  describe(`hand-off to an idle worker on ${factory.name}`, () => {
    let inner: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store: inner, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("lone admissions are claimed in their own transaction: no claim of the worker's own", async () => {
      const { store, seen } = watched(inner);
      const b = makeHostBench(store);
      await grantAuthority(b);
      const worker = b.host.worker({ pollMs: 3_600_000, concurrency: 1 });
      worker.start();
      try {
        // Its first claim has answered (nothing to claim): the loop sleeps.
        // Its first claim found nothing and it reads when to poll next: it waits for work, the
        // state in which it takes an admission in its commit.
        await untilRead(async () => seen.claims >= 1 && seen.nextRunReads >= 1 && store.openTransactions() === 0, "the worker waits for work");
        const first = seen.claims;
        const ids: string[] = [];
        for (let n = 0; n < 3; n++) {
          await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
          const { invocation } = await b.host.submit(b.request({ params: { n }, idempotencyKey: `k${n}` }));
          ids.push(invocation.invocationId);
          await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocation.invocationId)))?.status === "succeeded", `invocation ${n} succeeded`, 20_000);
          const mine = b.events.filter((e) => e.invocationId === invocation.invocationId).map((e) => e.type);
          expect(mine.slice(0, 2)).toEqual(["invocation.submitted", "invocation.claimed"]);
        }
        expect(seen.claims).toBe(first);
        expect(b.calls).toHaveLength(3);
        const replay = await b.host.submit(b.request({ params: { n: 0 }, idempotencyKey: "k0" }));
        expect(replay).toMatchObject({ replayed: true, invocation: { invocationId: ids[0] } });
        expect(worker.inFlight()).toBe(0);
        expect(seen.claims).toBe(first);
        expect(b.calls).toHaveLength(3);
      } finally {
        await worker.stop();
      }
    }, 60_000);

    // Invariants: an admission handed to the idle worker whose answer is lost (its transaction
    // committed, the submit got STORE_ERROR) stays leased to the worker's old owner name; the
    // worker's heartbeats never extend that lease (it was never told it holds it), so the lease
    // lapses and the worker claims and runs the invocation once: one connector call, two attempts.
    it("an admission whose answer is lost: its lease lapses unextended and the worker runs it once", async () => {
      const LEASE_MS = 10_000;
      const { store, seen } = watched(inner);
      const b = makeHostBench(store, { timeoutMs: 60_000 });
      await grantAuthority(b);
      const worker = b.host.worker({ id: "hw", pollMs: 1_000, leaseMs: LEASE_MS, heartbeatMs: 3_000, concurrency: 2 });
      worker.start();
      try {
        // Its first claim found nothing and it reads when to poll next: it waits for work, the
        // state in which it takes an admission in its commit.
        await untilRead(async () => seen.claims >= 1 && seen.nextRunReads >= 1 && store.openTransactions() === 0, "the worker waits for work");
        const claimsBefore = seen.claims;
        seen.loseAdmission = true;
        await expect(b.host.submit(b.request({ params: { n: 1 }, idempotencyKey: "lost" }))).rejects.toMatchObject({ code: "STORE_ERROR" });
        seen.loseAdmission = false;
        // It was handed off: admitted and claimed in the admission's transaction, no claim of the worker's own.
        expect(seen.claims).toBe(claimsBefore);
        const [lost] = await readCommitted(store, (tx) => tx.listInvocations(b.scope, {}));
        expect(lost).toMatchObject({ status: "running", leaseOwner: "hw", attemptCount: 1 });
        await expectLapsedThenRun(b, store, lost!.invocationId, { leaseMs: LEASE_MS, heartbeatMs: 3_000, pollMs: 1_000, settled: () => store.openTransactions() === 0 }, () => seen.beats);
      } finally {
        await worker.stop();
      }
    }, 90_000);
  });
}
