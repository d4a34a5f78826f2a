/**
 * A claim that keeps failing pauses the worker's loop (docs/host.md, Workers, leases, fencing): 25
 * ms after the first failure, doubling with each further failure in a row, at most pollMs. Before,
 * a claim that failed while work was due was retried at once, after a read that found the work due:
 * a hot loop of round trips and error logs for as long as the store refused the claim (a store
 * that refuses writes but answers reads, a claim that errors every time).
 *
 * Invariants, on the memory and SQLite stores (the loop is the same on every store), with the
 * host's manual clock: no claim is retried before its pause ended however much wall time passes;
 * the pauses are 25, 50, 100, ... ms and stop growing at pollMs; an admission's wake-up during a
 * pause does not end it; once the claim works again the due invocations run; `stop()` ends a pause
 * at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WritError } from "../../src/core/errors.js";
import type { Store } from "../../src/core/store.js";
import { faultStore } from "../helpers/fault-store.js";
import { memoryFactory, sqliteFactory } from "../helpers/stores.js";
import { tick, until, untilRead } from "../helpers/wait.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

/**
 * `store` whose claims fail while `broken.on` (the claim's transaction rolls back before its
 * commit), counting every claim made.
 */
function failingClaims(store: Store, broken: { on: boolean }, counted: () => void): Store {
  return faultStore(store, {
    beforeCommit: (writes) => {
      if (!writes.some((w) => w.method === "claimInvocations")) return;
      counted();
      if (broken.on) throw new WritError("STORE_ERROR", "injected: the claim fails");
    },
  });
}

/** Lets the loop run what it can without the clock moving (it registers its pause's timer). */
async function settle(): Promise<void> {
  await new Promise((r) => setTimeout(r, 30));
  for (let k = 0; k < 20; k++) await tick();
}

for (const factory of [memoryFactory, sqliteFactory]) {
  describe(`failed claims on ${factory.name}`, () => {
    let inner: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store: inner, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("pause the loop 25, 50, 100 ... ms up to pollMs, not shortened by wake-ups; due work runs once the claim works", async () => {
      const broken = { on: true };
      let claims = 0;
      const store = failingClaims(inner, broken, () => claims++);
      const b = makeHostBench(store);
      await grantAuthority(b);
      const { invocation: first } = await b.host.submit(b.request({ params: { n: 1 } }));
      const worker = b.host.worker({ pollMs: 400 });
      worker.start();
      try {
        await until(() => claims >= 1, "the first claim");
        // Wall time passes, the clock does not: the failed claim is not retried (before: hundreds).
        await new Promise((r) => setTimeout(r, 300));
        expect(claims, "claims while the clock stood still").toBe(1);
        // The clock's timers while the loop pauses (its own pause's among them): the count the
        // loop is back at once the next pause's timer is set, after each failed claim.
        const paused = b.clock.pending();
        // Each pause: not over one millisecond early, over on time.
        for (const [k, pause] of [25, 50, 100, 200, 400, 400].entries()) {
          await until(() => b.clock.pending() === paused, `the timer of pause ${k + 1}`);
          b.clock.advance(pause - 1);
          await settle();
          expect(claims, `claims one ms before pause ${k + 1} (${pause} ms) ended`).toBe(k + 1);
          b.clock.advance(1);
          await until(() => claims === k + 2, `the claim after pause ${k + 1} (${pause} ms)`);
        }
        // An admission during a pause wakes the worker; the pause holds.
        await settle();
        const atWake = claims;
        const { invocation: second } = await b.host.submit(b.request({ params: { n: 2 } }));
        await settle();
        expect(claims, "claims after a wake-up during the pause").toBe(atWake);
        // The claim works again: the pause ends at pollMs and both invocations run.
        broken.on = false;
        b.clock.advance(400);
        for (const inv of [first, second]) {
          await untilRead(async () => (await b.host.get(b.scope, inv.invocationId))?.status === "succeeded", `invocation ${inv.invocationId} to succeed`);
        }
        expect(b.calls.length).toBe(2);
      } finally {
        await worker.stop();
      }
    });

    it("stop() ends a pause at once", async () => {
      const broken = { on: true };
      let claims = 0;
      const b = makeHostBench(failingClaims(inner, broken, () => claims++));
      await grantAuthority(b);
      await b.host.submit(b.request({ params: { n: 3 } }));
      const worker = b.host.worker({ pollMs: 60_000 });
      worker.start();
      await until(() => claims >= 1, "the first claim");
      await settle();
      // The clock never moves: only stop() can end the 25-ms pause.
      await expect(Promise.race([worker.stop().then(() => "stopped"), new Promise((r) => setTimeout(() => r("still paused"), 5_000))])).resolves.toBe("stopped");
      expect(claims).toBe(1);
    });
  });
}
