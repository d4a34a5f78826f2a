/**
 * A claim whose acknowledgement is lost (docs/host.md, Workers, leases, fencing), on every store:
 * the claim commits, the worker gets STORE_ERROR and never processes what it claimed. Invariant:
 * the worker's heartbeat does not extend those unknown leases, even while it keeps heartbeating
 * other invocations it is processing, so they lapse after leaseMs and recovery runs them (found by
 * the simulator, docs/simulation.md "Found"; before the fix they stayed `running` forever).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCommitted, type Store } from "../../src/core/store.js";
import { faultStore } from "../helpers/fault-store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { tick, until } from "../helpers/wait.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

const LEASE_MS = 10_000;
const BEAT_MS = 3_000;

for (const factory of allStoreFactories()) {
  describe(`a claim with a lost acknowledgement on ${factory.name}`, () => {
    let inner: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store: inner, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("its leases are not extended by the worker's heartbeat: they lapse and recovery runs them", async () => {
      let beats = 0;
      const store = faultStore(inner, {
        failWhen: (c) => c.method === "claimInvocations",
        mode: "lost-ack",
        beforeCommit: (writes) => {
          if (writes.some((w) => w.method === "heartbeat")) beats++;
        },
      });
      const b = makeHostBench(store, { timeoutMs: 60_000 }); // the busy call outlives the test's 12 s
      await grantAuthority(b);
      const { invocation: lost } = await b.host.submit(b.request({ action: "one.idem", params: { n: 1 }, idempotencyKey: "lost" }));
      const w1 = b.host.worker({ id: "w1", leaseMs: LEASE_MS, heartbeatMs: BEAT_MS });
      // The claim commits (the invocation is leased to w1) and w1 is told it failed.
      await expect(w1.runOnce()).rejects.toMatchObject({ code: "STORE_ERROR" });
      const leased = await readCommitted(inner, (tx) => tx.getInvocation(b.scope, lost.invocationId));
      expect(leased).toMatchObject({ status: "running", leaseOwner: "w1", attemptCount: 1 });

      // w1 goes on processing another invocation, whose call hangs, and heartbeats meanwhile.
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      b.replies.set("a", async () => {
        await gate;
        return { outcome: "success", externalRef: "ref-busy" };
      });
      const { invocation: busy } = await b.host.submit(b.request({ action: "one.idem", params: { n: 2 }, idempotencyKey: "busy" }));
      const running = w1.runOnce();
      await until(() => b.calls.length === 1, "the busy invocation's call");
      const start = b.clock.now();
      while (b.clock.now() - start < 4 * BEAT_MS) {
        b.clock.advance(500);
        await until(() => store.openTransactions() === 0, "the heartbeat's commit");
        for (let k = 0; k < 5; k++) await tick(); // it re-arms once its commit resolved
      }
      expect(beats).toBeGreaterThanOrEqual(3);
      // 12 s later: the busy lease is still held (its heartbeat runs), the lost one lapsed.
      const now = b.clock.now();
      const busyNow = await readCommitted(inner, (tx) => tx.getInvocation(b.scope, busy.invocationId));
      expect(busyNow!.leaseExpiresAt!).toBeGreaterThan(now);
      const lostNow = await readCommitted(inner, (tx) => tx.getInvocation(b.scope, lost.invocationId));
      expect(lostNow).toMatchObject({ status: "running", leaseOwner: "w1" });
      expect(lostNow!.leaseExpiresAt!).toBeLessThanOrEqual(now);

      // Recovery: another worker claims the lapsed lease and runs it to the end.
      b.replies.delete("a");
      const w2 = b.host.worker({ id: "w2", leaseMs: LEASE_MS, heartbeatMs: BEAT_MS });
      expect(await w2.runOnce()).toEqual(["succeeded"]);
      expect(await b.host.get(b.scope, lost.invocationId)).toMatchObject({ status: "succeeded", attemptCount: 2 });

      release();
      expect(await running).toEqual(["succeeded"]);
      expect((await b.host.get(b.scope, busy.invocationId))?.status).toBe("succeeded");
    });
  });
}
