/**
 * Batches of write transitions (docs/stores.md, "Batches"), through `transitionsOf(store).batch`
 * and through concurrent single calls (which PostgreSQL coalesces into batches).
 *
 * Invariants:
 * - each member succeeds or fails alone: a lost lease, a changed expectation (the key's record,
 *   an approval's revision, an authority, a consumed decision), a refused step write or a broken
 *   input rule answers for that member only, and nothing it wrote stays;
 * - the other members of the same batch are applied whole, as their own method would apply them;
 * - outcomes come back in the members' order, each the value or error its own method gives.
 */
import assert from "node:assert/strict";
import { LeaseLostError, isWritError } from "../../core/errors.js";
import { transitionsOf, type BatchMember, type BeginFound, type BeginResult } from "../../core/transitions.js";
import type { Fence, Invocation } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { beginInput, claimed, entry, footprint } from "./cases-transitions.js";
import { T0, approval, authority, invocation, newScope, step } from "./fixtures.js";

/** A begin's rows of its own (its key, decision, steps, attempt), without the scope's journal. */
async function own(store: Parameters<typeof footprint>[0], scope: Parameters<typeof footprint>[1], input: Parameters<typeof footprint>[2]): Promise<string> {
  const f = JSON.parse(await footprint(store, scope, input)) as { unsealed?: unknown };
  delete f.unsealed;
  return JSON.stringify(f);
}

const leaseLost = (e: unknown): boolean => e instanceof LeaseLostError || isWritError(e, "LEASE_LOST");

export const batchCases: StoreConformanceCase[] = [
  {
    name: "batch: members fail alone (lost lease, changed expectation, input rule, refused step write) and the rest apply whole",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        const scope = newScope();
        const other = newScope();
        const a = await claimed(store, scope);
        const b = await claimed(store, scope);
        const c = await claimed(store, other);
        const d = await claimed(store, scope);
        const good = beginInput(scope, a.inv.invocationId, { fence: a.fence });
        const lost = beginInput(scope, b.inv.invocationId, { fence: { ...b.fence, token: "not-the-token" } });
        // The caller believes the key holds a record; there is none: nothing is written, the store answers what it found.
        const changed = beginInput(other, c.inv.invocationId, { fence: c.fence, expect: { idempotency: { state: "in_progress", attemptId: "att_x", updatedAt: T0 }, steps: "" } });
        const broken = beginInput(scope, d.inv.invocationId, { fence: d.fence });
        broken.step = { ...broken.step, stepIndex: -1 };
        const fresh = invocation(other);
        const dup = invocation(scope, { idempotencyKey: a.inv.idempotencyKey });
        const members: BatchMember[] = [
          { kind: "begin", scope, input: good },
          { kind: "begin", scope, input: lost },
          { kind: "begin", scope: other, input: changed },
          { kind: "begin", scope, input: broken },
          { kind: "admit", scope: other, input: { invocation: fresh, entries: [entry(other, `submitted:${fresh.invocationId}`)] } },
          { kind: "admit", scope, input: { invocation: dup, entries: [entry(scope, `submitted:${dup.invocationId}`)] } },
        ];
        const before = { lost: await own(store, scope, lost), changed: await own(store, other, changed), broken: await own(store, scope, broken) };
        const out = await t.batch(members);
        assert.equal(out.length, members.length);
        assert.deepEqual(out[0], { ok: true, value: { started: true, seq: 1 } });
        assert.ok(!out[1]!.ok && leaseLost(out[1]!.error), "the lost lease fails its member with LEASE_LOST");
        assert.ok(out[2]!.ok && (out[2]!.value as BeginResult).started === false, "the changed expectation answers what it found");
        assert.equal((out[2]!.value as { found: { idempotency: unknown } }).found.idempotency, null);
        assert.ok(!out[3]!.ok && isWritError(out[3]!.error, "INVALID_ARGUMENT"), "the broken input rule fails its member");
        assert.deepEqual(out[4], { ok: true, value: { created: true } });
        assert.ok(out[5]!.ok && (out[5]!.value as { created: boolean; existing?: Invocation }).created === false);
        assert.equal((out[5]!.value as { existing: Invocation }).existing.invocationId, a.inv.invocationId);
        // What failed left nothing; what succeeded is all there.
        assert.equal(await own(store, scope, lost), before.lost);
        assert.equal(await own(store, other, changed), before.changed);
        assert.equal(await own(store, scope, broken), before.broken);
        const journal = [...(await store.transact((tx) => tx.listUnsealed(scope))), ...(await store.transact((tx) => tx.listUnsealed(other)))].map((u) => u.id);
        for (const failed of [lost, changed, broken]) assert.ok(!journal.includes(failed.entries[0]!.id), "a failed member wrote no journal entry");
        assert.ok(journal.includes(good.entries[0]!.id));
        assert.ok(!journal.includes(`submitted:${dup.invocationId}`));
        const f = JSON.parse(await footprint(store, scope, good)) as { idem: { state: string }; consumed: unknown; steps: Array<{ status: string }>; attempt: { seq: number } };
        assert.equal(f.idem.state, "in_progress");
        assert.ok(f.consumed);
        assert.deepEqual(f.steps.map((x) => x.status), ["started"]);
        const admitted = await store.transact((tx) => tx.getInvocation(other, fresh.invocationId));
        assert.equal(admitted?.status, fresh.status);
        assert.equal(await store.transact((tx) => tx.getInvocation(scope, dup.invocationId)), null, "the duplicate admission inserted nothing");
        // An empty batch answers nothing.
        assert.deepEqual(await t.batch([]), []);
      });
    },
  },
  {
    name: "batch: settlements of one batch apply alone (a lost lease and a settled step sent back to started refused), the others whole",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        const scope = newScope();
        const runs: Array<{ inv: Invocation; fence: Fence; input: ReturnType<typeof beginInput> }> = [];
        for (let i = 0; i < 3; i++) {
          const { inv, fence } = await claimed(store, scope);
          const input = beginInput(scope, inv.invocationId, { fence });
          assert.equal((await t.begin(scope, input)).started, true);
          runs.push({ inv, fence, input });
        }
        const settleOf = (r: (typeof runs)[number], fence: Fence): BatchMember => ({
          kind: "settle",
          scope,
          input: {
            fence,
            step: { ...r.input.step, status: "succeeded", endedAt: T0 + 1 },
            attempt: { ...r.input.attempt, state: "SUCCEEDED", endedAt: T0 + 1 },
            idempotency: { ...r.input.idempotency, state: "succeeded", updatedAt: T0 + 1 },
            invocation: { ...r.inv, status: "succeeded", updatedAt: T0 + 1 },
            entries: [entry(scope, `settled:${r.inv.invocationId}`)],
          },
        });
        const [r0, r1, r2] = runs as [(typeof runs)[number], (typeof runs)[number], (typeof runs)[number]];
        // r2's step is settled first, so the batch's advance sending it back to started is refused.
        const first = await t.batch([settleOf(r2, r2.fence)]);
        assert.equal(first[0]!.ok, true);
        const out = await t.batch([
          settleOf(r0, r0.fence),
          settleOf(r1, { ...r1.fence, token: "stale" }),
          { kind: "advance", scope, input: { fence: r2.fence, done: { ...r2.input.step, status: "started" }, next: step(scope, r2.inv.invocationId, 1, { attemptId: r2.input.attempt.attemptId }), entries: [entry(scope, "adv:r2")] } },
        ]);
        assert.ok(out[0]!.ok && typeof (out[0]!.value as { invocationRev?: number }).invocationRev === "number");
        assert.ok(!out[1]!.ok && leaseLost(out[1]!.error));
        assert.ok(!out[2]!.ok, "the refused member fails");
        const rows = await store.transact(async (tx) => ({
          inv0: (await tx.getInvocation(scope, r0.inv.invocationId))?.status,
          inv1: (await tx.getInvocation(scope, r1.inv.invocationId))?.status,
          step1: (await tx.getSteps(scope, r1.inv.invocationId)).map((x) => x.status),
          steps2: (await tx.getSteps(scope, r2.inv.invocationId)).map((x) => `${x.stepIndex}:${x.status}`),
          unsealed: (await tx.listUnsealed(scope)).map((u) => u.id),
        }));
        assert.equal(rows.inv0, "succeeded");
        assert.equal(rows.inv1, "running", "the lost-lease member wrote nothing");
        assert.deepEqual(rows.step1, ["started"]);
        assert.deepEqual(rows.steps2, ["0:succeeded"], "the refused advance wrote nothing");
        assert.ok(rows.unsealed.includes(`settled:${r0.inv.invocationId}`));
        assert.ok(!rows.unsealed.includes(`settled:${r1.inv.invocationId}`));
        assert.ok(!rows.unsealed.includes("adv:r2"));
      });
    },
  },
  {
    name: "batch: begins whose standing moved (an approval's revision, an authority, a consumed decision) and a lost lease on a record fail alone; the others apply",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        const scope = newScope();
        const [a, b, c, d, e, f] = [
          await claimed(store, scope),
          await claimed(store, scope),
          await claimed(store, scope),
          await claimed(store, scope),
          await claimed(store, scope),
          await claimed(store, scope),
        ];
        const auth = authority(scope);
        const ap = approval(scope, { invocationId: b.inv.invocationId });
        await store.transact(async (tx) => {
          await tx.putAuthority(scope, auth);
          await tx.putApproval(scope, ap);
        });
        // The approval's stored revision, as a caller reads it before deciding.
        const apRev = (await store.transact((tx) => tx.getApproval(scope, ap.approvalId)))?.rev ?? 0;
        const authSeen = `${auth.status}:${auth.expiresAt ?? ""}:${auth.updatedAt}`;
        const good = beginInput(scope, a.inv.invocationId, { fence: a.fence, expect: { idempotency: null, steps: "", authority: { authorityRef: auth.authorityRef, seen: authSeen }, approval: { approvalId: ap.approvalId, seen: apRev } } });
        // Decided on a revision of the approval that is no longer the stored one.
        const staleApproval = beginInput(scope, b.inv.invocationId, { fence: b.fence, expect: { idempotency: null, steps: "", approval: { approvalId: ap.approvalId, seen: apRev + 1 } } });
        // Decided while the authority looked revoked.
        const staleAuthority = beginInput(scope, c.inv.invocationId, { fence: c.fence, expect: { idempotency: null, steps: "", authority: { authorityRef: auth.authorityRef, seen: "revoked::0" } } });
        // The decision was consumed before (by d's own earlier begin, alone).
        const first = beginInput(scope, d.inv.invocationId, { fence: d.fence });
        assert.equal((await t.begin(scope, first)).started, true);
        const again = beginInput(scope, e.inv.invocationId, { fence: e.fence, consumed: { ...first.consumed } });
        again.locks = [again.locks[0]!, `decision:${first.consumed.decisionId}`];
        const refusedAttempt = beginInput(scope, f.inv.invocationId).attempt;
        const recordOk: BatchMember = { kind: "record", scope, input: { fence: f.fence, attempt: { ...refusedAttempt, state: "REFUSED", endedAt: T0 }, entries: [entry(scope, `refused:${refusedAttempt.attemptId}`)] } };
        const lostAttempt = beginInput(scope, f.inv.invocationId).attempt;
        const recordLost: BatchMember = { kind: "record", scope, input: { fence: { ...f.fence, token: "stale" }, attempt: { ...lostAttempt, state: "REFUSED", endedAt: T0 }, entries: [entry(scope, `refused:${lostAttempt.attemptId}`)] } };
        const before = { b: await own(store, scope, staleApproval), c: await own(store, scope, staleAuthority), e: await own(store, scope, again) };
        const out = await t.batch([
          { kind: "begin", scope, input: staleApproval },
          { kind: "begin", scope, input: good },
          recordLost,
          { kind: "begin", scope, input: staleAuthority },
          { kind: "begin", scope, input: again },
          recordOk,
        ]);
        assert.equal(out.length, 6);
        const notStarted = (o: (typeof out)[number]): BeginFound => {
          assert.ok(o.ok && (o.value as BeginResult).started === false, "a moved standing answers what the store found");
          return (o.value as { found: BeginFound }).found;
        };
        assert.equal(notStarted(out[0]!).approval?.rev, apRev, "the stale approval member sees the stored revision");
        assert.ok(out[1]!.ok && (out[1]!.value as BeginResult).started === true, "the member whose standing held starts");
        assert.ok(!out[2]!.ok && leaseLost(out[2]!.error), "the record with a stale lease fails with LEASE_LOST");
        assert.equal(notStarted(out[3]!).authority?.authorityRef, auth.authorityRef);
        assert.equal(notStarted(out[4]!).consumed, true, "the consumed decision is reported");
        assert.ok(out[5]!.ok && typeof out[5]!.value === "number", "the record with its lease applies (its attempt's seq)");
        // What failed left nothing; what succeeded is there.
        assert.equal(await own(store, scope, staleApproval), before.b);
        assert.equal(await own(store, scope, staleAuthority), before.c);
        assert.equal(await own(store, scope, again), before.e);
        const rows = await store.transact(async (tx) => ({
          ok: await tx.getAttempt(scope, refusedAttempt.attemptId),
          lost: await tx.getAttempt(scope, lostAttempt.attemptId),
          unsealed: (await tx.listUnsealed(scope)).map((u) => u.id),
        }));
        assert.equal(rows.ok?.state, "REFUSED");
        assert.equal(rows.lost, null, "the lost-lease record wrote no attempt");
        assert.ok(rows.unsealed.includes(`refused:${refusedAttempt.attemptId}`));
        assert.ok(!rows.unsealed.includes(`refused:${lostAttempt.attemptId}`));
        assert.ok(rows.unsealed.includes(good.entries[0]!.id));
        for (const failed of [staleApproval, staleAuthority, again]) assert.ok(!rows.unsealed.includes(failed.entries[0]!.id), "a failed member wrote no journal entry");
      });
    },
  },
  {
    name: "batch: concurrent single calls (coalesced where the store batches) each answer alone",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        const scope = newScope();
        const runs = [];
        for (let i = 0; i < 12; i++) runs.push(await claimed(store, scope));
        // Every third call carries a stale token: those fail with LEASE_LOST, the rest start.
        const inputs = runs.map((r, i) => beginInput(scope, r.inv.invocationId, { fence: i % 3 === 1 ? { ...r.fence, token: "stale" } : r.fence }));
        const settled = await Promise.allSettled(inputs.map((input) => t.begin(scope, input)));
        const seqs: number[] = [];
        settled.forEach((r, i) => {
          if (i % 3 === 1) assert.ok(r.status === "rejected" && leaseLost(r.reason), `call ${i} fails with LEASE_LOST`);
          else {
            assert.ok(r.status === "fulfilled" && r.value.started, `call ${i} starts`);
            if (r.status === "fulfilled" && r.value.started) seqs.push(r.value.seq);
          }
        });
        // The started ones are numbered 1..n without gaps or repeats (a failed member used no number).
        assert.deepEqual([...seqs].sort((x, y) => x - y), Array.from({ length: seqs.length }, (_, i) => i + 1));
      });
    },
  },
];
