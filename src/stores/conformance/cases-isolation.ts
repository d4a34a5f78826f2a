/**
 * Conformance cases: tenant isolation for every record kind. Each case writes in scope A, then
 * from two other scopes (same tenant / other space, other tenant / same space) checks that reads
 * find nothing, lists never leak, and writes aimed at A's records are refused; then that records
 * the other scopes write under the same keys stay theirs and leave A's untouched.
 */
import assert from "node:assert/strict";
import type { ErrorCode } from "../../core/errors.js";
import type { Store, StoreTx } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import { CROSS_SCOPE_CODES, assertRecord, rejectsLeaseLost, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, attempt, authority, checkpoint, decision, fenceOf, idempotency, invocation, journalChain, journalEntry, newScope, reconciliation, step, uid } from "./fixtures.js";

/** The scopes that must not see A: another space of A's tenant, and another tenant's space of the same name. */
function otherScopes(a: Scope): Scope[] {
  return [
    { tenantId: a.tenantId, spaceId: `${a.spaceId}-other` },
    { tenantId: uid("tenant"), spaceId: a.spaceId },
  ];
}

/** Asserts that a write into another scope's record is refused. */
async function refused(store: Store, write: (tx: StoreTx) => Promise<unknown>, what: string, codes: ErrorCode[] = CROSS_SCOPE_CODES): Promise<void> {
  await rejectsWithCode(store.transact(write), codes, `cross-scope write: ${what}`);
}

export const isolationCases: StoreConformanceCase[] = [
  {
    // Invariant: consumed decisions and idempotency records are per scope: invisible elsewhere,
    // not writable from elsewhere, and the same key in another scope is another record.
    name: "isolation: consumed decisions and idempotency records stay in their scope",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const dec = decision(a);
        const idem = idempotency(a);
        await store.transact(async (tx) => {
          await tx.consumeDecision(a, dec);
          await tx.putIdempotency(a, idem);
        });
        for (const x of otherScopes(a)) {
          await store.transact(async (tx) => {
            assert.equal(await tx.getConsumedDecision(x, dec.decisionId), null, "decision read across scopes");
            assert.equal(await tx.getIdempotency(x, idem.action, idem.idempotencyKey), null, "idempotency read across scopes");
          });
          await refused(store, (tx) => tx.consumeDecision(x, dec), "consumeDecision of a record stamped with another scope");
          await refused(store, (tx) => tx.putIdempotency(x, idem), "putIdempotency of a record stamped with another scope");
          // The same key in another scope is another record.
          const own = { ...idem, ...x, state: "failed" as const };
          await store.transact((tx) => tx.putIdempotency(x, own));
          assertRecord(await store.transact((tx) => tx.getIdempotency(x, idem.action, idem.idempotencyKey)), own, "the other scope's own record");
        }
        await store.transact(async (tx) => {
          assertRecord(await tx.getConsumedDecision(a, dec.decisionId), dec, "A's consumed decision");
          assertRecord(await tx.getIdempotency(a, idem.action, idem.idempotencyKey), idem, "A's idempotency record");
        });
      });
    },
  },
  {
    // Invariant: attempts are invisible from other scopes, cannot be inserted or updated from them,
    // and each scope numbers its own attempts from 1.
    name: "isolation: attempts stay in their scope, each scope with its own seq",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const invocationId = uid("inv");
        const a1 = attempt(a, { invocationId });
        const a2 = attempt(a);
        await store.transact(async (tx) => {
          await tx.insertAttempt(a, a1);
          await tx.insertAttempt(a, a2);
        });
        for (const x of otherScopes(a)) {
          await store.transact(async (tx) => {
            assert.equal(await tx.getAttempt(x, a1.attemptId), null, "attempt read across scopes");
            assert.deepStrictEqual(await tx.listAttempts(x), [], "attempt list across scopes");
            assert.deepStrictEqual(await tx.listAttempts(x, { invocationId }), [], "attempt list by invocation across scopes");
          });
          await refused(store, (tx) => tx.insertAttempt(x, attempt(a)), "insertAttempt of a record stamped with another scope");
          await refused(store, (tx) => tx.updateAttempt(x, { ...a1, seq: 1, state: "FAILED" }), "updateAttempt of a record stamped with another scope");
          await refused(store, (tx) => tx.updateAttempt(x, { ...a1, ...x, seq: 1, state: "FAILED" }), "updateAttempt of another scope's attempt id");
          const own = attempt(x, { invocationId });
          assert.equal(await store.transact((tx) => tx.insertAttempt(x, own)), 1, "each scope numbers its attempts from 1");
          assert.deepStrictEqual((await store.transact((tx) => tx.listAttempts(x))).map((r) => r.attemptId), [own.attemptId]);
        }
        await store.transact(async (tx) => {
          assert.deepStrictEqual((await tx.listAttempts(a)).map((r) => r.attemptId), [a1.attemptId, a2.attemptId], "A's list holds only A's attempts");
          assertRecord(await tx.getAttempt(a, a1.attemptId), { ...a1, seq: 1 }, "A's attempt");
        });
      });
    },
  },
  {
    // Invariant: each scope has its own journal chain and checkpoints: another scope sees no head,
    // entry, id or checkpoint of A, cannot append to A's chain, and starts its own chain at 1.
    name: "isolation: journals and checkpoints stay in their scope, each scope with its own chain",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const chain = journalChain(a, 2);
        const cp = checkpoint(a, 2);
        await store.transact(async (tx) => {
          await tx.insertJournal(a, chain);
          await tx.insertCheckpoint(a, cp);
        });
        const ids = chain.map((e) => e.id);
        for (const x of otherScopes(a)) {
          await store.transact(async (tx) => {
            assert.equal(await tx.journalHead(x), null, "journal head across scopes");
            assert.deepStrictEqual(await tx.readJournal(x), [], "journal read across scopes");
            assert.equal((await tx.journalIdsPresent(x, ids)).size, 0, "journal ids across scopes");
            assert.deepStrictEqual(await tx.listCheckpoints(x), [], "checkpoints across scopes");
          });
          await refused(store, (tx) => tx.insertJournal(x, [journalEntry(a, 1, null)]), "insertJournal of an entry stamped with another scope");
          await refused(store, (tx) => tx.insertCheckpoint(x, checkpoint(a, 1)), "insertCheckpoint stamped with another scope");
          // Another scope's chain starts at 1, and may reuse an id A's journal holds.
          const own = journalEntry(x, 1, null, { id: chain[0]!.id });
          await store.transact((tx) => tx.insertJournal(x, [own]));
          assert.deepStrictEqual(await store.transact((tx) => tx.journalHead(x)), { seq: 1, hash: own.hash });
        }
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.journalHead(a), { seq: 2, hash: chain[1]!.hash }, "A's head");
          assert.deepStrictEqual((await tx.readJournal(a)).map((e) => e.hash), chain.map((e) => e.hash), "A's journal holds only A's entries");
          assert.equal((await tx.listCheckpoints(a)).length, 1, "A's checkpoints");
        });
      });
    },
  },
  {
    // Invariant: invocations, their leases and their steps are per scope: another scope cannot
    // read, list, page into, update, fence-write or assert a lease on A's invocation.
    name: "isolation: invocations, leases and steps stay in their scope",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const inv = invocation(a, { status: "running", leaseOwner: uid("worker"), leaseToken: uid("tok"), leaseExpiresAt: T0 + 60_000, attemptCount: 1 });
        const fence = fenceOf(inv);
        const st = step(a, inv.invocationId, 0);
        await store.transact(async (tx) => {
          await tx.insertInvocation(a, inv);
          await tx.putStep(a, st, fence);
        });
        for (const x of otherScopes(a)) {
          await store.transact(async (tx) => {
            assert.equal(await tx.getInvocation(x, inv.invocationId), null, "invocation read across scopes");
            assert.equal(await tx.findInvocationByKey(x, inv.action, inv.idempotencyKey), null, "invocation key across scopes");
            assert.deepStrictEqual(await tx.listInvocations(x), [], "invocation list across scopes");
            assert.deepStrictEqual(await tx.listInvocations(x, { status: "running" }), [], "invocation list by status across scopes");
            assert.deepStrictEqual(await tx.listInvocations(x, { after: inv.invocationId }), [], "invocation page across scopes");
            assert.deepStrictEqual(await tx.getSteps(x, inv.invocationId), [], "steps across scopes");
          });
          await refused(store, (tx) => tx.insertInvocation(x, invocation(a)), "insertInvocation stamped with another scope");
          await refused(store, (tx) => tx.updateInvocation(x, { ...inv, status: "failed" }), "updateInvocation stamped with another scope");
          await refused(store, (tx) => tx.updateInvocation(x, { ...inv, ...x, status: "failed" }), "updateInvocation of another scope's invocation id");
          await refused(store, (tx) => tx.updateInvocation(x, { ...inv, ...x, status: "failed" }, fence), "fenced updateInvocation of another scope's invocation", [
            "LEASE_LOST",
            ...CROSS_SCOPE_CODES,
          ]);
          await rejectsLeaseLost(
            store.transact((tx) => tx.assertLease(x, fence)),
            "assertLease in another scope",
          );
          await refused(store, (tx) => tx.putStep(x, { ...st, status: "failed" }), "putStep stamped with another scope");
          await refused(store, (tx) => tx.putStep(x, { ...st, ...x, status: "failed" }, fence), "fenced putStep on another scope's invocation", ["LEASE_LOST", ...CROSS_SCOPE_CODES]);
          // The same (action, idempotencyKey) in another scope is another invocation.
          const own = invocation(x, { action: inv.action, idempotencyKey: inv.idempotencyKey });
          await store.transact((tx) => tx.insertInvocation(x, own));
          assert.deepStrictEqual((await store.transact((tx) => tx.listInvocations(x))).map((i) => i.invocationId), [own.invocationId]);
        }
        await store.transact(async (tx) => {
          assertRecord(await tx.getInvocation(a, inv.invocationId), inv, "A's invocation");
          assert.deepStrictEqual((await tx.listInvocations(a)).map((i) => i.invocationId), [inv.invocationId], "A's list holds only A's invocations");
          assertRecord(await tx.findInvocationByKey(a, inv.action, inv.idempotencyKey), inv, "A's invocation by key");
          assertRecord((await tx.getSteps(a, inv.invocationId))[0], st, "A's step");
          await tx.assertLease(a, fence);
        });
      });
    },
  },
  {
    // Invariant: reconciliations, authorities and approvals are per scope: invisible and
    // unwritable from other scopes, whose records under the same ids stay their own.
    name: "isolation: reconciliations, authorities and approvals stay in their scope",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const rec = reconciliation(a);
        const auth = authority(a);
        const appr = approval(a);
        await store.transact(async (tx) => {
          await tx.insertReconciliation(a, rec);
          await tx.putAuthority(a, auth);
          await tx.putApproval(a, appr);
        });
        for (const x of otherScopes(a)) {
          await store.transact(async (tx) => {
            assert.equal(await tx.getReconciliation(x, rec.reconciliationId), null, "reconciliation read across scopes");
            assert.deepStrictEqual(await tx.listReconciliations(x), [], "reconciliation list across scopes");
            assert.deepStrictEqual(await tx.listReconciliations(x, { invocationId: rec.invocationId, status: "open" }), [], "filtered reconciliation list across scopes");
            assert.equal(await tx.getAuthority(x, auth.authorityRef), null, "authority read across scopes");
            assert.deepStrictEqual(await tx.listAuthorities(x), [], "authority list across scopes");
            assert.equal(await tx.getApproval(x, appr.approvalId), null, "approval read across scopes");
            assert.deepStrictEqual(await tx.listApprovals(x), [], "approval list across scopes");
            assert.deepStrictEqual(await tx.listApprovals(x, { status: "pending" }), [], "filtered approval list across scopes");
          });
          await refused(store, (tx) => tx.insertReconciliation(x, reconciliation(a)), "insertReconciliation stamped with another scope");
          await refused(store, (tx) => tx.updateReconciliation(x, { ...rec, status: "resolved" }), "updateReconciliation stamped with another scope");
          await refused(store, (tx) => tx.updateReconciliation(x, { ...rec, ...x, status: "resolved" }), "updateReconciliation of another scope's id");
          await refused(store, (tx) => tx.putAuthority(x, { ...auth, status: "revoked" }), "putAuthority stamped with another scope");
          await refused(store, (tx) => tx.putApproval(x, { ...appr, status: "approved" }), "putApproval stamped with another scope");
          // The same ref / id in another scope is another record.
          const ownAuth = { ...auth, ...x, status: "revoked" as const };
          const ownAppr = { ...appr, ...x, status: "denied" as const, rev: undefined };
          await store.transact(async (tx) => {
            await tx.putAuthority(x, ownAuth);
            await tx.putApproval(x, ownAppr);
          });
          await store.transact(async (tx) => {
            assertRecord(await tx.getAuthority(x, auth.authorityRef), ownAuth, "the other scope's own authority");
            assertRecord(await tx.getApproval(x, appr.approvalId), ownAppr, "the other scope's own approval");
          });
        }
        await store.transact(async (tx) => {
          assertRecord(await tx.getReconciliation(a, rec.reconciliationId), rec, "A's reconciliation");
          assertRecord(await tx.getAuthority(a, auth.authorityRef), auth, "A's authority");
          assertRecord(await tx.getApproval(a, appr.approvalId), appr, "A's approval");
          assert.equal((await tx.listAuthorities(a)).length, 1, "A's authority list holds only A's");
          assert.equal((await tx.listApprovals(a)).length, 1, "A's approval list holds only A's");
          assert.equal((await tx.listReconciliations(a)).length, 1, "A's reconciliation list holds only A's");
        });
      });
    },
  },
];
