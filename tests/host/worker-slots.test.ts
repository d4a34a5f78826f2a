/**
 * A worker's slot frees when its invocation's settlement is on its way to the store, not when the
 * settlement has been answered (docs/host.md, "Workers, leases, fencing"): the next claim then
 * travels with that settlement (on PostgreSQL in the same `writ_batch` statement) instead of one
 * batch after it. On every store.
 *
 * Invariants:
 * - with concurrency 1 and two queued invocations, the second is claimed while the first one's
 *   settle transition is held back by the test (the old worker waited for it: the test fails there);
 * - connector calls in flight never exceed the worker's concurrency (a settling invocation has no
 *   connector call left), checked with concurrency 1 and 2 over several invocations;
 * - every invocation succeeds with one connector call;
 * - with every settlement held, settling invocations free at most `concurrency` slots: a worker of
 *   concurrency 1 makes two connector calls and holds two invocations, no more, until they settle;
 * - a settlement that fails after its slot was freed (a store error: the invocation is abandoned
 *   to recovery) gives the slot back once: the invocations after it still run one at a time, and
 *   the worker ends with nothing in flight.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WritError } from "../../src/core/errors.js";
import type { Store } from "../../src/core/store.js";
import type { SettleInput } from "../../src/core/transitions.js";
import type { Scope } from "../../src/core/types.js";
import { allStoreFactories, withTransitions } from "../helpers/stores.js";
import { until } from "../helpers/wait.js";
import { grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

/** `store` whose settle transition first awaits `gate(input)` (which may throw instead). */
function gatedSettle(store: Store, gate: (input: SettleInput, scope: Scope) => Promise<void>): Store {
  return withTransitions(store, (own) => ({
    ...own,
    settle: async (scope, input) => {
      await gate(input, scope);
      return own.settle(scope, input);
    },
  }));
}

/** Submits `n` one-step invocations; their ids. */
async function submitMany(b: HostBench, n: number): Promise<string[]> {
  const ids = [];
  for (let i = 0; i < n; i++) ids.push((await b.host.submit(b.request())).invocation.invocationId);
  return ids;
}

/** A connector reply that counts the calls in flight at once (`peak()`), each lasting 2 ms. */
function countingReply(b: HostBench): { peak(): number } {
  let active = 0;
  let peak = 0;
  b.replies.set("a", async (ctx) => {
    active++;
    peak = Math.max(peak, active);
    await new Promise((r) => setTimeout(r, 2));
    active--;
    return { outcome: "success", externalRef: `ref-${ctx.invocationId}` };
  });
  return { peak: () => peak };
}

async function expectStatuses(b: HostBench, ids: readonly string[], status: string): Promise<void> {
  for (const id of ids) expect((await b.host.get(b.scope, id))?.status).toBe(status);
}

for (const factory of allStoreFactories()) {
  describe(`worker slots on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("claims the next invocation while the last one's settlement is on its way", async () => {
      let held: string | null = null;
      let holding = false;
      let claimedWhileHeld: string | null = null;
      const claimed: string[] = [];
      let release: () => void = () => undefined;
      const gate = async (input: SettleInput): Promise<void> => {
        if (held !== null) return;
        held = input.fence?.invocationId ?? "";
        holding = true;
        // Held until the worker claims another invocation, or 3 s (the old behaviour: no claim
        // comes while the settlement is pending, and the test then fails below).
        await new Promise<void>((resolve) => {
          release = resolve;
          setTimeout(resolve, 3000);
        });
        holding = false;
      };
      const b = makeHostBench(gatedSettle(store, gate), {
        onEvent: (e) => {
          if (e.type !== "invocation.claimed") return;
          claimed.push(e.invocationId);
          if (holding && e.invocationId !== held && claimedWhileHeld === null) {
            claimedWhileHeld = e.invocationId;
            release();
          }
        },
      });
      await grantAuthority(b);
      const ids = await submitMany(b, 2);
      const w = b.host.worker({ concurrency: 1, pollMs: 5 });
      w.start();
      try {
        await until(() => b.calls.length === 2, "two connector calls");
      } finally {
        await w.stop();
      }
      expect(held).not.toBeNull();
      expect(claimedWhileHeld).not.toBeNull();
      expect(ids).toContain(claimedWhileHeld);
      expect(claimed).toHaveLength(2);
      await expectStatuses(b, ids, "succeeded");
    });

    it("stalled settlements do not pile up: at most twice concurrency in flight", async () => {
      let releaseAll: () => void = () => undefined;
      const released = new Promise<void>((resolve) => {
        releaseAll = resolve;
        setTimeout(resolve, 20_000);
      });
      const b = makeHostBench(gatedSettle(store, () => released));
      await grantAuthority(b);
      const ids = await submitMany(b, 4);
      const w = b.host.worker({ concurrency: 1, pollMs: 5 });
      w.start();
      try {
        await until(() => b.calls.length === 2, "two connector calls");
        // Long enough for a third claim and call, were the slots not capped.
        await new Promise((r) => setTimeout(r, 300));
        expect(b.calls).toHaveLength(2);
        expect(w.inFlight()).toBe(2);
        releaseAll();
        await until(() => b.calls.length === ids.length, "four connector calls");
      } finally {
        releaseAll();
        await w.stop();
      }
      await expectStatuses(b, ids, "succeeded");
    });

    it("a settlement that fails after freeing its slot gives it back once", async () => {
      let failed: string | null = null;
      const b = makeHostBench(
        gatedSettle(store, async (input) => {
          if (failed !== null) return;
          failed = input.fence?.invocationId ?? "";
          throw new WritError("STORE_ERROR", "injected: the settlement's write fails");
        }),
      );
      await grantAuthority(b);
      const counting = countingReply(b);
      const ids = await submitMany(b, 4);
      const w = b.host.worker({ concurrency: 1, pollMs: 5 });
      w.start();
      try {
        await until(() => b.calls.length === ids.length, "four connector calls");
        await until(() => w.inFlight() === 0, "nothing in flight");
      } finally {
        await w.stop();
      }
      expect(counting.peak()).toBe(1);
      expect(b.calls).toHaveLength(ids.length);
      expect(ids).toContain(failed);
      // Abandoned to recovery: still running under the lost worker's lease (the test clock stands).
      await expectStatuses(b, [failed!], "running");
      await expectStatuses(b, ids.filter((id) => id !== failed), "succeeded");
    });

    for (const concurrency of [1, 2]) {
      it(`never has more connector calls in flight than its concurrency (${concurrency})`, async () => {
        const b = makeHostBench(store);
        await grantAuthority(b);
        const counting = countingReply(b);
        const ids = await submitMany(b, 8);
        const w = b.host.worker({ concurrency, pollMs: 5 });
        w.start();
        try {
          await until(() => b.calls.length === ids.length, "eight connector calls");
        } finally {
          await w.stop();
        }
        expect(counting.peak()).toBeLessThanOrEqual(concurrency);
        expect(counting.peak()).toBeGreaterThanOrEqual(1);
        expect(b.calls).toHaveLength(ids.length);
        await expectStatuses(b, ids, "succeeded");
      });
    }
  });
}
