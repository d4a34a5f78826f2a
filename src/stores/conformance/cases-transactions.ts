/** Conformance cases: transactions, copies, decision consumption, migrate and close. */
import assert from "node:assert/strict";
import type { Store } from "../../core/store.js";
import type { Invocation } from "../../core/types.js";
import { assertRecord, plain, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import {
  T0,
  approval,
  attempt,
  authority,
  checkpoint,
  decision,
  idempotency,
  invocation,
  journalChain,
  newScope,
  reconciliation,
  step,
  uid,
} from "./fixtures.js";

/** Claims every invocation runnable at `now` (any scope) and returns the ids claimed. */
async function claimAll(store: Store, now: number): Promise<Set<string>> {
  const tokens = Array.from({ length: 1000 }, () => uid("tok"));
  const claimed = await store.transact((tx) => tx.claimInvocations({ owner: uid("sweeper"), tokens, now, leaseMs: 1000, limit: tokens.length }));
  return new Set(claimed.map((i: Invocation) => i.invocationId));
}

export const transactionCases: StoreConformanceCase[] = [
  {
    // Invariant: transact resolves with fn's value, and what it wrote is visible to later transactions.
    name: "transactions: commit returns fn's value and makes the writes visible",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const rec = idempotency(scope);
        const value = await store.transact(async (tx) => {
          await tx.putIdempotency(scope, rec);
          return { answer: 42 };
        });
        assert.deepStrictEqual(value, { answer: 42 });
        assertRecord(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey)), rec, "committed idempotency record");
      });
    },
  },
  {
    // Invariant: transact is all-or-nothing. When fn throws after inserts and updates of every
    // record kind, transact rejects with fn's own error and none of those writes is visible:
    // not the records, not the journal entries, not the attempt seq numbers, not the claim index.
    name: "transactions: a fault injected after writes of every kind leaves nothing visible",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = invocation(scope, { runAt: T0 - 5_000_000 });
        const idem = idempotency(scope, { invocationId: inv.invocationId });
        const att = attempt(scope, { invocationId: inv.invocationId });
        const rec = reconciliation(scope, { invocationId: inv.invocationId });
        const auth = authority(scope);
        const appr = approval(scope);
        const [e1] = journalChain(scope, 1);
        const st0 = step(scope, inv.invocationId, 0);
        await store.transact(async (tx) => {
          await tx.insertInvocation(scope, inv);
          await tx.putIdempotency(scope, idem);
          await tx.insertAttempt(scope, att);
          await tx.insertReconciliation(scope, rec);
          await tx.putAuthority(scope, auth);
          await tx.putApproval(scope, appr);
          await tx.insertJournal(scope, [e1!]);
          await tx.putStep(scope, st0);
        });

        const dec = decision(scope);
        const inv2 = invocation(scope, { runAt: T0 - 5_000_000 });
        const idem2 = idempotency(scope);
        const att2 = attempt(scope);
        const [e2, e3] = journalChain(scope, 2, e1);
        const rec2 = reconciliation(scope);
        const auth2 = authority(scope);
        const appr2 = approval(scope);
        const fault = new Error("injected fault");
        let outcome: unknown = "resolved";
        try {
          await store.transact(async (tx) => {
            // Lock order (docs/stores.md): the invocation row first, the journal last.
            await tx.updateInvocation(scope, { ...inv, status: "cancelled", updatedAt: T0 + 1 });
            assert.equal(await tx.consumeDecision(scope, dec), true);
            await tx.putIdempotency(scope, idem2);
            assert.equal(await tx.insertAttempt(scope, att2), 2);
            await tx.insertJournal(scope, [e2!, e3!]);
            await tx.insertCheckpoint(scope, checkpoint(scope, 3));
            await tx.insertInvocation(scope, inv2);
            await tx.putStep(scope, step(scope, inv2.invocationId, 0));
            await tx.insertReconciliation(scope, rec2);
            await tx.putAuthority(scope, auth2);
            await tx.putApproval(scope, appr2);
            await tx.putIdempotency(scope, { ...idem, state: "succeeded", resultAttemptId: att.attemptId });
            await tx.updateAttempt(scope, { ...att, seq: 1, state: "SUCCEEDED", endedAt: T0 + 1 });
            await tx.putStep(scope, { ...st0, status: "succeeded", endedAt: T0 + 1 });
            await tx.updateReconciliation(scope, { ...rec, status: "resolved" });
            await tx.putAuthority(scope, { ...auth, status: "revoked" });
            await tx.putApproval(scope, { ...appr, status: "approved" });
            // The transaction reads its own writes before it fails.
            assert.notEqual(await tx.getInvocation(scope, inv2.invocationId), null);
            assert.equal((await tx.journalHead(scope))?.seq, 3);
            throw fault;
          });
        } catch (error) {
          outcome = error;
        }
        assert.equal(outcome, fault, "transact must reject with the error fn threw");

        await store.transact(async (tx) => {
          assert.equal(await tx.getConsumedDecision(scope, dec.decisionId), null, "decision consumption rolled back");
          assert.equal(await tx.getIdempotency(scope, idem2.action, idem2.idempotencyKey), null, "new idempotency record rolled back");
          assert.equal(await tx.getAttempt(scope, att2.attemptId), null, "new attempt rolled back");
          assert.deepStrictEqual(
            (await tx.listAttempts(scope)).map((a) => a.attemptId),
            [att.attemptId],
          );
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 1, hash: e1!.hash }, "journal head rolled back");
          assert.equal((await tx.readJournal(scope)).length, 1);
          assert.equal((await tx.journalIdsPresent(scope, [e2!.id, e3!.id])).size, 0, "journal ids rolled back");
          assert.deepStrictEqual(await tx.listCheckpoints(scope), [], "checkpoint rolled back");
          assert.equal(await tx.getInvocation(scope, inv2.invocationId), null, "new invocation rolled back");
          assert.equal(await tx.findInvocationByKey(scope, inv2.action, inv2.idempotencyKey), null, "new invocation key rolled back");
          assert.deepStrictEqual(await tx.getSteps(scope, inv2.invocationId), [], "new step rolled back");
          assert.equal(await tx.getReconciliation(scope, rec2.reconciliationId), null);
          assert.equal(await tx.getAuthority(scope, auth2.authorityRef), null);
          assert.equal(await tx.getApproval(scope, appr2.approvalId), null);
          assertRecord(await tx.getInvocation(scope, inv.invocationId), inv, "updated invocation restored");
          assertRecord(await tx.getIdempotency(scope, idem.action, idem.idempotencyKey), idem, "replaced idempotency record restored");
          assertRecord(await tx.getAttempt(scope, att.attemptId), { ...att, seq: 1 }, "updated attempt restored");
          assertRecord((await tx.getSteps(scope, inv.invocationId))[0], st0, "step restored");
          assertRecord(await tx.getReconciliation(scope, rec.reconciliationId), rec, "reconciliation restored");
          assertRecord(await tx.getAuthority(scope, auth.authorityRef), auth, "authority restored");
          assertRecord(await tx.getApproval(scope, appr.approvalId), appr, "approval restored");
        });

        // The rolled-back transaction consumed no sequence numbers and no claimable work.
        await store.transact(async (tx) => {
          assert.equal(await tx.insertAttempt(scope, attempt(scope)), 2, "attempt seq continues after the committed ones");
          await tx.insertJournal(scope, journalChain(scope, 1, e1));
          assert.equal(await tx.consumeDecision(scope, dec), true, "the decision is still unconsumed");
        });
        const claimed = await claimAll(store, T0);
        assert.ok(!claimed.has(inv2.invocationId), "a rolled-back insert must not be claimable");
        assert.ok(claimed.has(inv.invocationId), "the queued invocation whose update was rolled back is claimable again");
      });
    },
  },
  {
    // Invariant: a write the store refuses (here a duplicate invocation id) fails the transaction
    // and takes the transaction's earlier writes with it.
    name: "transactions: a refused write rolls back the transaction's earlier writes",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = invocation(scope);
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        const att = attempt(scope);
        const idem = idempotency(scope);
        const [e1] = journalChain(scope, 1);
        await rejectsWithCode(
          store.transact(async (tx) => {
            await tx.insertAttempt(scope, att);
            await tx.putIdempotency(scope, idem);
            await tx.insertJournal(scope, [e1!]);
            await tx.insertInvocation(scope, { ...inv, idempotencyKey: uid("key") });
          }),
          "CONFLICT",
          "duplicate invocation id",
        );
        await store.transact(async (tx) => {
          assert.equal(await tx.getAttempt(scope, att.attemptId), null);
          assert.equal(await tx.getIdempotency(scope, idem.action, idem.idempotencyKey), null);
          assert.equal(await tx.journalHead(scope), null);
          assertRecord(await tx.getInvocation(scope, inv.invocationId), inv, "existing invocation");
        });
      });
    },
  },
  {
    // Invariant: stored state is reachable only through the store: mutating an object after
    // writing it, or an object a read returned, never changes what the store holds.
    name: "transactions: records are copied on write and on read",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = invocation(scope);
        // The store stamps the revision it assigned (1 on insert; docs/stores.md).
        const original = { ...plain(inv), rev: 1 };
        const [entry] = journalChain(scope, 1);
        const originalEntry = plain(entry!);
        await store.transact(async (tx) => {
          await tx.insertInvocation(scope, inv);
          await tx.insertJournal(scope, [entry!]);
        });
        inv.status = "failed";
        inv.request.params.amount = 999;
        (inv.request.params.tags as string[]).push("mutated");
        entry!.refs.n = "mutated";
        const read = await store.transact((tx) => tx.getInvocation(scope, inv.invocationId));
        assertRecord(read, original, "invocation after mutating the written object");
        read!.request.params.amount = 1;
        read!.request.actor.id = "mutated";
        const [listed] = await store.transact((tx) => tx.listInvocations(scope));
        listed!.status = "cancelled";
        const [journalRead] = await store.transact((tx) => tx.readJournal(scope));
        assertRecord(journalRead, originalEntry, "journal entry after mutating the written object");
        journalRead!.data = null;
        await store.transact(async (tx) => {
          assertRecord(await tx.getInvocation(scope, inv.invocationId), original, "invocation after mutating read results");
          assertRecord((await tx.readJournal(scope))[0], originalEntry, "journal entry after mutating a read result");
        });
      });
    },
  },
  {
    // Invariant: a decision is consumed at most once: the first consumption wins, a repeat
    // returns false and leaves the first record in place.
    name: "decisions: consumption is recorded once; a repeat returns false and writes nothing",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const first = decision(scope);
        await store.transact(async (tx) => {
          assert.equal(await tx.getConsumedDecision(scope, first.decisionId), null);
          assert.equal(await tx.consumeDecision(scope, first), true);
        });
        const again = await store.transact((tx) => tx.consumeDecision(scope, { ...first, attemptId: uid("att"), consumedAt: T0 + 5 }));
        assert.equal(again, false, "a second consumption must return false");
        assertRecord(await store.transact((tx) => tx.getConsumedDecision(scope, first.decisionId)), first, "consumed decision");
      });
    },
  },
  {
    // Invariant: among 20 concurrent transactions that each lock a decision, look it up and
    // consume it, exactly one consumes it; the others see it consumed (or get false) and fail
    // nothing. The stored consumption is the winner's.
    name: "decisions: exactly one of 20 concurrent consumers wins",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const decisionId = uid("dec");
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            store.transact(async (tx) => {
              await tx.lock(scope, [`decision:${decisionId}`]);
              if ((await tx.getConsumedDecision(scope, decisionId)) !== null) return { i, won: false };
              const won = await tx.consumeDecision(scope, decision(scope, { decisionId, attemptId: `att-${i}` }));
              return { i, won };
            }),
          ),
        );
        const winners = outcomes.filter((o) => o.won);
        assert.equal(winners.length, 1, `expected exactly one winner, got ${winners.length}`);
        const stored = await store.transact((tx) => tx.getConsumedDecision(scope, decisionId));
        assert.equal(stored?.attemptId, `att-${winners[0]!.i}`, "the stored consumption is the winner's");
      });
    },
  },
  {
    // Invariant: migrate() is idempotent and safe to run concurrently, also from two stores
    // (two processes) over the same storage; the store works afterwards.
    name: "migrate: running it twice, and concurrently, is harmless",
    async run(makeStore) {
      const a = await makeStore();
      try {
        const b = await makeStore();
        try {
          await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
          await a.migrate();
          await b.migrate();
          const scope = newScope();
          const rec = idempotency(scope);
          await a.transact((tx) => tx.putIdempotency(scope, rec));
          assertRecord(await a.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey)), rec, "record written after migrations");
        } finally {
          await b.close();
        }
      } finally {
        await a.close();
      }
    },
  },
  {
    // Invariant: after close(), transact and migrate reject with STORE_CLOSED.
    name: "close: a closed store refuses further calls with STORE_CLOSED",
    async run(makeStore) {
      const store = await makeStore();
      try {
        await store.migrate();
        const scope = newScope();
        await store.transact((tx) => tx.putIdempotency(scope, idempotency(scope)));
      } finally {
        await store.close();
      }
      await rejectsWithCode(store.transact((tx) => tx.getIdempotency(newScope(), "a", "b")), "STORE_CLOSED", "transact after close");
      await rejectsWithCode(store.migrate(), "STORE_CLOSED", "migrate after close");
    },
  },
];
