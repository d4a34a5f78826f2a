/** Conformance cases: idempotency records, attempts, reconciliations, authorities, approvals. */
import assert from "node:assert/strict";
import { assertRecord, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, attempt, authority, idempotency, invocation, newScope, reconciliation, uid } from "./fixtures.js";

/** Ids of records, sorted: for lists whose order the port leaves open. */
function idsOf<T>(records: T[], id: (r: T) => string): string[] {
  return records.map(id).sort();
}

export const recordCases: StoreConformanceCase[] = [
  {
    // Invariant: there is one idempotency record per (scope, action, idempotencyKey); put
    // inserts or replaces it; the same key under another action is another record.
    name: "idempotency: get, put and replace one record per (action, key)",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const rec = idempotency(scope);
        const otherAction = idempotency(scope, { action: "payments.capture", idempotencyKey: rec.idempotencyKey });
        await store.transact(async (tx) => {
          assert.equal(await tx.getIdempotency(scope, rec.action, rec.idempotencyKey), null);
          await tx.putIdempotency(scope, rec);
          await tx.putIdempotency(scope, otherAction);
        });
        assertRecord(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey)), rec, "inserted record");
        const replaced = { ...rec, state: "succeeded" as const, resultAttemptId: rec.attemptId, updatedAt: T0 + 10 };
        await store.transact((tx) => tx.putIdempotency(scope, replaced));
        await store.transact(async (tx) => {
          assertRecord(await tx.getIdempotency(scope, rec.action, rec.idempotencyKey), replaced, "replaced record");
          assertRecord(await tx.getIdempotency(scope, otherAction.action, otherAction.idempotencyKey), otherAction, "same key, other action");
          assert.equal(await tx.getIdempotency(scope, rec.action, uid("key")), null, "unknown key");
        });
      });
    },
  },
  {
    // Invariant: listUnknownKeys returns exactly the scope's keys in state unknown that no
    // invocation of the store holds (bare executions), oldest first (updatedAt, action, key),
    // honours the limit, and never another scope's keys; a key that is resolved leaves the list.
    name: "idempotency: unknown keys of bare executions, oldest first, scoped",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const other = newScope();
        const held = invocation(scope);
        const late = idempotency(scope, { state: "unknown", updatedAt: T0 + 30 });
        const early = idempotency(scope, { state: "unknown", updatedAt: T0 + 10 });
        const tieB = idempotency(scope, { state: "unknown", updatedAt: T0 + 20, action: "payments.refund", idempotencyKey: "zz-b" });
        const tieA = idempotency(scope, { state: "unknown", updatedAt: T0 + 20, action: "payments.capture", idempotencyKey: "zz-a" });
        const ofInvocation = idempotency(scope, { state: "unknown", invocationId: held.invocationId, action: held.action, idempotencyKey: held.idempotencyKey });
        const known = idempotency(scope, { state: "failed" });
        const running = idempotency(scope, { state: "in_progress" });
        const elsewhere = idempotency(other, { state: "unknown" });
        await store.transact(async (tx) => {
          await tx.insertInvocation(scope, held);
          for (const r of [late, early, tieB, tieA, ofInvocation, known, running]) await tx.putIdempotency(scope, r);
          await tx.putIdempotency(other, elsewhere);
        });
        const key = (r: { action: string; idempotencyKey: string }): string => `${r.action}/${r.idempotencyKey}`;
        await store.transact(async (tx) => {
          assert.deepStrictEqual((await tx.listUnknownKeys(scope)).map(key), [early, tieA, tieB, late].map(key), "bare unknown keys, oldest first");
          assert.deepStrictEqual((await tx.listUnknownKeys(scope, { limit: 2 })).map(key), [early, tieA].map(key), "limit");
          assertRecord((await tx.listUnknownKeys(scope))[0], early, "the listed record");
          assert.deepStrictEqual((await tx.listUnknownKeys(other)).map(key), [key(elsewhere)], "the other scope's own");
          assert.deepStrictEqual(await tx.listUnknownKeys(newScope()), [], "an empty scope");
        });
        await store.transact((tx) => tx.putIdempotency(scope, { ...early, state: "failed", updatedAt: T0 + 40 }));
        assert.deepStrictEqual((await store.transact((tx) => tx.listUnknownKeys(scope))).map(key), [tieA, tieB, late].map(key), "a resolved key leaves the list");
      });
    },
  },
  {
    // Invariant: the store assigns each scope's attempts seq 1, 2, 3… in insertion order
    // (whatever seq the caller passed), lists them in that order, filters by invocation and
    // afterSeq, and keeps the seq when an attempt is replaced. Attempt ids are unique.
    name: "attempts: store-assigned seq, ordered listing, filters and updates",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const invocationId = uid("inv");
        const a1 = attempt(scope);
        const a2 = attempt(scope, { seq: 99 });
        const a3 = attempt(scope, { invocationId, decisionId: uid("dec"), output: { ok: [1, 2] } });
        const seqs = await store.transact(async (tx) => [await tx.insertAttempt(scope, a1), await tx.insertAttempt(scope, a2), await tx.insertAttempt(scope, a3)]);
        assert.deepStrictEqual(seqs, [1, 2, 3]);
        const a4 = attempt(scope, { invocationId });
        assert.equal(await store.transact((tx) => tx.insertAttempt(scope, a4)), 4, "a later transaction continues the order");
        await store.transact(async (tx) => {
          assertRecord(await tx.getAttempt(scope, a2.attemptId), { ...a2, seq: 2 }, "attempt with its assigned seq");
          const all = await tx.listAttempts(scope);
          assert.deepStrictEqual(
            all.map((a) => [a.attemptId, a.seq]),
            [
              [a1.attemptId, 1],
              [a2.attemptId, 2],
              [a3.attemptId, 3],
              [a4.attemptId, 4],
            ],
          );
          assertRecord(all[2], { ...a3, seq: 3 }, "listed attempt");
          assert.deepStrictEqual((await tx.listAttempts(scope, { afterSeq: 2 })).map((a) => a.seq), [3, 4]);
          assert.deepStrictEqual((await tx.listAttempts(scope, { limit: 2 })).map((a) => a.seq), [1, 2]);
          assert.deepStrictEqual((await tx.listAttempts(scope, { afterSeq: 1, limit: 1 })).map((a) => a.seq), [2]);
          assert.deepStrictEqual((await tx.listAttempts(scope, { invocationId })).map((a) => a.seq), [3, 4]);
          assert.deepStrictEqual((await tx.listAttempts(scope, { invocationId, afterSeq: 3 })).map((a) => a.seq), [4]);
          assert.equal(await tx.getAttempt(scope, uid("att")), null);
        });
        const settled = { ...a2, seq: 0, state: "SUCCEEDED" as const, endedAt: T0 + 7, output: { refunded: true } };
        await store.transact((tx) => tx.updateAttempt(scope, settled));
        assertRecord(await store.transact((tx) => tx.getAttempt(scope, a2.attemptId)), { ...settled, seq: 2 }, "updated attempt keeps its seq");
        await rejectsWithCode(
          store.transact((tx) => tx.updateAttempt(scope, attempt(scope))),
          "NOT_FOUND",
          "update of an unknown attempt",
        );
        await rejectsWithCode(
          store.transact((tx) => tx.insertAttempt(scope, { ...a1, startedAt: T0 + 1 })),
          "CONFLICT",
          "insert of an existing attempt id",
        );
        assert.equal((await store.transact((tx) => tx.listAttempts(scope))).length, 4, "refused writes added nothing");
      });
    },
  },
  {
    // Invariant: concurrent attempt inserts in one scope receive distinct, gap-free seqs, and the
    // listing order is the seq order.
    name: "attempts: 20 concurrent inserts get seq 1..20 without gaps or repeats",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const records = Array.from({ length: 20 }, () => attempt(scope));
        const seqs = await Promise.all(records.map((r) => store.transact((tx) => tx.insertAttempt(scope, r))));
        assert.deepStrictEqual(
          [...seqs].sort((x, y) => x - y),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        const listed = await store.transact((tx) => tx.listAttempts(scope));
        assert.deepStrictEqual(
          listed.map((a) => a.seq),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        for (const [i, r] of records.entries()) {
          assert.equal(listed[seqs[i]! - 1]!.attemptId, r.attemptId, "each attempt is listed at the seq it was given");
        }
      });
    },
  },
  {
    // Invariant: reconciliations are unique by id, replaced only when they exist, and listed by
    // status and invocation.
    name: "reconciliations: insert, update, get and filtered lists",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const invA = uid("inv");
        const r1 = reconciliation(scope, { invocationId: invA, externalRef: "ext-1" });
        const r2 = reconciliation(scope, { createdAt: T0 + 1 });
        const r3 = reconciliation(scope, { invocationId: invA, stepIndex: 1, createdAt: T0 + 2 });
        await store.transact(async (tx) => {
          await tx.insertReconciliation(scope, r1);
          await tx.insertReconciliation(scope, r2);
          await tx.insertReconciliation(scope, r3);
        });
        await rejectsWithCode(
          store.transact((tx) => tx.insertReconciliation(scope, { ...r1, reason: "again" })),
          "CONFLICT",
          "duplicate reconciliation id",
        );
        const resolved = {
          ...r1,
          status: "resolved" as const,
          resolution: { outcome: "succeeded" as const, externalRef: "ext-1", note: "checked the provider", by: { type: "user" as const, id: "op-1" }, at: T0 + 9 },
          updatedAt: T0 + 9,
        };
        await store.transact((tx) => tx.updateReconciliation(scope, resolved));
        await rejectsWithCode(
          store.transact((tx) => tx.updateReconciliation(scope, reconciliation(scope))),
          "NOT_FOUND",
          "update of an unknown reconciliation",
        );
        await store.transact(async (tx) => {
          assertRecord(await tx.getReconciliation(scope, r1.reconciliationId), resolved, "updated reconciliation");
          assertRecord(await tx.getReconciliation(scope, r2.reconciliationId), r2, "reconciliation");
          assert.equal(await tx.getReconciliation(scope, uid("rec")), null);
          const id = (r: { reconciliationId: string }): string => r.reconciliationId;
          assert.deepStrictEqual(idsOf(await tx.listReconciliations(scope), id), idsOf([r1, r2, r3], id));
          assert.deepStrictEqual(idsOf(await tx.listReconciliations(scope, { status: "open" }), id), idsOf([r2, r3], id));
          assert.deepStrictEqual(idsOf(await tx.listReconciliations(scope, { status: "resolved" }), id), [r1.reconciliationId]);
          assert.deepStrictEqual(idsOf(await tx.listReconciliations(scope, { invocationId: invA }), id), idsOf([r1, r3], id));
          assert.deepStrictEqual(idsOf(await tx.listReconciliations(scope, { invocationId: invA, status: "open" }), id), [r3.reconciliationId]);
          assert.equal((await tx.listReconciliations(scope, { limit: 2 })).length, 2);
          const [listed] = await tx.listReconciliations(scope, { status: "resolved" });
          assertRecord(listed, resolved, "listed reconciliation");
        });
      });
    },
  },
  {
    // Invariant: authorities are upserted by authorityRef and listed per scope.
    name: "authorities: put, replace, get and list",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const a1 = authority(scope, { expiresAt: T0 + 60_000 });
        const a2 = authority(scope, { actions: ["repos.delete"], constraints: {} });
        await store.transact(async (tx) => {
          await tx.putAuthority(scope, a1);
          await tx.putAuthority(scope, a2);
        });
        const suspended = { ...a1, status: "suspended" as const, updatedAt: T0 + 3 };
        await store.transact((tx) => tx.putAuthority(scope, suspended));
        await store.transact(async (tx) => {
          assertRecord(await tx.getAuthority(scope, a1.authorityRef), suspended, "replaced authority");
          assertRecord(await tx.getAuthority(scope, a2.authorityRef), a2, "authority");
          assert.equal(await tx.getAuthority(scope, uid("auth")), null);
          const ref = (a: { authorityRef: string }): string => a.authorityRef;
          assert.deepStrictEqual(idsOf(await tx.listAuthorities(scope), ref), idsOf([a1, a2], ref));
          assert.equal((await tx.listAuthorities(scope, { limit: 1 })).length, 1);
        });
      });
    },
  },
  {
    // Invariant: approvals are upserted by approvalId (votes included) and listed per scope,
    // optionally by status.
    name: "approvals: put, replace, get and list by status",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const p1 = approval(scope, { invocationId: uid("inv") });
        const p2 = approval(scope, {
          status: "approved",
          quorum: 2,
          votes: [
            { approver: { type: "user", id: "u1" }, verdict: "approve", at: T0 + 1, note: "fine" },
            { approver: { type: "user", id: "u2" }, verdict: "approve", at: T0 + 2 },
          ],
        });
        await store.transact(async (tx) => {
          await tx.putApproval(scope, p1);
          await tx.putApproval(scope, p2);
        });
        const voted = { ...p1, votes: [{ approver: { type: "user" as const, id: "u3" }, verdict: "deny" as const, at: T0 + 4 }], status: "denied" as const, updatedAt: T0 + 4 };
        await store.transact((tx) => tx.putApproval(scope, voted));
        await store.transact(async (tx) => {
          assertRecord(await tx.getApproval(scope, p1.approvalId), voted, "replaced approval");
          assertRecord(await tx.getApproval(scope, p2.approvalId), p2, "approval");
          assert.equal(await tx.getApproval(scope, uid("appr")), null);
          const id = (a: { approvalId: string }): string => a.approvalId;
          assert.deepStrictEqual(idsOf(await tx.listApprovals(scope), id), idsOf([p1, p2], id));
          assert.deepStrictEqual(idsOf(await tx.listApprovals(scope, { status: "approved" }), id), [p2.approvalId]);
          assert.deepStrictEqual(idsOf(await tx.listApprovals(scope, { status: "denied" }), id), [p1.approvalId]);
          assert.deepStrictEqual(await tx.listApprovals(scope, { status: "pending" }), []);
          assert.equal((await tx.listApprovals(scope, { limit: 1 })).length, 1);
        });
      });
    },
  },
];
