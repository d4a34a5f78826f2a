/**
 * The hot transitions (docs/stores.md, "Transitions"), through `transitionsOf(store)`: a store's
 * own implementation (PostgreSQL: one server-side function each) or the generic composition
 * (memory, SQLite). Both must give the same answers and leave the same rows.
 *
 * Invariants:
 * - every transition is all or nothing: one that throws (lost lease, a settled step asked to go
 *   back) or that finds its expectation broken leaves no row and no journal entry behind;
 * - `begin` applies only while what the caller expects still holds, and otherwise answers what it
 *   found (the idempotency record, a consumed decision, the steps, the standing, named attempts);
 * - `admit` inserts once per (scope, action, key) and answers the existing invocation after;
 * - `claim` writes each claimed invocation's journal entry with it;
 * - `sealIfHead` (where a store has it) seals only on the head the entries were chained on.
 */
import assert from "node:assert/strict";
import { LeaseLostError, isWritError } from "../../core/errors.js";
import type { Store } from "../../core/store.js";
import { stepsFingerprint, transitionsOf, type BeginInput } from "../../core/transitions.js";
import type { Fence, Invocation, Scope, UnsealedEntry } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, attempt, authority, decision, idempotency, invocation, newScope, reconciliation, step, uid } from "./fixtures.js";

export function entry(scope: Scope, id: string): UnsealedEntry {
  return { ...scope, id, at: T0, type: "test.entry", refs: {}, data: { id } };
}

/** A claimed (running, leased) invocation in a fresh scope. */
export async function claimed(store: Store, scope: Scope): Promise<{ inv: Invocation; fence: Fence }> {
  const mine = invocation(scope);
  await store.transact((tx) => tx.insertInvocation(scope, mine));
  // Claims span every scope: claim with room for what other cases left runnable, keep our own.
  const all = await transitionsOf(store).claim({ owner: "w1", tokens: Array.from({ length: 500 }, () => uid("tok")), now: T0, leaseMs: 60_000, limit: 500 });
  const inv = all.find((i) => i.invocationId === mine.invocationId);
  assert.ok(inv, "the invocation was claimed");
  return { inv, fence: { invocationId: inv.invocationId, owner: inv.leaseOwner!, token: inv.leaseToken! } };
}

export function beginInput(scope: Scope, invocationId: string, over: Partial<BeginInput> = {}): BeginInput {
  const attemptId = uid("att");
  const decisionId = uid("dec");
  const key = uid("key");
  return {
    locks: [`idem:payments.refund:${key}`, `decision:${decisionId}`],
    expect: { idempotency: null, steps: "" },
    consumed: decision(scope, { decisionId, attemptId }),
    idempotency: idempotency(scope, { idempotencyKey: key, invocationId, attemptId, state: "in_progress" }),
    step: step(scope, invocationId, 0, { attemptId }),
    attempt: attempt(scope, { attemptId, invocationId, decisionId }),
    entries: [entry(scope, `decision.consumed:${decisionId}`)],
    ...over,
  };
}

/** What a begin may have written, to compare before and after. */
export async function footprint(store: Store, scope: Scope, input: BeginInput): Promise<string> {
  return store.transact(async (tx) =>
    JSON.stringify({
      idem: await tx.getIdempotency(scope, input.idempotency.action, input.idempotency.idempotencyKey),
      consumed: await tx.getConsumedDecision(scope, input.consumed.decisionId),
      steps: await tx.getSteps(scope, input.step.invocationId),
      attempt: await tx.getAttempt(scope, input.attempt.attemptId),
      unsealed: (await tx.listUnsealed(scope)).map((u) => u.id),
    }),
  );
}

export const transitionCases: StoreConformanceCase[] = [
  {
    name: "transitions: the shared input rules apply (empty scope, oversized id, a record of another scope) and nothing is written",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const bad = (code: "INVALID_ARGUMENT" | "SCOPE_VIOLATION") => (e: unknown): boolean => isWritError(e, code);
        await assert.rejects(t.admit({ tenantId: "", spaceId: "s" }, { invocation: invocation(scope), entries: [] }), bad("INVALID_ARGUMENT"));
        await assert.rejects(t.admit(scope, { invocation: invocation(newScope()), entries: [] }), bad("SCOPE_VIOLATION"));
        const long = beginInput(scope, "x".repeat(600));
        await assert.rejects(t.begin(scope, long), bad("INVALID_ARGUMENT"));
        await assert.rejects(t.record(scope, { attempt: attempt(scope, { attemptId: "" }), entries: [] }), bad("INVALID_ARGUMENT"));
        await assert.rejects(t.prepare(scope, { invocationId: "", authorityRef: "a" }), bad("INVALID_ARGUMENT"));
        const rows = await store.transact(async (tx) => ({ invs: await tx.listInvocations(scope), attempts: await tx.listAttempts(scope), unsealed: await tx.listUnsealed(scope) }));
        assert.deepEqual(rows, { invs: [], attempts: [], unsealed: [] });
      });
    },
  },
  {
    name: "transitions: admit inserts once per key, then answers the existing invocation and writes nothing",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const inv = invocation(scope);
        assert.deepEqual(await t.admit(scope, { invocation: inv, entries: [entry(scope, "submitted:1")] }), { created: true });
        const again = invocation(scope, { idempotencyKey: inv.idempotencyKey });
        const r = await t.admit(scope, { invocation: again, entries: [entry(scope, "submitted:2")] });
        assert.equal(r.created, false);
        assert.equal(r.created === false ? r.existing.invocationId : null, inv.invocationId);
        const rows = await store.transact(async (tx) => ({ invs: await tx.listInvocations(scope), unsealed: (await tx.listUnsealed(scope)).map((u) => u.id) }));
        assert.deepEqual(rows.invs.map((i) => i.invocationId), [inv.invocationId]);
        assert.deepEqual(rows.unsealed, ["submitted:1"]);
      });
    },
  },
  {
    name: "transitions: claim stamps the lease and writes the claim's journal entry in the same transition",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const { inv } = await claimed(store, scope);
        assert.equal(inv.status, "running");
        assert.equal(inv.attemptCount, 1);
        const unsealed = await store.transact((tx) => tx.listUnsealed(scope));
        assert.deepEqual(
          unsealed.map((u) => ({ id: u.id, type: u.type, refs: u.refs, data: u.data })),
          [{ id: `invocation.claimed:${inv.invocationId}:${inv.leaseToken!}`, type: "invocation.claimed", refs: { invocationId: inv.invocationId }, data: { owner: "w1", attemptCount: 1 } }],
        );
      });
    },
  },
  {
    name: "transitions: begin on a fresh key consumes, marks in progress, records the intent and numbers the attempt",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const { inv, fence } = await claimed(store, scope);
        const input = beginInput(scope, inv.invocationId, { fence });
        const r = await transitionsOf(store).begin(scope, input);
        assert.deepEqual(r, { started: true, seq: 1 });
        const f = JSON.parse(await footprint(store, scope, input)) as { idem: { state: string }; consumed: unknown; steps: Array<{ status: string }>; attempt: { seq: number }; unsealed: string[] };
        assert.equal(f.idem.state, "in_progress");
        assert.ok(f.consumed);
        assert.deepEqual(f.steps.map((s) => s.status), ["started"]);
        assert.equal(f.attempt.seq, 1);
        assert.ok(f.unsealed.includes(`decision.consumed:${input.consumed.decisionId}`));
      });
    },
  },
  {
    name: "transitions: begin whose expectation no longer holds writes nothing and answers what it found",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const { inv, fence } = await claimed(store, scope);
        // Another execution of the key left a record, and the decision was consumed before.
        const first = beginInput(scope, inv.invocationId, { fence });
        assert.equal((await t.begin(scope, first)).started, true);
        const second = beginInput(scope, inv.invocationId, {
          fence,
          consumed: { ...first.consumed, attemptId: uid("att") },
          idempotency: { ...first.idempotency, attemptId: uid("att") },
          locks: first.locks,
        });
        second.attempt.decisionId = first.consumed.decisionId;
        const before = await footprint(store, scope, second);
        const r = await t.begin(scope, second);
        assert.equal(r.started, false);
        if (r.started) return;
        assert.equal(r.found.consumed, true);
        assert.equal(r.found.idempotency?.attemptId, first.attempt.attemptId);
        assert.equal(stepsFingerprint(r.found.steps), `0:started:${first.attempt.attemptId}`);
        assert.deepEqual(r.found.attempts.map((a) => a.attemptId), [first.attempt.attemptId]);
        assert.equal(await footprint(store, scope, second), before, "nothing written");
      });
    },
  },
  {
    name: "transitions: begin compares the standing it was decided on (authority and approval)",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const { inv, fence } = await claimed(store, scope);
        const auth = authority(scope);
        const ap = approval(scope, { invocationId: inv.invocationId });
        await store.transact(async (tx) => {
          await tx.putAuthority(scope, auth);
          await tx.putApproval(scope, ap);
        });
        const stale = beginInput(scope, inv.invocationId, {
          fence,
          expect: { idempotency: null, steps: "", authority: { authorityRef: auth.authorityRef, seen: "revoked::0" }, approval: { approvalId: ap.approvalId, seen: ap.rev ?? 1 } },
        });
        const r = await t.begin(scope, stale);
        assert.equal(r.started, false);
        if (r.started) return;
        assert.equal(r.found.authority?.authorityRef, auth.authorityRef);
        assert.equal(r.found.approval?.approvalId, ap.approvalId);
        const ok = beginInput(scope, inv.invocationId, {
          fence,
          expect: {
            idempotency: null,
            steps: "",
            authority: { authorityRef: auth.authorityRef, seen: `${auth.status}:${auth.expiresAt ?? ""}:${auth.updatedAt}` },
            approval: { approvalId: ap.approvalId, seen: r.found.approval?.rev ?? 0 },
          },
        });
        assert.equal((await t.begin(scope, ok)).started, true);
      });
    },
  },
  {
    name: "transitions: a lost lease refuses begin, advance, settle and record, and they write nothing",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const { inv, fence } = await claimed(store, scope);
        const wrong: Fence = { ...fence, token: "not-the-token" };
        const input = beginInput(scope, inv.invocationId, { fence: wrong });
        const before = await footprint(store, scope, input);
        const lost = (e: unknown): boolean => e instanceof LeaseLostError || isWritError(e, "LEASE_LOST");
        await assert.rejects(t.begin(scope, input), lost);
        await assert.rejects(t.record(scope, { fence: wrong, attempt: { ...input.attempt, state: "REFUSED" }, entries: [entry(scope, "refused:x")] }), lost);
        await assert.rejects(t.advance(scope, { fence: wrong, done: { ...input.step, status: "succeeded" }, next: step(scope, inv.invocationId, 1), entries: [entry(scope, "adv:x")] }), lost);
        await assert.rejects(
          t.settle(scope, { fence: wrong, step: { ...input.step, status: "succeeded" }, attempt: input.attempt, idempotency: input.idempotency, invocation: { ...inv, status: "succeeded" }, entries: [entry(scope, "settle:x")] }),
          lost,
        );
        assert.equal(await footprint(store, scope, input), before, "nothing written");
      });
    },
  },
  {
    name: "transitions: settle writes step, attempt, key, invocation and reconciliation together; a refused step write leaves none",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const { inv, fence } = await claimed(store, scope);
        const input = beginInput(scope, inv.invocationId, { fence });
        assert.equal((await t.begin(scope, input)).started, true);
        const rec = reconciliation(scope, { invocationId: inv.invocationId });
        const next: Invocation = { ...inv, status: "reconciliation_required", updatedAt: T0 + 1 };
        delete next.leaseOwner;
        delete next.leaseToken;
        delete next.leaseExpiresAt;
        const r = await t.settle(scope, {
          fence,
          step: { ...input.step, status: "unknown", endedAt: T0 + 1 },
          attempt: { ...input.attempt, state: "UNKNOWN", endedAt: T0 + 1 },
          idempotency: { ...input.idempotency, state: "unknown", updatedAt: T0 + 1 },
          invocation: next,
          reconciliation: rec,
          entries: [entry(scope, "settled:1")],
        });
        assert.equal(typeof r.invocationRev, "number");
        const after = await store.transact(async (tx) => ({
          inv: await tx.getInvocation(scope, inv.invocationId),
          step: (await tx.getSteps(scope, inv.invocationId))[0],
          attempt: await tx.getAttempt(scope, input.attempt.attemptId),
          idem: await tx.getIdempotency(scope, input.idempotency.action, input.idempotency.idempotencyKey),
          rec: await tx.getReconciliation(scope, rec.reconciliationId),
        }));
        assert.equal(after.inv?.status, "reconciliation_required");
        assert.equal(after.inv?.rev, r.invocationRev);
        assert.equal(after.step?.status, "unknown");
        assert.equal(after.attempt?.state, "UNKNOWN");
        assert.equal(after.attempt?.seq, 1, "the attempt keeps its seq");
        assert.equal(after.idem?.state, "unknown");
        assert.equal(after.rec?.status, "open");
        // A settled step cannot go back to started: the whole advance is refused and writes nothing.
        const unsealedBefore = (await store.transact((tx) => tx.listUnsealed(scope))).length;
        await assert.rejects(
          t.advance(scope, { done: { ...input.step, status: "started" }, next: step(scope, inv.invocationId, 1, { attemptId: input.attempt.attemptId }), entries: [entry(scope, "adv:2")] }),
          (e: unknown) => isWritError(e, "CONFLICT"),
        );
        const steps = await store.transact((tx) => tx.getSteps(scope, inv.invocationId));
        assert.deepEqual(steps.map((s) => s.stepIndex), [0]);
        assert.equal((await store.transact((tx) => tx.listUnsealed(scope))).length, unsealedBefore);
      });
    },
  },
  {
    name: "transitions: record numbers a refused attempt without a lease; prepare reads steps and standing",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const t = transitionsOf(store);
        const a = attempt(scope, { state: "REFUSED", reasonCode: "DECISION_STALE", endedAt: T0 });
        assert.equal(await t.record(scope, { attempt: a, entries: [entry(scope, `attempt.refused:${a.attemptId}`)] }), 1);
        assert.equal(await t.record(scope, { attempt: attempt(scope, { state: "REFUSED" }), entries: [] }), 2);
        const { inv, fence } = await claimed(store, scope);
        const auth = authority(scope);
        await store.transact((tx) => tx.putAuthority(scope, auth));
        assert.equal((await t.begin(scope, beginInput(scope, inv.invocationId, { fence }))).started, true);
        const p = await t.prepare(scope, { invocationId: inv.invocationId, authorityRef: auth.authorityRef, approvalId: "apr_none" });
        assert.deepEqual(p.steps.map((s) => s.status), ["started"]);
        assert.equal(p.authority?.authorityRef, auth.authorityRef);
        assert.equal(p.approval, null);
      });
    },
  },
  {
    name: "transitions: sealIfHead seals on the head it was chained on and refuses (writing nothing) once the head moved",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        if (t.readUnsealed === undefined || t.sealIfHead === undefined) return; // optional: the sequencer then locks
        const scope = newScope();
        await store.transact((tx) => tx.insertUnsealed(scope, [entry(scope, "u1"), entry(scope, "u2")]));
        const read = await t.readUnsealed(scope, 10);
        assert.equal(read.head, null);
        assert.deepEqual(read.entries.map((e) => e.id), ["u1", "u2"]);
        const chain = read.entries.map((u, i) => ({ ...u, seq: i + 1, prevHash: i === 0 ? null : `h${i}`, hash: `h${i + 1}` }));
        assert.equal(await t.sealIfHead(scope, 0, [chain[0]!]), true);
        // Chained on head 0 again (a sequencer that read before the first seal): refused.
        assert.equal(await t.sealIfHead(scope, 0, [{ ...chain[1]!, seq: 1, prevHash: null }]), false);
        const after = await t.readUnsealed(scope, 10);
        assert.deepEqual(after.head, { seq: 1, hash: "h1" });
        assert.deepEqual(after.entries.map((e) => e.id), ["u2"]);
      });
    },
  },
];
