/**
 * A lone invocation on PostgreSQL is claimed on its wake-up, not on a poll (docs/host.md, Workers,
 * leases, fencing): the store LISTENs for the notification every admission sends, so an
 * invocation admitted by another process (another store object, its own connections) wakes a
 * sleeping worker at once. The worker's host runs on a manual clock the test never advances and
 * its poll interval is an hour: nothing but the wake-up can bring it back.
 *
 * Invariants: each of three lone invocations, admitted by the other process one after the other
 * while the worker sleeps, succeeds; the worker claimed each with one claim of its own loop.
 *
 * A claim that comes back short answers the next run time itself (`writ_claim_next`), so the
 * worker going to sleep makes no read of its own. Invariants: lone invocations cost the sleeping
 * worker no read of the next run time; an invocation that ends queued (a retry) costs a read; and a
 * retry queued before a claim that came back short runs when its time comes (the claim's answer
 * set the sleep), with no poll and no read.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store, StoreTx } from "../../src/core/store.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase, listenFirst, type FreshDatabase } from "../helpers/pg.js";
import { until, untilRead } from "../helpers/wait.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

let db: FreshDatabase;
let workerStore: PostgresStore;
let submitterStore: Store;

beforeAll(async () => {
  db = await freshDatabase();
  workerStore = postgresStore({ url: db.url }, { applicationName: "writ-test-wake-worker" });
  await workerStore.migrate();
  submitterStore = postgresStore({ url: db.url }, { applicationName: "writ-test-wake-submitter" });
});

afterAll(async () => {
  await submitterStore?.close();
  await workerStore?.close();
  await db?.drop();
});

it("an invocation admitted by another process wakes a sleeping worker at once (no poll on the path)", async () => {
  const w = makeHostBench(workerStore);
  await grantAuthority(w);
  const s = makeHostBench(submitterStore);
  const worker = w.host.worker({ pollMs: 3_600_000, concurrency: 4 });
  // LISTEN in effect before the worker starts: its claims and reads are the test's to count.
  const unlisten = await listenFirst(workerStore);
  worker.start();
  try {
    for (let n = 0; n < 3; n++) {
      // The worker is asleep: what it had is done and nothing else is queued.
      await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
      const { invocation } = await s.host.submit(w.request({ params: { n } }));
      await untilRead(async () => (await workerStore.transact((tx) => tx.getInvocation(w.scope, invocation.invocationId)))?.status === "succeeded", `invocation ${n} succeeded after its wake-up`, 20_000);
    }
    expect(w.events.filter((e) => e.type === "invocation.claimed").length).toBe(3);
    expect(w.events.filter((e) => e.type === "invocation.succeeded").length).toBe(3);
  } finally {
    await worker.stop();
    unlisten();
  }
}, 90_000);

/** `store`, counting the transactions (and reads) that ask for the next run time. */
function countingNextRunAt(store: Store): { store: Store; reads: () => number } {
  let reads = 0;
  const watch = (tx: StoreTx, saw: { next: boolean }): StoreTx =>
    new Proxy(tx, {
      get(t, k) {
        if (k === "nextRunAt") saw.next = true;
        const v = Reflect.get(t, k) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  const counted: Store = new Proxy(store, {
    get(t, k) {
      if (k === "transact" || k === "read") {
        const run = k === "read" ? t.read?.bind(t) : t.transact.bind(t);
        if (run === undefined) return undefined;
        return async <T>(fn: (tx: StoreTx) => Promise<T>) => {
          const saw = { next: false };
          try {
            return await run((tx) => fn(watch(tx, saw)));
          } finally {
            if (saw.next) reads++;
          }
        };
      }
      const v = Reflect.get(t, k) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  return { store: counted, reads: () => reads };
}

it("a claim that comes back short brings the next run time: no read of its own, and a retry queued before it runs at its time", async () => {
  const counted = countingNextRunAt(workerStore);
  const w = makeHostBench(counted.store);
  await grantAuthority(w);
  const s = makeHostBench(submitterStore);
  const status = async (id: string) => (await workerStore.transact((tx) => tx.getInvocation(w.scope, id)))?.status;
  const worker = w.host.worker({ pollMs: 3_600_000, concurrency: 4 });
  // LISTEN in effect before the worker starts: its claims and reads are the test's to count.
  const unlisten = await listenFirst(workerStore);
  worker.start();
  try {
    for (let n = 0; n < 2; n++) {
      await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
      const { invocation } = await s.host.submit(w.request({ params: { n } }));
      await untilRead(async () => (await status(invocation.invocationId)) === "succeeded", `lone invocation ${n} succeeded`, 20_000);
    }
    expect(counted.reads(), "reads of the next run time around lone invocations").toBe(0);
    // An invocation that ends queued moves the next run time: its end is read.
    w.replies.set("a", { outcome: "transient_failure", reason: "503" });
    const { invocation: retried } = await s.host.submit(w.request({ params: { n: 10 } }));
    let runAt = 0;
    await untilRead(async () => {
      const inv = await workerStore.transact((tx) => tx.getInvocation(w.scope, retried.invocationId));
      runAt = inv?.status === "queued" && inv.retryCount === 1 ? inv.runAt : 0;
      return runAt > 0;
    }, "the retry to be queued", 20_000);
    expect(runAt).toBeGreaterThan(w.clock.now());
    await until(() => counted.reads() >= 1, "the read after the retry was queued", 20_000);
    await new Promise((r) => setTimeout(r, 100));
    const afterRetry = counted.reads();
    w.replies.delete("a");
    // A lone invocation now: its claim comes back short and answers the retry's run time.
    const { invocation: lone } = await s.host.submit(w.request({ params: { n: 11 } }));
    await untilRead(async () => (await status(lone.invocationId)) === "succeeded", "the lone invocation succeeded", 20_000);
    await untilRead(async () => worker.inFlight() === 0, "the worker is idle again");
    await new Promise((r) => setTimeout(r, 100));
    expect(counted.reads(), "reads after the lone invocation's claim").toBe(afterRetry);
    expect(await status(retried.invocationId)).toBe("queued");
    // The worker sleeps until the retry's time (set from the claim's answer); the poll is an hour.
    w.clock.advance(runAt - w.clock.now());
    await untilRead(async () => (await status(retried.invocationId)) === "succeeded", "the retry to run at its time", 20_000);
  } finally {
    await worker.stop();
    unlisten();
  }
}, 90_000);
