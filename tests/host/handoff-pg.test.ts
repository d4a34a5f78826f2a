/**
 * The hand-off to an idle worker on PostgreSQL (docs/host.md, "Hand-off to an idle worker"): an
 * admission made through a host whose started worker waits for work with a slot free is claimed
 * for that worker in the admission's own statement and commit, with its prepare read.
 *
 * Invariants:
 * - a lone invocation submitted while the worker sleeps succeeds although the worker's clock never
 *   moves and its poll is an hour away; no wake-up notification is sent for it and the worker's
 *   store runs no claim for it; its journal holds its submitted and claimed entries in that order,
 *   and the host emits `invocation.submitted` before `invocation.claimed`;
 * - a replayed submission (same key, same request) claims nothing and holds no slot afterwards
 *   (the worker has one slot, so a held one would leave the next admission to the wake-up);
 * - a worker whose only slot an open ticket holds, woken meanwhile by another process's
 *   admission, claims that invocation as soon as the ticket closes (here a replay that claimed
 *   nothing), not at its next poll (an hour away);
 * - with `handoff: false` the same submission goes the old way: a wake-up, then a claim;
 * - an admission whose answer is lost after it committed (the worker cannot know it holds the
 *   lease): submit fails with STORE_ERROR, the worker's heartbeats (at least two commit meanwhile)
 *   do not extend that lease (it claims under a new owner name), and once the lease lapses the worker claims the invocation and
 *   runs it to success, exactly one connector call in all.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealScopesNow } from "../../src/core/journal.js";
import { readCommitted } from "../../src/core/store.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase, type FreshDatabase, listenFirst, testPool, wakeListener, type WakeListener } from "../helpers/pg.js";
import { untilRead } from "../helpers/wait.js";
import { expectLapsedThenRun, grantAuthority, makeHostBench } from "./fixture.js";

let db: FreshDatabase;
let listener: WakeListener;

/**
 * A pool that counts answered statements by name and can lose the answer of the next statement
 * named `lose.next` after it ran; `active()` counts the statements sent whose answer has not
 * reached the caller.
 */
function watchedPool(url: string): { pool: pg.Pool; counts: Map<string, number>; active: () => number; lose: { next: string | null }; hold: { next: string | null; until: Promise<void> | null } } {
  const pool = testPool({ connectionString: url, max: 6 });
  const counts = new Map<string, number>();
  let active = 0;
  const lose: { next: string | null } = { next: null };
  /** Holds back the answer of the next statement named `hold.next` until `hold.until` resolves. */
  const hold: { next: string | null; until: Promise<void> | null } = { next: null, until: null };
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => Promise<unknown>;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = async (...a: unknown[]) => {
      const q = a[0] as { name?: string } | string;
      const name = typeof q === "object" && q !== null && typeof q.name === "string" ? q.name : "other";
      // In flight until its answer reaches the caller (a held answer included).
      active += 1;
      let r: unknown;
      try {
        r = await query(...a);
        if (hold.next !== null && name === hold.next) {
          hold.next = null;
          await hold.until;
        }
      } finally {
        active -= 1;
      }
      // Counted once answered: a worker whose claim is counted has its answer, and sleeps.
      counts.set(name, (counts.get(name) ?? 0) + 1);
      if (lose.next !== null && name === lose.next) {
        lose.next = null;
        throw Object.assign(new Error("injected: connection lost after the statement committed"), { code: "08006" });
      }
      return r;
    };
  });
  return { pool, counts, active: () => active, lose, hold };
}

const claims = (counts: Map<string, number>): number => (counts.get("writ_t_claim_next") ?? 0) + (counts.get("writ_t_claim") ?? 0);

beforeAll(async () => {
  db = await freshDatabase();
  const s = postgresStore({ url: db.url });
  await s.migrate();
  await s.close();
  listener = await wakeListener(db.url);
});

afterAll(async () => {
  await listener?.end();
  await db?.drop();
});

const settleNotifications = (): Promise<void> => listener.settle();

describe("hand-off to an idle worker on PostgreSQL", () => {
  let store: PostgresStore;
  let watched: ReturnType<typeof watchedPool>;
  beforeAll(() => {
    watched = watchedPool(db.url);
    store = postgresStore({ pool: watched.pool }, { applicationName: "writ-test-handoff" });
  });
  afterAll(async () => {
    await store?.close();
    await watched?.pool.end();
  });

  it("an idle worker takes lone admissions in their commit: no wake-up, no claim of its own", async () => {
    const b = makeHostBench(store);
    await grantAuthority(b);
    const base = claims(watched.counts);
    // One slot: a ticket that leaked would leave none for the next admission.
    const worker = b.host.worker({ pollMs: 3_600_000, concurrency: 1 });
    // LISTEN in effect before the worker starts: the claims counted here are all the worker's own.
    const unlisten = await listenFirst(store);
    worker.start();
    try {
      // The worker's first claim found nothing: it sleeps.
      await untilRead(async () => claims(watched.counts) > base && worker.inFlight() === 0, "the worker's first, empty claim");
      for (let n = 0; n < 3; n++) {
        await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
        await settleNotifications();
        const before = { notes: listener.count(), claims: claims(watched.counts) };
        const { invocation, replayed } = await b.host.submit(b.request({ params: { n }, idempotencyKey: `k${n}` }));
        expect(replayed).toBe(false);
        await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocation.invocationId)))?.status === "succeeded", `invocation ${n} succeeded`, 20_000);
        await settleNotifications();
        expect(claims(watched.counts)).toBe(before.claims);
        expect(listener.count()).toBe(before.notes);
        const mine = b.events.filter((e) => e.invocationId === invocation.invocationId).map((e) => e.type);
        expect(mine.slice(0, 2)).toEqual(["invocation.submitted", "invocation.claimed"]);
        // In the sealed journal's order.
        let types: string[] = [];
        await untilRead(async () => {
          await sealScopesNow(store, nodeCryptoPort(), [b.scope]);
          const entries = await readCommitted(store, (tx) => tx.readJournal(b.scope));
          types = entries.filter((e) => e.refs?.invocationId === invocation.invocationId).map((e) => e.type);
          return types.includes("invocation.succeeded");
        }, "the invocation's entries sealed");
        expect(types.indexOf("invocation.submitted")).toBeLessThan(types.indexOf("invocation.claimed"));
        expect(types.filter((t) => t === "invocation.claimed")).toHaveLength(1);
      }
      expect(b.calls).toHaveLength(3);
      expect(watched.counts.get("writ_t_admit_claimed") ?? 0).toBeGreaterThanOrEqual(1);

      // A replay claims nothing and leaves no slot held: the next new admission is handed off too.
      const replay = await b.host.submit(b.request({ params: { n: 0 }, idempotencyKey: "k0" }));
      expect(replay.replayed).toBe(true);
      expect(worker.inFlight()).toBe(0);
      const before = claims(watched.counts);
      const { invocation } = await b.host.submit(b.request({ params: { n: 9 }, idempotencyKey: "k9" }));
      await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocation.invocationId)))?.status === "succeeded", "the admission after the replay succeeded", 20_000);
      expect(claims(watched.counts)).toBe(before);
      expect(b.calls).toHaveLength(4);
    } finally {
      await worker.stop();
      unlisten();
    }
  }, 90_000);

  it("a worker whose one slot a ticket holds claims what another process admitted once the ticket closes", async () => {
    // The loop wakes for another process's admission while an admission of its own host holds
    // the worker's only slot with a ticket; that admission turns out a replay (it claims nothing).
    // The loop must count its slot again when the ticket closes, not sleep until the poll.
    const b = makeHostBench(store);
    await grantAuthority(b);
    // LISTEN in effect before the worker starts: the claims counted here are all the worker's own.
    const unlisten = await listenFirst(store);
    const other = postgresStore({ url: db.url }, { applicationName: "writ-test-handoff-other" });
    const base = claims(watched.counts);
    const worker = b.host.worker({ pollMs: 3_600_000, concurrency: 1 });
    worker.start();
    try {
      const { invocation: first } = await b.host.submit(b.request({ params: { n: 1 }, idempotencyKey: "first" }));
      await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, first.invocationId)))?.status === "succeeded" && worker.inFlight() === 0, "the first invocation succeeded");
      await untilRead(async () => claims(watched.counts) > base, "the worker's first claim");
      let release!: () => void;
      watched.hold.until = new Promise<void>((r) => (release = r));
      watched.hold.next = "writ_t_admit_claimed";
      const replay = b.host.submit(b.request({ params: { n: 1 }, idempotencyKey: "first" }));
      await untilRead(async () => watched.hold.next === null, "the replay's admission answered and held");
      const otherBench = makeHostBench(other);
      // The wake-up reaches the loop while the ticket holds the slot: this store's listener tells
      // its subscribers one after the other in one turn, the worker's loop among them.
      let woken = 0;
      const offWake = store.onWake(() => (woken += 1));
      const { invocation: second } = await otherBench.host.submit(b.request({ params: { n: 2 }, idempotencyKey: "second" }));
      await untilRead(async () => woken > 0, "the other process's wake-up reached this store").finally(offWake);
      release();
      expect((await replay).replayed).toBe(true);
      await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, second.invocationId)))?.status === "succeeded", "the other process's invocation succeeded", 20_000);
    } finally {
      await worker.stop();
      unlisten();
      await other.close();
    }
  }, 90_000);

  it("with handoff: false the admission wakes the worker, which claims it", async () => {
    const b = makeHostBench(store);
    await grantAuthority(b);
    const base = claims(watched.counts);
    const worker = b.host.worker({ pollMs: 3_600_000, concurrency: 4, handoff: false });
    // LISTEN in effect before the worker starts: the claims counted here are all the worker's own.
    const unlisten = await listenFirst(store);
    worker.start();
    try {
      await untilRead(async () => worker.inFlight() === 0 && claims(watched.counts) > base, "the worker is idle");
      await settleNotifications();
      const before = { notes: listener.count(), claims: claims(watched.counts) };
      const { invocation } = await b.host.submit(b.request({ params: { n: 1 } }));
      await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocation.invocationId)))?.status === "succeeded", "the invocation succeeded", 20_000);
      await settleNotifications();
      expect(listener.count()).toBeGreaterThan(before.notes);
      expect(claims(watched.counts)).toBeGreaterThan(before.claims);
    } finally {
      await worker.stop();
      unlisten();
    }
  }, 90_000);

  it("a claim whose answer is lost (writ_claim_next): its lease is not extended, lapses, and the worker runs it once", async () => {
    // The claim that comes back short answers the next run time; when its answer never arrives
    // the worker has neither the invocation nor that time: it pauses as after any failed claim,
    // claims again (finding nothing it may take), sleeps, and recovery takes the lapsed lease.
    const LEASE_MS = 10_000;
    const b = makeHostBench(store, { timeoutMs: 60_000 });
    await grantAuthority(b);
    // LISTEN in effect before the worker starts: the claims counted here are all the worker's own.
    const unlisten = await listenFirst(store);
    const other = postgresStore({ url: db.url }, { applicationName: "writ-test-handoff-lost-claim" });
    const base = claims(watched.counts);
    const worker = b.host.worker({ id: "cw", pollMs: 1_000, leaseMs: LEASE_MS, heartbeatMs: 3_000, concurrency: 2, handoff: false });
    worker.start();
    try {
      await untilRead(async () => worker.inFlight() === 0 && claims(watched.counts) > base, "the worker is idle");
      watched.lose.next = "writ_t_claim_next";
      const { invocation } = await makeHostBench(other).host.submit(b.request({ params: { n: 1 }, idempotencyKey: "claim-lost" }));
      await untilRead(async () => watched.lose.next === null, "the claim's answer lost");
      await untilRead(async () => (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocation.invocationId)))?.status === "running", "the lost claim committed");
      expect(b.calls).toHaveLength(0);
      await expectLapsedThenRun(b, store, invocation.invocationId, { leaseMs: LEASE_MS, heartbeatMs: 3_000, pollMs: 1_000, settled: () => watched.active() === 0 }, () => watched.counts.get("writ_heartbeat_2") ?? 0);
    } finally {
      await worker.stop();
      unlisten();
      await other.close();
    }
  }, 90_000);

  it("an admission whose answer is lost: its lease is not extended, lapses, and the worker runs it once", async () => {
    const LEASE_MS = 10_000;
    const b = makeHostBench(store, { timeoutMs: 60_000 });
    await grantAuthority(b);
    const base = claims(watched.counts);
    const worker = b.host.worker({ id: "hw", pollMs: 1_000, leaseMs: LEASE_MS, heartbeatMs: 3_000, concurrency: 2 });
    // LISTEN in effect before the worker starts: the claims counted here are all the worker's own.
    const unlisten = await listenFirst(store);
    worker.start();
    try {
      await untilRead(async () => worker.inFlight() === 0 && claims(watched.counts) > base, "the worker is idle");
      watched.lose.next = "writ_t_admit_claimed";
      await expect(b.host.submit(b.request({ params: { n: 1 }, idempotencyKey: "lost" }))).rejects.toMatchObject({ code: "STORE_ERROR" });
      expect(watched.lose.next).toBeNull();
      const [lost] = await readCommitted(store, (tx) => tx.listInvocations(b.scope, {}));
      expect(lost).toMatchObject({ status: "running", leaseOwner: "hw", attemptCount: 1 });
      await expectLapsedThenRun(b, store, lost!.invocationId, { leaseMs: LEASE_MS, heartbeatMs: 3_000, pollMs: 1_000, settled: () => watched.active() === 0 }, () => watched.counts.get("writ_heartbeat_2") ?? 0);
    } finally {
      await worker.stop();
      unlisten();
    }
  }, 90_000);
});
