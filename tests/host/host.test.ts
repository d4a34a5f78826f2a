/**
 * The durable host (SPEC 4) on every store: admission, evaluation, execution, every outcome rule,
 * retries, reconciliation, compensation, breakers, cancellation, recovery and fencing. Each test
 * states the invariant it checks.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import type { Store } from "../../src/core/store.js";
import { sealJournalNow } from "../../src/index.js";
import { allStoreFactories } from "../helpers/stores.js";
import { KEYS } from "../boundary/fixture.js";
import { crypto, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";
import { until } from "../helpers/wait.js";


async function journalOk(b: HostBench): Promise<void> {
  const v = await verifyStoredJournal(b.store, crypto, createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]), b.scope);
  expect(v.problems).toEqual([]);
  expect(v.entries).toBeGreaterThan(0);
}

for (const factory of allStoreFactories()) {
  describe(`host on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(overrides = {}): Promise<HostBench> {
      const b = makeHostBench(store, overrides);
      await grantAuthority(b);
      return b;
    }

    // Invariant: a submitted request is evaluated, signed, executed once and settled succeeded.
    it("submit -> worker -> succeeded, journal verifies", async () => {
      const b = await bench();
      const { invocation, replayed } = await b.host.submit(b.request());
      expect(replayed).toBe(false);
      expect(invocation.status).toBe("queued");
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      const done = await b.host.get(b.scope, invocation.invocationId);
      expect(done?.status).toBe("succeeded");
      expect(done?.result).toEqual({ a: { step: "a" } });
      expect(b.calls).toHaveLength(1);
      expect(b.events.map((e) => e.type)).toEqual(["invocation.submitted", "invocation.claimed", "invocation.succeeded"]);
      await journalOk(b);
    });

    // Invariant (SPEC 4.2): admission is idempotent by key; another digest under the key conflicts;
    // invalid params are refused with the issues and nothing is stored.
    it("admission: replay, conflict, validation", async () => {
      const b = await bench();
      const req = b.request();
      const first = await b.host.submit(req);
      const again = await b.host.submit(req);
      expect(again.replayed).toBe(true);
      expect(again.invocation.invocationId).toBe(first.invocation.invocationId);
      await expect(b.host.submit({ ...req, params: { n: 2 } })).rejects.toMatchObject({ code: "IDEMPOTENCY_CONFLICT" });
      await expect(b.host.submit({ ...b.request(), params: { n: "x" } })).rejects.toMatchObject({ code: "VALIDATION_FAILED", details: { issues: [expect.stringContaining("n")] } });
      await expect(b.host.submit({ ...b.request(), action: "nope" })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
      await expect(b.host.submit({ junk: true })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
      expect(await b.host.list(b.scope)).toHaveLength(1);
      // Leave nothing claimable behind: workers claim across scopes and tests share the store.
      await b.host.cancel(b.scope, first.invocation.invocationId, { type: "user", id: "test" });
    });

    // Invariant: DENY ends denied with reasons and calls no connector.
    it("DENY -> denied", async () => {
      const b = await bench();
      b.verdict.current = "DENY";
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.reasons?.[0]).toContain("DENY");
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: REQUIRE_APPROVAL parks the invocation without a lease and opens a pending approval bound to its digest.
    it("REQUIRE_APPROVAL -> awaiting_approval with a pending approval", async () => {
      const b = await bench();
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const inv = await b.host.get(b.scope, invocation.invocationId);
      expect(inv?.leaseOwner).toBeUndefined();
      const ap = await store.transact((tx) => tx.getApproval(b.scope, inv!.approvalId!));
      expect(ap?.status).toBe("pending");
      expect(ap?.requestDigest).toBe(invocation.requestDigest);
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: a transient failure of an idempotent action is retried after a backoff, under a new
    // decision, with the same step idempotency key.
    it("transient failure -> backoff -> retry under a new decision -> succeeded", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "transient_failure", reason: "503" });
      const { invocation } = await b.host.submit(b.request());
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["queued"]);
      const queued = await b.host.get(b.scope, invocation.invocationId);
      expect(queued?.retryCount).toBe(1);
      expect(queued!.runAt).toBeGreaterThanOrEqual(b.clock.now() + 500);
      expect(queued!.runAt).toBeLessThanOrEqual(b.clock.now() + 1000);
      expect(await w.runOnce()).toEqual([]); // not before runAt
      b.clock.advance(1000);
      b.replies.delete("a");
      expect(await w.runOnce()).toEqual(["succeeded"]);
      expect(b.calls).toHaveLength(2);
      expect(b.calls[0]!.idempotencyKey).toBe(b.calls[1]!.idempotencyKey);
      expect(b.calls[0]!.decisionId).not.toBe(b.calls[1]!.decisionId);
    });

    // Invariant: a non-idempotent action is never retried; retries stop at maxAttempts.
    it("transient failure of a non-idempotent action -> failed; retries exhausted -> failed", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "transient_failure", reason: "503" });
      const once = await b.host.submit(b.request({ action: "one.once" }));
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["failed"]);
      expect(b.calls).toHaveLength(1);
      const limited = await b.host.submit(b.request({ action: "limited" }));
      expect(await w.runOnce()).toEqual(["queued"]);
      b.clock.advance(1000);
      expect(await w.runOnce()).toEqual(["failed"]);
      expect(b.calls).toHaveLength(3);
      expect((await b.host.get(b.scope, once.invocation.invocationId))?.status).toBe("failed");
      expect((await b.host.get(b.scope, limited.invocation.invocationId))?.status).toBe("failed");
    });

    // Invariant: an unknown outcome goes to a human, never to a retry; the resolution is journaled with the operator.
    it("ambiguous -> reconciliation_required with a record; operator resolves succeeded", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "ambiguous", reason: "reset after send" });
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope, { status: "open" });
      expect(rec).toMatchObject({ invocationId: invocation.invocationId, stepIndex: 0, reasonCode: "OUTCOME_AMBIGUOUS", status: "open" });
      b.clock.advance(60_000);
      expect(await b.host.worker().runOnce()).toEqual([]); // never retried automatically
      await expect(b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome: "succeeded", note: "", by: { type: "user", id: "op" } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      const done = await b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome: "succeeded", externalRef: "re_99", note: "checked the provider dashboard", by: { type: "user", id: "op-1" } });
      expect(done.status).toBe("succeeded");
      expect(b.calls).toHaveLength(1);
      await sealJournalNow(store, b.scope); // PostgreSQL seals after commit, not before it resolves
      const entries = await store.transact((tx) => tx.readJournal(b.scope, {}));
      const resolved = entries.find((e) => e.type === "reconciliation.resolved");
      expect(resolved?.data).toMatchObject({ outcome: "succeeded", by: { type: "user", id: "op-1" }, externalRef: "re_99" });
      await expect(b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome: "failed", note: "again", by: { type: "user", id: "op" } })).rejects.toMatchObject({ code: "INVALID_STATE" });
      await journalOk(b);
    });

    // Invariant: resolving a middle step as succeeded resumes the remaining steps under a new decision, without repeating earlier steps.
    it("middle step timed out -> resolved succeeded -> remaining step runs", async () => {
      const b = await bench();
      b.replies.set("b", { outcome: "timeout" });
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope, { status: "open" });
      expect(rec?.stepIndex).toBe(1);
      b.replies.delete("b");
      const resumed = await b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome: "succeeded", note: "b went through", by: { type: "user", id: "op" } });
      expect(resumed.status).toBe("queued");
      expect(await w.runOnce()).toEqual(["succeeded"]);
      expect(b.calls.map((c) => c.step.name)).toEqual(["a", "b", "c"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.status).toBe("succeeded");
    });

    // Invariant: a permanent failure runs the compensations of the succeeded steps in reverse order, then fails.
    it("permanent failure of step 3 compensates steps 2 then 1", async () => {
      const b = await bench();
      b.replies.set("c", { outcome: "permanent_failure", reason: "out of stock" });
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      expect(await b.host.worker().runOnce()).toEqual(["failed"]);
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b", "c", "undo-b", "undo-a"]);
      expect(b.calls[3]!.input).toEqual({ step: "b" });
      const inv = await b.host.get(b.scope, invocation.invocationId);
      expect(inv?.status).toBe("failed");
      expect(inv?.compensating).toBe(false);
      await journalOk(b);
    });

    // Invariant: after N consecutive transient failures the breaker refuses the call before the provider and re-queues after the cooldown.
    it("circuit breaker opens and re-queues without calling the provider", async () => {
      const b = await bench({ breaker: { failureThreshold: 2, cooldownMs: 10_000 } });
      b.replies.set("a", { outcome: "transient_failure", reason: "503" });
      const w = b.host.worker();
      for (let i = 0; i < 2; i++) {
        await b.host.submit(b.request({ action: "one.once" }));
        expect(await w.runOnce()).toEqual(["failed"]);
      }
      const { invocation } = await b.host.submit(b.request({ action: "one.once" }));
      expect(await w.runOnce()).toEqual(["queued"]);
      expect(b.calls).toHaveLength(2);
      const q = await b.host.get(b.scope, invocation.invocationId);
      expect(q?.runAt).toBe(b.clock.now() + 10_000);
      expect((await b.host.breakers(b.scope))[0]).toMatchObject({ connector: "c", operation: "a", state: "open" });
      b.replies.delete("a");
      b.clock.advance(10_000);
      expect(await w.runOnce()).toEqual(["succeeded"]);
      expect((await b.host.breakers(b.scope))[0]?.state).toBe("closed");
    });

    it("cancel: queued -> cancelled; otherwise refused", async () => {
      const b = await bench();
      const { invocation } = await b.host.submit(b.request());
      const c = await b.host.cancel(b.scope, invocation.invocationId, { type: "user", id: "u" });
      expect(c.status).toBe("cancelled");
      expect(await b.host.worker().runOnce()).toEqual([]);
      await expect(b.host.cancel(b.scope, invocation.invocationId, { type: "user", id: "u" })).rejects.toMatchObject({ code: "INVALID_STATE" });
      await expect(b.host.cancel(b.scope, "inv_missing", { type: "user", id: "u" })).rejects.toMatchObject({ code: "NOT_FOUND" });
      await expect(b.host.cancel({ tenantId: "other", spaceId: "s" }, invocation.invocationId, { type: "user", id: "u" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    // Invariants (SPEC 4.3, 4.6): a worker whose lease expired writes nothing more and its late
    // reply is discarded; the idempotent step is called again with the same key by the new owner.
    it("expired lease: the stale worker's late settlement is refused; recovery re-calls the idempotent step with the same key", async () => {
      const b = await bench({ timeoutMs: 1_000_000 });
      let release!: (v: unknown) => void;
      b.replies.set("a", () => new Promise((r) => (release = r)));
      const { invocation } = await b.host.submit(b.request());
      const stale = b.host.worker({ leaseMs: 1000, id: "stale" }).runOnce();
      await until(() => b.calls.length === 1, "first call");
      b.clock.advance(1001);
      b.replies.delete("a");
      expect(await b.host.worker({ leaseMs: 60_000, id: "fresh" }).runOnce()).toEqual(["succeeded"]);
      expect(b.calls).toHaveLength(2);
      expect(b.calls[1]!.idempotencyKey).toBe(b.calls[0]!.idempotencyKey);
      release({ outcome: "success", externalRef: "late" });
      expect(await stale).toEqual(["lease_lost"]);
      const inv = await b.host.get(b.scope, invocation.invocationId);
      expect(inv?.status).toBe("succeeded");
      const attempts = await store.transact((tx) => tx.listAttempts(b.scope, { invocationId: invocation.invocationId }));
      // The interrupted attempt is closed as superseded by the one that took over (and journaled).
      expect(attempts.map((a) => [a.state, a.reasonCode])).toEqual([
        ["UNKNOWN", "ATTEMPT_SUPERSEDED"],
        ["SUCCEEDED", undefined],
      ]);
      await journalOk(b);
    });

    // Invariant (SPEC 4.6): a non-idempotent step with intent but no outcome is never called again: unknown + reconciliation.
    it("non-idempotent step interrupted after intent -> reconciliation_required, not re-called", async () => {
      const b = await bench({ timeoutMs: 1_000_000 });
      b.replies.set("a", () => new Promise(() => undefined));
      const { invocation } = await b.host.submit(b.request({ action: "one.once" }));
      void b.host.worker({ leaseMs: 1000, id: "dead" }).runOnce();
      await until(() => b.calls.length === 1, "first call");
      b.clock.advance(1001);
      expect(await b.host.worker({ id: "rescuer" }).runOnce()).toEqual(["reconciliation_required"]);
      expect(b.calls).toHaveLength(1);
      const steps = await store.transact((tx) => tx.getSteps(b.scope, invocation.invocationId));
      expect(steps[0]?.status).toBe("unknown");
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec?.reasonCode).toBe("OUTCOME_AMBIGUOUS");
    });

    // Invariant (SPEC 4.6): more claims than recoveryMaxAttempts settle reconciliation_required before any evaluation or call.
    it("bounded recovery: attempts exhausted -> reconciliation_required, no call", async () => {
      // recoveryMaxAttempts may not be below a retry cap (both count the same claims).
      const b = await bench({ recoveryMaxAttempts: 2, retry: { maxAttempts: 2, baseDelayMs: 1000, maxDelayMs: 10_000 } });
      const { invocation } = await b.host.submit(b.request());
      for (let i = 0; i < 2; i++) {
        await store.transact((tx) => tx.claimInvocations({ owner: `ghost-${i}`, tokens: [`t${i}`], now: b.clock.now(), leaseMs: 10, limit: 100 }));
        b.clock.advance(11);
      }
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      expect(b.calls).toHaveLength(0);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec?.reason).toBe("recovery attempts exhausted (3/2)");
      expect((await b.host.get(b.scope, invocation.invocationId))?.status).toBe("reconciliation_required");
    });

    // Invariant (SPEC 4.6): a DENY after some steps succeeded settles reconciliation_required (partially applied), not denied.
    it("DENY after partial success -> reconciliation_required", async () => {
      const b = await bench();
      b.replies.set("b", { outcome: "transient_failure", reason: "503" });
      await b.host.submit(b.request({ action: "three.idem" }));
      expect(await b.host.worker().runOnce()).toEqual(["queued"]);
      b.verdict.current = "DENY";
      b.clock.advance(1000);
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const [rec] = await b.host.reconcile.list(b.scope);
      expect(rec?.reasonCode).toBe("DENIED_AFTER_PARTIAL");
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b"]);
    });

    // Invariant: the authority is checked again at execution: revoked between evaluation and execution -> refused, denied.
    it("authority revoked before execution -> denied with AUTHORITY_REVOKED", async () => {
      const b = await bench();
      await grantAuthority(b, { status: "revoked" });
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.reasons?.[0]).toContain("AUTHORITY_REVOKED");
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: a started worker drains its in-flight work on a graceful stop.
    it("worker loop: start processes queued work; stop drains", async () => {
      const b = await bench();
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push((await b.host.submit(b.request())).invocation.invocationId);
      const w = b.host.worker({ concurrency: 2, pollMs: 5 });
      w.start();
      await until(() => b.calls.length === 5, "five calls");
      await w.stop();
      for (const id of ids) {
        await until(() => true, "");
        expect((await b.host.get(b.scope, id))?.status).toBe("succeeded");
      }
      expect(w.inFlight()).toBe(0);
    });
  });
}
