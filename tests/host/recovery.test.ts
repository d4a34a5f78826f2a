/**
 * Bounded recovery and what counts as an attempt (docs/host.md, Recovery and "What counts as an
 * attempt"), on every store: the budget is checked first (before compensation and before the
 * action is resolved), `attemptCount` counts claims over the invocation's life (re-queues do not
 * reset it, an approval does not refill it, an operator's resolution opens a new budget, a
 * circuit-open re-queue hands its claim back), an unregistered action version is settled from its
 * checkpoints, and the default and refused values of `recoveryMaxAttempts`. Each test states the
 * invariant it checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ActionDefinition } from "../../src/core/action.js";
import type { Store } from "../../src/core/store.js";
import type { StepCheckpoint } from "../../src/core/types.js";
import { createHostCore } from "../../src/host/host.js";
import type { HostOptions } from "../../src/host/options.js";
import { systemRandom } from "../../src/node/clock.js";
import { KEYS } from "../boundary/fixture.js";
import { allStoreFactories } from "../helpers/stores.js";
import { until } from "../helpers/wait.js";
import { actions, crypto, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const approver = (id: string) => ({ actor: { type: "user" as const, id }, roles: ["approve"] });
const never = (): Promise<never> => new Promise(() => undefined);

/** The fixture's actions after a deploy: `id` at another version, or gone (`null`). */
function deployed(id: string, version: string | null): ActionDefinition<unknown>[] {
  const out: ActionDefinition<unknown>[] = [];
  for (const a of actions as ActionDefinition<unknown>[]) {
    if (a.id !== id) out.push(a);
    else if (version !== null) out.push({ ...a, version });
  }
  return out;
}

for (const factory of allStoreFactories()) {
  describe(`recovery on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(overrides: Partial<HostOptions> = {}): Promise<HostBench> {
      const b = makeHostBench(store, overrides);
      await grantAuthority(b);
      return b;
    }
    /** A second host on the same store and clock, as after a deploy (its own connector and calls). */
    function redeployed(b: HostBench, list: ActionDefinition<unknown>[], overrides: Partial<HostOptions> = {}): HostBench {
      return makeHostBench(store, { clock: b.clock, actions: list, ...overrides });
    }
    /** Claims the invocation `n` times as workers that die at once (their leases lapse). */
    async function ghostClaims(b: HostBench, n: number): Promise<void> {
      for (let i = 0; i < n; i++) {
        const got = await store.transact((tx) => tx.claimInvocations({ owner: `ghost-${i}`, tokens: [`ghost-tok-${i}-${b.clock.now()}`], now: b.clock.now(), leaseMs: 10, limit: 100 }));
        expect(got).toHaveLength(1);
        b.clock.advance(11);
      }
    }
    const inv = async (b: HostBench, id: string) => (await b.host.get(b.scope, id))!;

    // Item 1. Invariant: the budget is checked before compensation. A worker that dies while
    // compensating (undo of step b in flight) is reclaimed until the budget is spent; the claim
    // after it settles reconciliation_required (RECOVERY_EXHAUSTED) without calling any undo again,
    // and the undo's started step becomes unknown with its key no longer in progress.
    it("item 1: a crash during compensation ends reconciliation_required after the budget, no further undo call", async () => {
      const b = await bench({ recoveryMaxAttempts: 3 });
      b.replies.set("c", { outcome: "permanent_failure", reason: "card declined" });
      b.replies.set("undo-b", never);
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      void b.host.worker({ leaseMs: 1000, id: "dead" }).runOnce();
      await until(() => b.calls.some((c) => c.operation === "undo-b"), "the undo of step b to start");
      b.clock.advance(1001);
      expect((await inv(b, invocation.invocationId)).compensating).toBe(true);
      await ghostClaims(b, 2); // claims 2 and 3 die too
      b.replies.set("undo-b", { outcome: "success", externalRef: "undo-ref", output: {} }); // were it called again, compensation would finish
      const before = b.calls.length;
      expect(await b.host.worker({ id: "rescuer" }).runOnce()).toEqual(["reconciliation_required"]);
      expect(b.calls).toHaveLength(before);
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b", "c", "undo-b"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "RECOVERY_EXHAUSTED", reason: "recovery attempts exhausted (4/3)", stepIndex: 2 });
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(4);
      const undo = await store.transact((tx) => tx.getSteps(b.scope, `${invocation.invocationId}:undo:1`));
      expect(undo.map((s) => s.status)).toEqual(["unknown"]);
      const attempts = await store.transact((tx) => tx.listAttempts(b.scope, { invocationId: `${invocation.invocationId}:undo:1` }));
      expect(attempts.map((a) => a.state)).toEqual(["UNKNOWN"]);
    });

    // Item 1. Invariant: the budget is checked before the action is resolved: an invocation whose
    // claims exceed it settles RECOVERY_EXHAUSTED even when its action is no longer registered.
    it("item 1: the budget is checked before action resolution (works with the action gone)", async () => {
      const b = await bench({ recoveryMaxAttempts: 3 });
      const { invocation } = await b.host.submit(b.request());
      await ghostClaims(b, 3);
      const later = redeployed(b, deployed("one.idem", null), { recoveryMaxAttempts: 3 });
      expect(await later.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "RECOVERY_EXHAUSTED", reason: "recovery attempts exhausted (4/3)", stepIndex: 0 });
      expect([b.calls.length, later.calls.length]).toEqual([0, 0]);
      expect((await inv(b, invocation.invocationId)).status).toBe("reconciliation_required");
    });

    // Item 2. Invariant: attemptCount counts every claim; a transient-failure retry does not reset
    // it, and a succeeded invocation shows the claims it took in API answers.
    it("item 2: retries keep counting; succeeded shows its claims", async () => {
      const b = await bench();
      let n = 0;
      b.replies.set("a", () => (++n < 3 ? { outcome: "transient_failure", reason: "503" } : { outcome: "success", externalRef: "ref-3", output: { n } }));
      const { invocation } = await b.host.submit(b.request());
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["queued"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(1);
      b.clock.advance(20_000);
      expect(await w.runOnce()).toEqual(["queued"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(2);
      b.clock.advance(20_000);
      expect(await w.runOnce()).toEqual(["succeeded"]);
      expect(await inv(b, invocation.invocationId)).toMatchObject({ status: "succeeded", attemptCount: 3, retryCount: 2 });
      const listed = await b.host.list(b.scope);
      expect(listed.find((i) => i.invocationId === invocation.invocationId)?.attemptCount).toBe(3);
    });

    // Item 2. Invariant: an approval does not refill a spent budget. Claims 1-2 died, claim 3
    // opened the approval; once approved, claim 4 exceeds 3 and goes to reconciliation, uncalled.
    it("item 2: an approval does not refill an exhausted budget", async () => {
      const b = await bench({ recoveryMaxAttempts: 3 });
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request());
      await ghostClaims(b, 2);
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const { approvalId } = await inv(b, invocation.invocationId);
      await b.host.approvals.approve(b.scope, approvalId!, approver("alice"));
      expect(await inv(b, invocation.invocationId)).toMatchObject({ status: "queued", attemptCount: 3 });
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      expect(b.calls).toHaveLength(0);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "RECOVERY_EXHAUSTED", reason: "recovery attempts exhausted (4/3)" });
    });

    // Item 2. Invariant: a completion's hand-back to the queue does not reset the count.
    it("item 2: a completion re-queueing the next step keeps counting", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "accepted", externalRef: "op-1" });
      const { invocation } = await b.host.submit(b.request({ action: "long.two" }));
      expect(await b.host.worker().runOnce()).toEqual(["parked"]);
      await b.host.complete(b.scope, { connector: "c", externalRef: "op-1", outcome: "success", result: { ok: true } });
      expect(await inv(b, invocation.invocationId)).toMatchObject({ status: "queued", attemptCount: 1 });
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(2);
    });

    // Item 2. Invariant: a circuit-open re-queue (before any evaluation or call) hands its claim
    // back, so an outage does not spend the budget; the claim that runs is counted.
    it("item 2: a circuit-open re-queue is not counted", async () => {
      const b = await bench({ breaker: { failureThreshold: 1, cooldownMs: 10_000 } });
      b.replies.set("a", { outcome: "transient_failure", reason: "503" });
      await b.host.submit(b.request({ action: "one.once" }));
      expect(await b.host.worker().runOnce()).toEqual(["failed"]);
      b.replies.delete("a");
      const { invocation } = await b.host.submit(b.request({ action: "one.once" }));
      expect(await b.host.worker().runOnce()).toEqual(["queued"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(0);
      b.clock.advance(10_000);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(1);
    });

    // Item 2. Invariant: an operator's resolution opens a new budget without resetting the count:
    // the resumed steps run (claim 5 counts as 1 of 3) and attemptCount keeps the whole life.
    it("item 2: an operator's resolution opens a new budget; attemptCount keeps counting", async () => {
      const b = await bench({ recoveryMaxAttempts: 3 });
      b.replies.set("b", never);
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      void b.host.worker({ leaseMs: 1000, id: "dead" }).runOnce();
      await until(() => b.calls.length === 2, "step b to start");
      b.clock.advance(1001);
      await ghostClaims(b, 2);
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "RECOVERY_EXHAUSTED", reason: "recovery attempts exhausted (4/3)", stepIndex: 1 });
      await b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome: "succeeded", externalRef: "ref-ops", note: "done by hand", by: { type: "user", id: "op" } });
      expect(await inv(b, invocation.invocationId)).toMatchObject({ status: "queued", attemptCount: 4, recoveryBase: 4 });
      b.replies.delete("b");
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b", "c"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(5);
    });

    // Item 3. Invariant: an invocation whose action version is not registered, with no step
    // started, fails with ACTION_VERSION_UNAVAILABLE (the version changed, or the action is gone).
    for (const version of ["2", null]) {
      it(`item 3: no step started, action ${version === null ? "removed" : "at another version"} -> failed ACTION_VERSION_UNAVAILABLE`, async () => {
        const b = await bench();
        const { invocation } = await b.host.submit(b.request());
        const later = redeployed(b, deployed("one.idem", version));
        expect(await later.host.worker().runOnce()).toEqual(["failed"]);
        const done = await inv(b, invocation.invocationId);
        expect(done.lastError).toMatch(/^ACTION_VERSION_UNAVAILABLE: action one\.idem@1 is not registered on this host/);
        expect(await b.host.reconcile.list(b.scope)).toEqual([]);
        expect([b.calls.length, later.calls.length]).toEqual([0, 0]);
      });
    }

    // Item 3. Invariant: a step that started (idempotent action: the provider may have acted)
    // under a version no longer registered opens a reconciliation, never a blind failed; the
    // step, its attempt and the key become unknown; nothing is called again.
    it("item 3: a started step under an unregistered version -> reconciliation_required, step unknown", async () => {
      const b = await bench();
      b.replies.set("a", never);
      const { invocation } = await b.host.submit(b.request());
      void b.host.worker({ leaseMs: 1000, id: "dead" }).runOnce();
      await until(() => b.calls.length === 1, "the first call");
      b.clock.advance(1001);
      const later = redeployed(b, deployed("one.idem", "2"));
      expect(await later.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      expect([b.calls.length, later.calls.length]).toEqual([1, 0]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "ACTION_VERSION_UNAVAILABLE", stepIndex: 0, status: "open" });
      const steps = await store.transact((tx) => tx.getSteps(b.scope, invocation.invocationId));
      expect(steps.map((s) => s.status)).toEqual(["unknown"]);
      const idem = await store.transact((tx) => tx.getIdempotency(b.scope, "one.idem", invocation.idempotencyKey));
      expect(idem?.state).toBe("unknown");
    });

    // Item 3. Invariant: steps that succeeded under a version no longer registered leave a
    // partially applied action: a reconciliation at the next step, not failed.
    it("item 3: earlier steps succeeded under an unregistered version -> reconciliation_required", async () => {
      const b = await bench();
      b.replies.set("b", { outcome: "transient_failure", reason: "503" });
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      expect(await b.host.worker().runOnce()).toEqual(["queued"]);
      b.clock.advance(20_000);
      const later = redeployed(b, deployed("three.idem", null));
      expect(await later.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "ACTION_VERSION_UNAVAILABLE", stepIndex: 1 });
      expect((await inv(b, invocation.invocationId)).status).toBe("reconciliation_required");
      expect(later.calls).toHaveLength(0);
    });

    // Item 3. Invariant: a handed-off step under an unregistered version goes to an operator with
    // the provider's reference (its completion cannot be applied by this action definition).
    it("item 3: a handed-off step under an unregistered version -> reconciliation with its reference", async () => {
      const b = await bench();
      const { invocation } = await b.host.submit(b.request({ action: "long.one" }));
      // The parking write lost (the step row is handed_off, the invocation still claimable).
      await ghostClaims(b, 1);
      const row: StepCheckpoint = { ...b.scope, stepKey: "sk-x", invocationId: invocation.invocationId, stepIndex: 0, stepName: "a", connector: "c", attemptId: "att-x", status: "handed_off", externalRef: "op-77", startedAt: b.clock.now() };
      await store.transact((tx) => tx.putStep(b.scope, row));
      const later = redeployed(b, deployed("long.one", "9"));
      expect(await later.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec).toMatchObject({ reasonCode: "ACTION_VERSION_UNAVAILABLE", stepIndex: 0, externalRef: "op-77" });
    });

    // Item 9. Invariant: the default recoveryMaxAttempts is max(5, the largest retry cap), so an
    // action allowed 7 attempts is never cut short by recovery: its 7th claim succeeds.
    it("item 9: default recoveryMaxAttempts is max(5, retry.maxAttempts); a 7-attempt retry runs to the end", async () => {
      expect(makeHostBench(store).host.context.r.recoveryMaxAttempts).toBe(5);
      const b = await bench({ retry: { maxAttempts: 7, baseDelayMs: 10, maxDelayMs: 10 }, breaker: { failureThreshold: 100 } });
      expect(b.host.context.r.recoveryMaxAttempts).toBe(7);
      let n = 0;
      b.replies.set("a", () => (++n < 7 ? { outcome: "transient_failure", reason: "503" } : { outcome: "success", externalRef: "ref-7", output: {} }));
      const { invocation } = await b.host.submit(b.request());
      const results: string[] = [];
      for (let i = 0; i < 7; i++) {
        results.push(...(await b.host.worker().runOnce()));
        b.clock.advance(100);
      }
      expect(results).toEqual([...Array<string>(6).fill("queued"), "succeeded"]);
      expect((await inv(b, invocation.invocationId)).attemptCount).toBe(7);
    });

    // Item 9. Invariant: refused values (not a positive integer, Infinity, or below a retry cap)
    // throw INVALID_OPTION naming recoveryMaxAttempts, and no host is made.
    it("item 9: refused recoveryMaxAttempts values", () => {
      const base: HostOptions = { store, actions, connectors: [], policy: { evaluate: () => ({ result: "ALLOW", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] }, signingKey: KEYS.trusted, clock: makeHostBench(store).clock, crypto, random: systemRandom, allowCleartextSensitive: true };
      for (const bad of [0, -1, 2.5, Number.POSITIVE_INFINITY, Number.NaN, "5" as unknown as number]) {
        expect(() => createHostCore({ ...base, recoveryMaxAttempts: bad }), String(bad)).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("recoveryMaxAttempts must be a positive integer") }));
      }
      expect(() => createHostCore({ ...base, recoveryMaxAttempts: 4, retry: { maxAttempts: 6 } })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("recoveryMaxAttempts (4) must be at least retry.maxAttempts (6)") }));
      const greedy = [...actions, { ...actions[0]!, id: "greedy", retry: { maxAttempts: 9 } }];
      expect(() => createHostCore({ ...base, actions: greedy, recoveryMaxAttempts: 8 })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("the retry.maxAttempts of action greedy (9)") }));
      expect(createHostCore({ ...base, actions: greedy }).context.r.recoveryMaxAttempts).toBe(9);
      expect(createHostCore({ ...base, recoveryMaxAttempts: 3 }).context.r.recoveryMaxAttempts).toBe(3);
    });
  });
}
