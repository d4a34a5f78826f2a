/**
 * Retention as a property (docs/retention.md), on every store: for random mixes of invocation
 * states, ages, journal states (sealed or not), archive watermarks and holds (open
 * reconciliation, pending approval), one pruner run deletes exactly the invocations that are ended
 * AND older than the window AND archived AND not held, and leaves every other row and the journal
 * as they were. The seed is printed; WRIT_SEED replays it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import type { InvocationStatus } from "../../src/core/types.js";
import { checkPruneMix, type MixItem, type PruneMix } from "../../src/stores/conformance/cases-retention.js";
import { fcRun } from "../helpers/seed.js";
import { allStoreFactories } from "../helpers/stores.js";
import type { Store } from "../../src/core/store.js";

const STATUSES: InvocationStatus[] = ["succeeded", "failed", "denied", "cancelled", "queued", "running", "parked", "awaiting_approval", "reconciliation_required"];

const item: fc.Arbitrary<MixItem> = fc.record({
  scope: fc.constantFrom(0 as const, 1 as const),
  status: fc.constantFrom(...STATUSES),
  old: fc.boolean(),
  sealed: fc.boolean(),
  openReconciliation: fc.boolean(),
  pendingApproval: fc.boolean(),
});
const mix: fc.Arbitrary<PruneMix> = fc.record({
  items: fc.array(item, { minLength: 1, maxLength: 10 }),
  archived: fc.tuple(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true })),
});

for (const factory of allStoreFactories()) {
  describe(`retention property: ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => {
      await cleanup();
    });
    it("a prune deletes exactly what is ended, older than the window, archived and not held", async () => {
      const runs = factory.name === "postgres" ? 15 : 40;
      let n = 0;
      await fc.assert(
        fc.asyncProperty(mix, async (m) => {
          n += 1;
          await checkPruneMix(store, m, `${factory.name} run ${n}`);
        }),
        fcRun("retention", `${factory.name}: prune exactly`, runs),
      );
    }, 120_000);
  });
}
