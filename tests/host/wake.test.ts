/**
 * A wake-up is never lost (docs/host.md, Workers, leases, fencing). The store's wake-up hint
 * (LISTEN/NOTIFY on PostgreSQL) may arrive while the worker is not asleep: while it claims, or
 * while it reads when the next invocation is due before going to sleep. Invariant: an invocation
 * admitted (and hinted) during that read is claimed at once, not after the poll interval.
 *
 * Likewise a `stop()` that comes while the worker is not asleep: the loop must not begin a sleep
 * afterwards (it would wait out the poll). Invariant: `stop()` resolves at once.
 *
 * A claim that finds fewer invocations than it asked for leaves the loop waiting (for a wake-up or
 * the next run time), not claiming again to find nothing; nor does an invocation's end (the loop
 * only reads the next run time again). Invariant: one lone invocation costs its worker one claim
 * (three before), and a wake-up still brings the next one in at once. And since an ended
 * invocation no longer claims: a retry it queued (due after a backoff) while the loop slept on the
 * poll is run when it falls due, without a poll or a wake-up. An invocation that ends in any other
 * state than queued leaves the next run time as it was, so its end costs no read of it either.
 *
 * The host runs on a manual clock that the test never advances, so the poll never fires: only the
 * wake-up (or the stop) can bring the worker back.
 */
import { expect, it } from "vitest";
import type { Store, StoreTx } from "../../src/core/store.js";
import { memoryStore } from "../../src/index.js";
import { withTransitions } from "../helpers/stores.js";
import { until, untilRead } from "../helpers/wait.js";
import { grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

/**
 * A memory store whose wake-up hints the test sends (`wakes`), and which can hold the worker once
 * between its read of the next run time and its sleep: `holdAtRead()` resolves when the worker is
 * held there, and `open()` lets it go on.
 */
function heldStore(): { store: Store; wakes: Set<() => void>; holdAtRead: () => Promise<void>; open: () => void; nextRunAtReads: () => number } {
  const inner = memoryStore();
  const wakes = new Set<() => void>();
  let reads = 0;
  let gate: { reached: () => void; open: Promise<void> } | null = null;
  let open: () => void = () => undefined;
  // The read of the next run time ends (its transaction too: the memory store runs one at a time),
  // then the gate holds the worker between that read and its sleep.
  const pause = async <T>(saw: { nextRunAt: boolean }, out: T): Promise<T> => {
    const g = gate;
    if (saw.nextRunAt && g !== null) {
      gate = null;
      g.reached();
      await g.open;
    }
    return out;
  };
  const watch = (tx: StoreTx, saw: { nextRunAt: boolean }): StoreTx =>
    new Proxy(tx, {
      get(t, k) {
        if (k === "nextRunAt") saw.nextRunAt = true;
        const v = Reflect.get(t, k) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  const store: Store = new Proxy(inner, {
    get(t, k) {
      if (k === "onWake") {
        return (cb: () => void) => {
          wakes.add(cb);
          return () => wakes.delete(cb);
        };
      }
      if (k === "transact" || k === "read") {
        const run = k === "read" ? t.read?.bind(t) : t.transact.bind(t);
        if (run === undefined) return undefined;
        return async <T>(fn: (tx: StoreTx) => Promise<T>) => {
          const saw = { nextRunAt: false };
          const out = await run((tx) => fn(watch(tx, saw)));
          if (saw.nextRunAt) reads++;
          return pause(saw, out);
        };
      }
      const v = Reflect.get(t, k) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
  return {
    store,
    wakes,
    holdAtRead: () =>
      new Promise<void>((reached) => {
        gate = { reached, open: new Promise<void>((r) => (open = r)) };
      }),
    open: () => open(),
    nextRunAtReads: () => reads,
  };
}

/** Waits for the invocation's `invocation.succeeded` event. */
function succeeded(b: HostBench, invocationId: string, what: string): Promise<void> {
  return until(() => b.events.some((e) => e.type === "invocation.succeeded" && e.invocationId === invocationId), what, 5_000);
}

/** Waits until the invocation is queued for its first retry; its run time. */
async function queuedRetry(b: HostBench, invocationId: string): Promise<number> {
  let runAt: number | undefined;
  await untilRead(async () => {
    const inv = await b.host.get(b.scope, invocationId);
    runAt = inv?.status === "queued" && inv.retryCount === 1 ? inv.runAt : undefined;
    return runAt !== undefined;
  }, "the retry to be queued", 5_000);
  return runAt!;
}

/** A host bench on a held store (see heldStore), its authority granted; `wrap` wraps the store first. */
async function heldBench(wrap: (store: Store) => Store = (s) => s): Promise<ReturnType<typeof heldStore> & { b: HostBench }> {
  const held = heldStore();
  const b = makeHostBench(wrap(held.store));
  await grantAuthority(b);
  return { ...held, b };
}

/**
 * The queued retry (reply "a" cleared first) does not run before `runAt` on the manual clock, with
 * the loop let go as far as it would, and runs once the clock reaches it.
 */
async function retryRunsWhenDue(b: HostBench, invocationId: string, runAt: number): Promise<void> {
  await loopTurns();
  expect(b.calls).toHaveLength(1);
  b.clock.advance(runAt - b.clock.now());
  await succeeded(b, invocationId, "the retry to run at its time");
  expect(b.calls).toHaveLength(2);
}

/** Lets the worker's loop go on as far as it would (to its next sleep). */
async function loopTurns(): Promise<void> {
  for (let k = 0; k < 20; k++) await new Promise((r) => setImmediate(r));
}

it("a wake-up that arrives while the worker reads the next run time is not lost", async () => {
  const { b, wakes, holdAtRead, open } = await heldBench();
  const atRead = holdAtRead();
  const worker = b.host.worker({ pollMs: 60_000 });
  worker.start();
  try {
    await atRead; // the loop claimed nothing and reads the next run time before it sleeps
    const { invocation } = await b.host.submit(b.request());
    for (const cb of wakes) cb(); // the store's hint arrives now, while the loop is not asleep
    open();
    await succeeded(b, invocation.invocationId, "the invocation to succeed without a poll");
    expect(b.calls).toHaveLength(1);
  } finally {
    await worker.stop();
  }
});

it("a stop that arrives while the worker reads the next run time does not wait out the poll", async () => {
  const { b, holdAtRead, open } = await heldBench();
  const atRead = holdAtRead();
  const worker = b.host.worker({ pollMs: 60_000 });
  worker.start();
  await atRead; // the loop claimed nothing and reads the next run time before it sleeps
  let stopped = false;
  const stopping = worker.stop().then(() => (stopped = true));
  open();
  try {
    await until(() => stopped, "stop() to resolve without a poll", 5_000);
  } finally {
    open();
    await Promise.race([stopping, new Promise((r) => setTimeout(r, 100))]);
  }
  expect(stopped).toBe(true);
});

it("a claim that finds fewer than it asked for is not followed by another before a wake-up", async () => {
  let claims = 0;
  const { b, wakes } = await heldBench((held) =>
    withTransitions(held, (own) => ({
      ...own,
      ...(own.claimPrepared && { claimPrepared: (...a: Parameters<NonNullable<typeof own.claimPrepared>>) => ((claims += 1), own.claimPrepared!(...a)) }),
      claim: (...a: Parameters<typeof own.claim>) => ((claims += 1), own.claim(...a)),
    })),
  );
  const worker = b.host.worker({ pollMs: 60_000, concurrency: 4 });
  worker.start();
  try {
    await until(() => claims === 1, "the first (empty) claim", 5_000);
    for (let i = 1; i <= 3; i++) {
      const { invocation } = await b.host.submit(b.request());
      for (const cb of wakes) cb();
      await succeeded(b, invocation.invocationId, `invocation ${i} to succeed`);
      await loopTurns();
      expect(claims, `claims after invocation ${i}`).toBe(1 + i);
    }
    // A claim that came later than those turns would still be an extra one: 100 ms of real time
    // (the poll is 60 s on the bench's manual clock, which does not move here).
    await new Promise((r) => setTimeout(r, 100));
    expect(claims, "claims 100 ms after the last invocation").toBe(4);
  } finally {
    await worker.stop();
  }
});

it("an invocation that ends without queuing anything costs the sleeping loop no read; one that queues a retry does", async () => {
  const { b, nextRunAtReads } = await heldBench();
  const worker = b.host.worker({ pollMs: 60_000, concurrency: 4 });
  worker.start();
  try {
    await until(() => nextRunAtReads() === 1, "the loop's read of the next run time before its first sleep", 5_000);
    await loopTurns();
    for (let i = 1; i <= 3; i++) {
      // The loop sleeps: the admission claims the invocation for it (the hand-off), no wake-up.
      const { invocation } = await b.host.submit(b.request());
      await succeeded(b, invocation.invocationId, `invocation ${i} to succeed`);
      await loopTurns();
    }
    expect(b.calls).toHaveLength(3);
    expect(nextRunAtReads(), "reads of the next run time after three invocations that succeeded").toBe(1);
    // A retry moves the next run time: the end of the invocation that queued it is read again.
    b.replies.set("a", { outcome: "transient_failure", reason: "503" });
    const { invocation } = await b.host.submit(b.request());
    await queuedRetry(b, invocation.invocationId);
    await until(() => nextRunAtReads() === 2, "the read after the retry was queued", 5_000);
  } finally {
    await worker.stop();
  }
});

it("a retry queued by an invocation that ended while the loop slept runs when due, without a poll", async () => {
  const { b } = await heldBench();
  b.replies.set("a", { outcome: "transient_failure", reason: "503" });
  const worker = b.host.worker({ pollMs: 60_000, concurrency: 4 });
  const { invocation } = await b.host.submit(b.request());
  worker.start();
  try {
    await until(() => b.calls.length === 1, "the first attempt", 5_000);
    const runAt = await queuedRetry(b, invocation.invocationId);
    expect(runAt - b.clock.now()).toBeLessThan(60_000);
    b.replies.delete("a");
    // The loop reads the next run time again and goes back to sleep; then the retry's time comes.
    await retryRunsWhenDue(b, invocation.invocationId, runAt);
  } finally {
    await worker.stop();
  }
});

it("a retry queued by an invocation that ended during the loop's read of the next run time is not missed", async () => {
  const { b, holdAtRead, open } = await heldBench();
  let fail!: () => void;
  const failing = new Promise<void>((r) => (fail = r));
  b.replies.set("a", async () => {
    await failing;
    return { outcome: "transient_failure", reason: "503" };
  });
  const worker = b.host.worker({ pollMs: 60_000, concurrency: 4 });
  const { invocation } = await b.host.submit(b.request());
  const atRead = holdAtRead();
  worker.start();
  try {
    await atRead; // the loop claimed the invocation (1 of 4) and has read the next run time: none
    fail(); // the invocation now ends and queues its retry, while the loop is held after its read
    const runAt = await queuedRetry(b, invocation.invocationId);
    b.replies.delete("a");
    open();
    await retryRunsWhenDue(b, invocation.invocationId, runAt);
  } finally {
    open();
    await worker.stop();
  }
});
