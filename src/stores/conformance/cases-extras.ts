/**
 * Policy versions, external completions, delivery ids, and the cross-scope sweep queries
 * (overdue parked invocations, expired pending approvals).
 */
import assert from "node:assert/strict";
import { readCommitted } from "../../core/store.js";
import type { CompletionRecord, PolicyVersion, Scope } from "../../core/types.js";
import { assertRecord, CROSS_SCOPE_CODES, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, invocation, newScope, step, uid } from "./fixtures.js";

function policyVersion(scope: Scope, version: number, over: Partial<PolicyVersion> = {}): PolicyVersion {
  return { ...scope, version, policyRef: `cedar:${uid("ref")}`, policies: "permit(principal, action, resource);", status: "active", activatedAt: T0, createdAt: T0, ...over };
}

function completion(scope: Scope, over: Partial<CompletionRecord> = {}): CompletionRecord {
  return { ...scope, completionId: uid("msg"), connector: "payments", externalRef: uid("op"), outcome: "success", result: { ok: true }, contentDigest: "sha256:x", disposition: "applied", receivedAt: T0, ...over };
}

export const extraCases: StoreConformanceCase[] = [
  {
    // Invariant: the read path (Store.read, through readCommitted) sees every write that committed
    // before it, scope rules included, and is refused once the store is closed.
    name: "read path: sees committed writes, keeps scopes apart, closed after close",
    async run(makeStore) {
      const scope = newScope();
      const inv = invocation(scope);
      const store = await makeStore();
      try {
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        assertRecord(await readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId)), inv, "invocation read on the read path");
        assert.equal(await readCommitted(store, (tx) => tx.getInvocation(newScope(), inv.invocationId)), null);
        const later = { ...inv, status: "cancelled" as const, updatedAt: T0 + 1 };
        await store.transact((tx) => tx.updateInvocation(scope, later));
        assert.equal((await readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId)))?.status, "cancelled");
      } finally {
        await store.close();
      }
      await rejectsWithCode(readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId)), ["STORE_CLOSED"], "read after close");
    },
  },
  {
    // Invariant: API keys are found by key id, listed per tenant only, and never move to another tenant.
    name: "api keys: by id, per tenant, never moved across tenants",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t1 = newScope().tenantId;
        const t2 = newScope().tenantId;
        const k1 = { keyId: uid("key"), tenantId: t1, spaces: ["*"], roles: ["submit" as const], hash: "sha256:a", name: "ci", createdAt: T0 };
        const k2 = { ...k1, keyId: uid("key"), createdAt: T0 + 1, roles: ["admin" as const] };
        const other = { ...k1, keyId: uid("key"), tenantId: t2 };
        await store.transact(async (tx) => {
          for (const k of [k2, k1, other]) await tx.putApiKey(k);
        });
        assertRecord(await store.transact((tx) => tx.getApiKey(k1.keyId)), k1, "key by id");
        assert.equal(await store.transact((tx) => tx.getApiKey(uid("key"))), null);
        assert.deepStrictEqual(
          (await store.transact((tx) => tx.listApiKeys(t1))).map((k) => k.keyId),
          [k1.keyId, k2.keyId],
        );
        const revoked = { ...k1, revokedAt: T0 + 5 };
        await store.transact((tx) => tx.putApiKey(revoked));
        assertRecord(await store.transact((tx) => tx.getApiKey(k1.keyId)), revoked, "revoked key");
        await rejectsWithCode(store.transact((tx) => tx.putApiKey({ ...k1, tenantId: t2 })), CROSS_SCOPE_CODES, "key moved to another tenant");
        assert.equal((await store.transact((tx) => tx.getApiKey(k1.keyId)))?.tenantId, t1);
      });
    },
  },
  {
    // Invariant: policy versions are kept per scope, replaced by (scope, version), listed ascending, invisible elsewhere.
    name: "policy versions: put replaces by version, list ascending, scoped",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const v2 = policyVersion(scope, 2);
        const v1 = policyVersion(scope, 1);
        await store.transact(async (tx) => {
          await tx.putPolicyVersion(scope, v2);
          await tx.putPolicyVersion(scope, v1);
        });
        const retired = { ...v1, status: "grace" as const, graceUntil: T0 + 1000 };
        await store.transact((tx) => tx.putPolicyVersion(scope, retired));
        const list = await store.transact((tx) => tx.listPolicyVersions(scope));
        assert.deepStrictEqual(
          list.map((v) => v.version),
          [1, 2],
        );
        assertRecord(list[0], retired, "replaced version 1");
        assert.deepStrictEqual(await store.transact((tx) => tx.listPolicyVersions(newScope())), []);
        await rejectsWithCode(store.transact((tx) => tx.putPolicyVersion(newScope(), v1)), CROSS_SCOPE_CODES, "policy version written to another scope");
      });
    },
  },
  {
    // Invariant: completions are unique per (scope, connector, completionId), listed by (connector, externalRef) in arrival order, scoped.
    name: "completions: unique ids, listed by reference in arrival order, updatable, scoped",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const ref = uid("op");
        const a = completion(scope, { externalRef: ref, receivedAt: T0 + 2 });
        const b = completion(scope, { externalRef: ref, receivedAt: T0 + 1, outcome: "failure", error: "declined" });
        const other = completion(scope, { externalRef: uid("op") });
        await store.transact(async (tx) => {
          await tx.insertCompletion(scope, a);
          await tx.insertCompletion(scope, b);
          await tx.insertCompletion(scope, other);
        });
        await rejectsWithCode(store.transact((tx) => tx.insertCompletion(scope, { ...a, externalRef: uid("op") })), "CONFLICT", "duplicate completion id");
        const list = await store.transact((tx) => tx.listCompletions(scope, "payments", ref));
        assert.deepStrictEqual(
          list.map((c) => c.completionId),
          [b.completionId, a.completionId],
        );
        const updated = { ...b, disposition: "contradictory" as const };
        await store.transact((tx) => tx.updateCompletion(scope, updated));
        assertRecord((await store.transact((tx) => tx.listCompletions(scope, "payments", ref)))[0], updated, "updated completion");
        await rejectsWithCode(store.transact((tx) => tx.updateCompletion(scope, completion(scope))), "NOT_FOUND", "update of a missing completion");
        assert.deepStrictEqual(await store.transact((tx) => tx.listCompletions(newScope(), "payments", ref)), []);
        await rejectsWithCode(store.transact((tx) => tx.updateCompletion(newScope(), updated)), CROSS_SCOPE_CODES, "completion updated in another scope");
      });
    },
  },
  {
    // Invariant: a delivery id is remembered once per (scope, connector); a repeat answers false and writes nothing.
    name: "deliveries: remembered once per scope and connector",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const id = uid("msg");
        assert.equal(await store.transact((tx) => tx.rememberDelivery(scope, "payments", id, T0)), true);
        assert.equal(await store.transact((tx) => tx.rememberDelivery(scope, "payments", id, T0 + 5)), false);
        assert.equal(await store.transact((tx) => tx.rememberDelivery(scope, "mail", id, T0)), true);
        assert.equal(await store.transact((tx) => tx.rememberDelivery(newScope(), "payments", id, T0)), true);
        await assert.rejects(
          store.transact(async (tx) => {
            await tx.rememberDelivery(scope, "payments", uid("msg"), T0);
            throw new Error("abort");
          }),
          /abort/,
        );
      });
    },
  },
  {
    // Invariant: a handed-off step is found by (connector, externalRef) in its own scope only.
    name: "steps: found by connector and external reference, scoped",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = uid("inv");
        const ref = uid("op");
        const s = step(scope, inv, 0, { status: "handed_off", externalRef: ref, connector: "payments" });
        await store.transact((tx) => tx.putStep(scope, s));
        assertRecord(await store.transact((tx) => tx.findStepByExternalRef(scope, "payments", ref)), s, "step by reference");
        assert.equal(await store.transact((tx) => tx.findStepByExternalRef(scope, "mail", ref)), null);
        assert.equal(await store.transact((tx) => tx.findStepByExternalRef(newScope(), "payments", ref)), null);
      });
    },
  },
  {
    // Invariant: the sweep queries find exactly the parked invocations past their deadline (not yet
    // flagged) and the pending approvals past expiry, across scopes, oldest first.
    name: "sweeps: overdue parked invocations and expired pending approvals across scopes",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const s1 = newScope();
        const s2 = newScope();
        // Far in the past so earlier cases' leftovers (at T0) do not interleave with ours.
        const base = 1_000;
        const due = invocation(s1, { status: "parked", deadlineAt: base + 10 });
        const dueEarlier = invocation(s2, { status: "parked", deadlineAt: base + 5 });
        const flagged = invocation(s1, { status: "parked", deadlineAt: base + 1, overdueAt: base + 2 });
        const later = invocation(s1, { status: "parked", deadlineAt: base + 1_000_000 });
        const running = invocation(s2, { status: "queued", deadlineAt: base });
        const apDue = approval(s1, { status: "pending", expiresAt: base + 3 });
        const apDone = approval(s2, { status: "approved", expiresAt: base });
        const apLater = approval(s2, { status: "pending", expiresAt: base + 1_000_000 });
        await store.transact(async (tx) => {
          for (const i of [due, dueEarlier, flagged, later, running]) await tx.insertInvocation({ tenantId: i.tenantId, spaceId: i.spaceId }, i);
          for (const a of [apDue, apDone, apLater]) await tx.putApproval({ tenantId: a.tenantId, spaceId: a.spaceId }, a);
        });
        const mine = new Set([due, dueEarlier, flagged, later, running].map((i) => i.invocationId));
        const overdue = (await store.transact((tx) => tx.listOverdueParked(base + 100, 1000))).filter((i) => mine.has(i.invocationId));
        assert.deepStrictEqual(
          overdue.map((i) => i.invocationId),
          [dueEarlier.invocationId, due.invocationId],
        );
        const myAps = new Set([apDue, apDone, apLater].map((a) => a.approvalId));
        const expired = (await store.transact((tx) => tx.listExpiredPendingApprovals(base + 100, 1000))).filter((a) => myAps.has(a.approvalId));
        assert.deepStrictEqual(
          expired.map((a) => a.approvalId),
          [apDue.approvalId],
        );
      });
    },
  },
  {
    // Invariant: the early-completion query finds exactly the completions still `early` received
    // before the bound, oldest first, in one scope or across all (docs/completions.md, Retention).
    name: "sweeps: early completions by age, in one scope or across scopes",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const s1 = newScope();
        const s2 = newScope();
        const base = 2_000;
        const old1 = completion(s1, { externalRef: uid("op"), disposition: "early", receivedAt: base + 2 });
        const old2 = completion(s2, { externalRef: uid("op"), disposition: "early", receivedAt: base + 1 });
        const young = completion(s1, { externalRef: uid("op"), disposition: "early", receivedAt: base + 1_000_000 });
        const applied = completion(s1, { externalRef: uid("op"), disposition: "applied", receivedAt: base });
        await store.transact(async (tx) => {
          for (const c of [old1, old2, young, applied]) await tx.insertCompletion({ tenantId: c.tenantId, spaceId: c.spaceId }, c);
        });
        const mine = new Set([old1, old2, young, applied].map((c) => c.completionId));
        const all = (await store.transact((tx) => tx.listEarlyCompletions(base + 100, 1000))).filter((c) => mine.has(c.completionId));
        assert.deepStrictEqual(all.map((c) => c.completionId), [old2.completionId, old1.completionId]);
        const inS1 = await store.transact((tx) => tx.listEarlyCompletions(Number.MAX_SAFE_INTEGER, 1000, s1));
        assert.deepStrictEqual(inS1.map((c) => c.completionId), [old1.completionId, young.completionId]);
        assert.deepStrictEqual((await store.transact((tx) => tx.listEarlyCompletions(Number.MAX_SAFE_INTEGER, 1, s1))).length, 1);
        await store.transact((tx) => tx.updateCompletion(s1, { ...inS1[0]!, disposition: "expired" }));
        assert.deepStrictEqual((await store.transact((tx) => tx.listEarlyCompletions(Number.MAX_SAFE_INTEGER, 1000, s1))).map((c) => c.completionId), [young.completionId]);
      });
    },
  },
];
