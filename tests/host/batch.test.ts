/**
 * Invocations processed together stay independent (docs/stores.md, "Batches"), on every store: a
 * worker claims eight at once and processes them side by side, so on PostgreSQL their begins and
 * settlements travel in shared `writ_batch` statements. Invariant: one invocation whose connector
 * throws ends as the same invocation run alone ends, and the other seven succeed with one call each.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

for (const factory of allStoreFactories()) {
  describe(`a batch of invocations on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("one connector that throws fails its invocation alone; the seven others succeed", async () => {
      const b = makeHostBench(store);
      await grantAuthority(b);
      b.replies.set("a", async (ctx) => {
        if ((ctx.input as { n?: number }).n === 3) throw new Error("boom");
        return { outcome: "success", externalRef: `ref-${ctx.invocationId}`, output: { ok: true } };
      });
      // The same throwing invocation, alone first: how it ends is what the batch must give it too.
      const lone = (await b.host.submit(b.request({ action: "one.once", params: { n: 3 } }))).invocation.invocationId;
      expect(await b.host.worker().runOnce()).toHaveLength(1);
      const aloneStatus = (await b.host.get(b.scope, lone))?.status;
      expect(aloneStatus).not.toBe("succeeded");
      b.calls.length = 0;
      const ids: string[] = [];
      for (let n = 0; n < 8; n++) ids.push((await b.host.submit(b.request({ action: "one.once", params: { n } }))).invocation.invocationId);
      const results = await b.host.worker({ concurrency: 8, batchSize: 8 }).runOnce();
      expect(results).toHaveLength(8);
      const statuses = await Promise.all(ids.map(async (id) => (await b.host.get(b.scope, id))?.status));
      expect(statuses.filter((s, i) => i !== 3 && s === "succeeded")).toHaveLength(7);
      expect(statuses[3]).toBe(aloneStatus);
      expect(b.calls).toHaveLength(8);
    });
  });
}
