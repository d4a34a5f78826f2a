/**
 * Retention (docs/retention.md): ended invocations found oldest first across scopes, the journal's
 * hold on them, batch deletes of whole invocations that never touch the journal, bare executions'
 * idempotency records, age-only deletes, and the pruner deleting exactly what is ended, old enough
 * and archived.
 */
import assert from "node:assert/strict";
import { compensationInvocationId } from "../../core/invocation.js";
import { holdMemo, runRetention, type RetentionSettings } from "../../core/retention.js";
import type { BareCursor, Store, StoreTx } from "../../core/store.js";
import type { CompletionRecord, Delivery, IdempotencyRecord, Invocation, InvocationStatus, JournalEntry, Scope, UnsealedEntry } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { approval, attempt, decision, idempotency, invocation, newScope, prng, reconciliation, step, T0, uid } from "./fixtures.js";

const DAY = 86_400_000;

/** Everything an ended invocation owns, written in one transaction; its journal entries sealed (seqs returned). */
export async function seedInvocation(store: Store, scope: Scope, over: Partial<Invocation>, opts: { sealed?: boolean; approvalStatus?: "pending" | "approved"; openReconciliation?: boolean } = {}): Promise<{ inv: Invocation; seqs: number[]; decisionId: string }> {
  const appr = approval(scope, { status: opts.approvalStatus ?? "approved" });
  const inv = invocation(scope, { approvalId: appr.approvalId, ...over });
  appr.invocationId = inv.invocationId;
  const dec = decision(scope);
  const att = attempt(scope, { invocationId: inv.invocationId, decisionId: dec.decisionId, attemptId: dec.attemptId, state: "SUCCEEDED" });
  const ref = uid("ref");
  const seqs: number[] = [];
  await store.transact(async (tx) => {
    await tx.insertInvocation(scope, inv);
    await tx.putApproval(scope, appr);
    await tx.consumeDecision(scope, dec);
    await tx.insertAttempt(scope, att);
    await tx.putIdempotency(scope, idempotency(scope, { action: inv.action, idempotencyKey: inv.idempotencyKey, invocationId: inv.invocationId, attemptId: att.attemptId, state: "succeeded" }));
    await tx.putStep(scope, step(scope, inv.invocationId, 0, { status: "succeeded", connector: "payments", externalRef: ref, attemptId: att.attemptId }));
    await tx.insertReconciliation(scope, reconciliation(scope, { invocationId: inv.invocationId, status: opts.openReconciliation === true ? "open" : "resolved" }));
    const c: CompletionRecord = { ...scope, completionId: uid("cpl"), connector: "payments", externalRef: ref, outcome: "success", contentDigest: "sha256:c", disposition: "applied", invocationId: inv.invocationId, stepIndex: 0, receivedAt: T0 };
    await tx.insertCompletion(scope, c);
  });
  const entries: UnsealedEntry[] = [0, 1].map((i) => ({ ...scope, id: uid("entry"), at: T0 + i, type: "test.retention", refs: { invocationId: inv.invocationId }, data: { i } }));
  if (opts.sealed === false) {
    await store.transact((tx) => tx.insertUnsealed(scope, entries));
  } else {
    await store.transact(async (tx) => {
      const head = await tx.journalHead(scope);
      let prev = head;
      const sealed: JournalEntry[] = entries.map((e) => {
        const s: JournalEntry = { ...e, seq: (prev?.seq ?? 0) + 1, prevHash: prev?.hash ?? null, hash: uid("hash") };
        prev = { seq: s.seq, hash: s.hash };
        return s;
      });
      await tx.insertJournal(scope, sealed);
      seqs.push(...sealed.map((s) => s.seq));
    });
  }
  return { inv, seqs, decisionId: dec.decisionId };
}

/** Which of the invocation's rows are still there. */
export async function rowsOf(tx: StoreTx, scope: Scope, inv: Invocation, decisionId: string): Promise<Record<string, boolean>> {
  return {
    invocation: (await tx.getInvocation(scope, inv.invocationId)) !== null,
    byKey: (await tx.findInvocationByKey(scope, inv.action, inv.idempotencyKey)) !== null,
    steps: (await tx.getSteps(scope, inv.invocationId)).length > 0,
    attempts: (await tx.listAttempts(scope, { invocationId: inv.invocationId })).length > 0,
    decision: (await tx.getConsumedDecision(scope, decisionId)) !== null,
    idempotency: (await tx.getIdempotency(scope, inv.action, inv.idempotencyKey)) !== null,
    reconciliations: (await tx.listReconciliations(scope, { invocationId: inv.invocationId })).length > 0,
    approval: inv.approvalId !== undefined && (await tx.getApproval(scope, inv.approvalId)) !== null,
  };
}

/** A bare execution (the boundary used without the host): its key's record, an attempt with its decision, a step and a completion, no invocation row. */
async function seedBare(store: Store, scope: Scope, over: Partial<IdempotencyRecord>): Promise<{ rec: IdempotencyRecord; decisionId: string; ref: string }> {
  const invocationId = over.invocationId ?? uid("inv_bare");
  const dec = decision(scope);
  const att = attempt(scope, { invocationId, decisionId: dec.decisionId, attemptId: dec.attemptId, state: "SUCCEEDED" });
  const rec = idempotency(scope, { invocationId, attemptId: att.attemptId, ...over });
  const ref = uid("ref");
  await store.transact(async (tx) => {
    await tx.consumeDecision(scope, dec);
    await tx.insertAttempt(scope, att);
    await tx.putIdempotency(scope, rec);
    await tx.putStep(scope, step(scope, `${invocationId}`, 0, { status: "succeeded", connector: "payments", externalRef: ref, attemptId: att.attemptId }));
    await tx.insertCompletion(scope, { ...scope, completionId: uid("cpl"), connector: "payments", externalRef: ref, outcome: "success", contentDigest: "sha256:c", disposition: "applied", invocationId, stepIndex: 0, receivedAt: T0 });
  });
  return { rec, decisionId: dec.decisionId, ref };
}

/** Which of a bare execution's rows are still there (its steps and attempts: those of its attempt). */
async function bareRowsOf(tx: StoreTx, scope: Scope, x: { rec: IdempotencyRecord; decisionId: string; ref: string }): Promise<Record<string, boolean>> {
  return {
    record: (await tx.getIdempotency(scope, x.rec.action, x.rec.idempotencyKey)) !== null,
    steps: (await tx.getSteps(scope, x.rec.invocationId)).some((st) => st.attemptId === x.rec.attemptId),
    attempts: (await tx.getAttempt(scope, x.rec.attemptId)) !== null,
    decision: (await tx.getConsumedDecision(scope, x.decisionId)) !== null,
    completions: (await tx.listCompletions(scope, "payments", x.ref)).length > 0,
  };
}

export const ALL_PRESENT = { invocation: true, byKey: true, steps: true, attempts: true, decision: true, idempotency: true, reconciliations: true, approval: true };
export const ALL_GONE = { invocation: false, byKey: false, steps: false, attempts: false, decision: false, idempotency: false, reconciliations: false, approval: false };

/** Settings for a pruner over the fixed times of the cases (`T0`-based), fast (no pause). */
export function settings(over: Partial<RetentionSettings> = {}): RetentionSettings {
  return { invocationsMs: DAY, replayWindowMs: DAY, completionsMs: DAY, deliveriesMs: DAY, batchSize: 3, pauseMs: 0, everyMs: 60_000, enabled: true, ...over };
}

/**
 * The store with every transaction's methods looked up through `onGet` (reads run as
 * transactions too): it sees each lookup, and what it returns (when not undefined) replaces the
 * method.
 */
function watched(store: Store, onGet: (tx: StoreTx, method: string | symbol) => unknown): Store {
  return {
    ...store,
    // Every read and write through the proxied transaction below, none beside it.
    read: undefined,
    transitions: undefined,
    transact: (fn) =>
      store.transact((tx) =>
        fn(
          new Proxy(tx, {
            get(t, p) {
              const swapped = onGet(t, p);
              if (swapped !== undefined) return swapped;
              const v: unknown = Reflect.get(t, p, t);
              return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(t) : v;
            },
          }),
        ),
      ),
  };
}

const ENDED_STATUSES: InvocationStatus[] = ["succeeded", "failed", "denied", "cancelled"];
const OPEN_STATUSES: InvocationStatus[] = ["queued", "running", "parked", "awaiting_approval", "reconciliation_required"];

/** One invocation of a mix: which scope, its status, whether it ended long ago, its journal and holds. */
export interface MixItem {
  scope: 0 | 1;
  status: InvocationStatus;
  /** Ended (or last updated) before the cut-off. */
  old: boolean;
  /** Its journal entries are sealed (else still unsealed). */
  sealed: boolean;
  openReconciliation: boolean;
  pendingApproval: boolean;
}

/** A mix of invocations and, per scope, the fraction of its sealed journal that is archived. */
export interface PruneMix {
  items: MixItem[];
  archived: [number, number];
}

/** A random mix drawn from `rnd`. */
export function mixOf(rnd: () => number, size = 14): PruneMix {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const items: MixItem[] = [];
  for (let i = 0; i < size; i++) {
    const ended = rnd() < 0.7;
    items.push({
      scope: rnd() < 0.5 ? 0 : 1,
      status: ended ? pick(ENDED_STATUSES) : pick(OPEN_STATUSES),
      old: rnd() < 0.7,
      sealed: rnd() < 0.85,
      openReconciliation: ended && rnd() < 0.1,
      pendingApproval: ended && rnd() < 0.1,
    });
  }
  return { items, archived: [rnd(), rnd()] };
}

/**
 * Seeds `mix` in two fresh scopes, archives each scope's journal up to its fraction, runs the
 * pruner (batches of 3) and asserts that exactly the ended, old, archived invocations without an
 * open reconciliation or pending approval lost all their rows, every other one kept all of its
 * rows, and the journal is untouched. `label` names the mix in a failure.
 */
export async function checkPruneMix(store: Store, mix: PruneMix, label: string): Promise<void> {
  const scopes = [newScope(), newScope()] as const;
  const now = T0 + 1000 * DAY;
  const made: Array<Awaited<ReturnType<typeof seedInvocation>> & { scope: Scope; expect: boolean }> = [];
  for (const [i, it] of mix.items.entries()) {
    const scope = scopes[it.scope];
    const updatedAt = it.old ? now - 2 * DAY - i : now - DAY / 2 + i;
    const lease = it.status === "running" ? { leaseOwner: "w", leaseToken: "t", leaseExpiresAt: now } : {};
    const m = await seedInvocation(store, scope, { status: it.status, updatedAt, ...lease }, { sealed: it.sealed, openReconciliation: it.openReconciliation, approvalStatus: it.pendingApproval ? "pending" : "approved" });
    made.push({ ...m, scope, expect: ENDED_STATUSES.includes(it.status) && it.old && it.sealed && !it.openReconciliation && !it.pendingApproval });
  }
  const watermarks = new Map<Scope, number>();
  for (const [k, scope] of scopes.entries()) {
    const head = (await store.transact((tx) => tx.journalHead(scope)))?.seq ?? 0;
    const w = Math.floor(mix.archived[k]! * (head + 1));
    if (w > 0) await store.transact((tx) => tx.setJournalArchivedThrough(scope, w));
    watermarks.set(scope, w);
  }
  for (const m of made) m.expect = m.expect && m.seqs.every((s) => s <= (watermarks.get(m.scope) ?? 0));
  const before = await Promise.all(scopes.map((sc) => store.transact((tx) => tx.readJournal(sc))));
  const report = await runRetention(store, settings(), { now });
  assert.ok(report.complete, `${label}: the run completed`);
  for (const m of made) {
    const rows = await store.transact((tx) => rowsOf(tx, m.scope, m.inv, m.decisionId));
    assert.deepStrictEqual(rows, m.expect ? ALL_GONE : ALL_PRESENT, `${label}: ${m.inv.status} invocation ${m.inv.invocationId} (expected ${m.expect ? "pruned" : "kept"})`);
  }
  const after = await Promise.all(scopes.map((sc) => store.transact((tx) => tx.readJournal(sc))));
  assert.deepStrictEqual(after, before, `${label}: the journal is untouched`);
}

export const retentionCases: StoreConformanceCase[] = [
  {
    // Invariant: deleteEndedInvocations removes each ended, unheld member whole (its key too: the
    // same key is then free) and counts the rows by kind; a member that is not ended, or is held by
    // an open reconciliation or a pending approval, is skipped and reported with every row kept
    // while the others still go; a member already gone is in neither list; it never touches the
    // journal nor a kept invocation's rows; a rolled-back batch leaves everything.
    name: "retention: deleteEndedInvocations deletes the ended members whole and skips the others",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const a = await seedInvocation(store, scope, { status: "succeeded" });
        const b = await seedInvocation(store, scope, { status: "failed" });
        const kept = await seedInvocation(store, scope, { status: "cancelled" });
        const open = await seedInvocation(store, scope, { status: "running", leaseOwner: "w", leaseToken: "t", leaseExpiresAt: T0 + 1 });
        const reconciling = await seedInvocation(store, scope, { status: "succeeded" }, { openReconciliation: true });
        const approving = await seedInvocation(store, scope, { status: "denied" }, { approvalStatus: "pending" });
        await assert.rejects(
          store.transact(async (tx) => {
            await tx.deleteEndedInvocations(scope, [a.inv.invocationId]);
            throw new Error("rolled back");
          }),
          /rolled back/,
        );
        assert.deepStrictEqual(await store.transact((tx) => rowsOf(tx, scope, a.inv, a.decisionId)), ALL_PRESENT, "a rolled-back batch left everything");
        const holds = await store.transact((tx) => tx.invocationHolds(scope, [a.inv.invocationId, reconciling.inv.invocationId, approving.inv.invocationId]));
        assert.deepStrictEqual([...holds].sort(), [[approving.inv.invocationId, "pending_approval"], [reconciling.inv.invocationId, "open_reconciliation"]].sort());
        const members = [a, open, reconciling, approving, b].map((m) => m.inv.invocationId);
        const r = await store.transact((tx) => tx.deleteEndedInvocations(scope, [...members, uid("inv")]));
        assert.deepStrictEqual([...r.deleted].sort(), [a.inv.invocationId, b.inv.invocationId].sort(), "the ended, unheld members went");
        assert.deepStrictEqual(
          [...r.skipped].sort((x, y) => (x.invocationId < y.invocationId ? -1 : 1)),
          [
            { invocationId: open.inv.invocationId, reason: "not_ended" },
            { invocationId: reconciling.inv.invocationId, reason: "open_reconciliation" },
            { invocationId: approving.inv.invocationId, reason: "pending_approval" },
          ].sort((x, y) => (x.invocationId < y.invocationId ? -1 : 1)),
          "the others were skipped, each with its reason (a missing member in neither list)",
        );
        assert.deepStrictEqual(r.rows, { invocations: 2, steps: 2, attempts: 2, decisions: 2, idempotency: 2, reconciliations: 2, approvals: 2, completions: 2 });
        for (const m of [a, b]) assert.deepStrictEqual(await store.transact((tx) => rowsOf(tx, scope, m.inv, m.decisionId)), ALL_GONE);
        for (const m of [kept, open, reconciling, approving]) {
          assert.deepStrictEqual(await store.transact((tx) => rowsOf(tx, scope, m.inv, m.decisionId)), ALL_PRESENT, `${m.inv.status} invocation ${m.inv.invocationId} kept all its rows`);
        }
        const journal = await store.transact((tx) => tx.readJournal(scope));
        assert.deepStrictEqual(journal.map((e) => e.seq), Array.from({ length: 12 }, (_, i) => i + 1), "journal entries are never deleted by retention");
        const again = await store.transact((tx) => tx.deleteEndedInvocations(scope, [a.inv.invocationId]));
        assert.deepStrictEqual(again, { rows: { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 }, deleted: [], skipped: [] }, "a second delete finds nothing");
        // The key is free again: a new invocation with it is admitted.
        await store.transact((tx) => tx.insertInvocation(scope, invocation(scope, { action: a.inv.action, idempotencyKey: a.inv.idempotencyKey })));
        const later = await store.transact((tx) => tx.listAttempts(scope));
        assert.ok(later.every((x) => x.invocationId !== a.inv.invocationId), "listAttempts skips pruned attempts");
      });
    },
  },
  {
    // Invariant: a bare execution's settled idempotency record (no invocation holds it, neither by
    // its invocationId nor by its action and key) last updated before the cut-off is listed (at
    // most `limit` records looked at per call, a cursor going on) and deleted with the steps,
    // attempts, consumed decisions and completions filed under its invocationId; a record that is
    // young, still in progress or unknown, or that an invocation holds (by its id, as the invocation a
    // compensation `<invocation>:undo:<i>` undoes, or by its key), is neither listed nor
    // deleted, even when named to deleteBareExecutions.
    name: "retention: bare executions' idempotency records go after the cut-off, never one an invocation holds",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const base = T0 - 900 * DAY;
        const cut = base + 10;
        const old = await seedBare(store, scope, { updatedAt: base + 1, state: "succeeded" });
        const failed = await seedBare(store, scope, { updatedAt: base + 2, state: "failed" });
        const young = await seedBare(store, scope, { updatedAt: cut, state: "succeeded" });
        const pending = await seedBare(store, scope, { updatedAt: base + 3, state: "in_progress" });
        const unknown = await seedBare(store, scope, { updatedAt: base + 3, state: "unknown" });
        const host = await seedInvocation(store, scope, { status: "succeeded", updatedAt: base });
        await store.transact((tx) => tx.putIdempotency(scope, { ...idempotency(scope, { action: host.inv.action, idempotencyKey: host.inv.idempotencyKey, invocationId: host.inv.invocationId, state: "succeeded" }), updatedAt: base + 4 }));
        // Held by an invocation through its invocationId alone (another key).
        const named = await seedBare(store, scope, { updatedAt: base + 5, state: "succeeded", invocationId: host.inv.invocationId });
        // A compensation of the invocation runs as its own execution, `<invocation>:undo:<i>`: held while the invocation is there.
        const undo = await seedBare(store, scope, { updatedAt: base + 6, state: "succeeded", invocationId: compensationInvocationId(host.inv.invocationId, 0) });
        const mine = (recs: IdempotencyRecord[]): string[] => recs.filter((r) => r.tenantId === scope.tenantId && r.spaceId === scope.spaceId).map((r) => r.idempotencyKey);
        const all: IdempotencyRecord[] = [];
        let after: BareCursor | undefined;
        for (let pages = 0; pages < 10_000; pages++) {
          const page = await store.transact((tx) => tx.listBareIdempotency({ before: cut, limit: 2, ...(after ? { after } : {}) }));
          assert.ok(page.bare.length <= 2, "at most limit records a call");
          all.push(...page.bare);
          if (page.next === undefined) break;
          after = page.next;
        }
        assert.deepStrictEqual(mine(all), [old.rec.idempotencyKey, failed.rec.idempotencyKey], "the settled bare records before the cut-off, oldest first");
        const everyone = [old, failed, young, pending, unknown, named, undo].map((x) => ({ action: x.rec.action, idempotencyKey: x.rec.idempotencyKey }));
        everyone.push({ action: host.inv.action, idempotencyKey: host.inv.idempotencyKey });
        const n = await store.transact((tx) => tx.deleteBareExecutions(scope, everyone, cut));
        assert.deepStrictEqual(n, { invocations: 0, steps: 2, attempts: 2, decisions: 2, idempotency: 2, reconciliations: 0, approvals: 0, completions: 2 });
        for (const x of [old, failed]) assert.deepStrictEqual(await store.transact((tx) => bareRowsOf(tx, scope, x)), { record: false, steps: false, attempts: false, decision: false, completions: false });
        for (const x of [young, pending, unknown, named, undo]) {
          assert.deepStrictEqual(await store.transact((tx) => bareRowsOf(tx, scope, x)), { record: true, steps: true, attempts: true, decision: true, completions: true }, `${x.rec.state} record ${x.rec.idempotencyKey} kept`);
        }
        assert.deepStrictEqual(await store.transact((tx) => rowsOf(tx, scope, host.inv, host.decisionId)), ALL_PRESENT, "the invocation holding its key kept everything");
        assert.equal((await store.transact((tx) => tx.deleteBareExecutions(scope, everyone, cut))).idempotency, 0, "a second delete finds nothing");
      });
    },
  },
  {
    // Invariant: journalNamesAbove names exactly the invocations with an entry unsealed or sealed
    // above the given seq, in this scope only; listEndedInvocations lists ended invocations older
    // than the cut-off, oldest first, and a cursor goes on after the last one seen.
    name: "retention: the journal holds what it names above the watermark; ended invocations list oldest first",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const other = newScope();
        const base = T0 - 400 * DAY;
        const low = await seedInvocation(store, scope, { status: "succeeded", updatedAt: base + 3 });
        const high = await seedInvocation(store, scope, { status: "cancelled", updatedAt: base + 1 });
        const unsealed = await seedInvocation(store, scope, { status: "denied", updatedAt: base + 2 }, { sealed: false });
        const elsewhere = await seedInvocation(store, other, { status: "succeeded", updatedAt: base + 2 });
        await seedInvocation(store, scope, { status: "queued", updatedAt: base });
        const ids = [low, high, unsealed].map((x) => x.inv.invocationId);
        const at2 = await store.transact((tx) => tx.journalNamesAbove(scope, 2, ids));
        assert.deepStrictEqual([...at2].sort(), [high.inv.invocationId, unsealed.inv.invocationId].sort());
        assert.deepStrictEqual([...(await store.transact((tx) => tx.journalNamesAbove(scope, 4, ids)))], [unsealed.inv.invocationId]);
        assert.equal((await store.transact((tx) => tx.journalNamesAbove(other, 0, ids))).size, 0, "another scope's journal names none of them");
        // journalNamedSince: every id named above the seq or unsealed, and the highest seq read.
        const head = (await store.transact((tx) => tx.journalHead(scope)))!.seq;
        const since2 = await store.transact((tx) => tx.journalNamedSince(scope, 2));
        assert.equal(since2.through, head, "the read covered the head");
        for (const x of [high, unsealed]) assert.ok(since2.named.has(x.inv.invocationId), `${x.inv.status} named above 2`);
        assert.ok(!since2.named.has(elsewhere.inv.invocationId), "not another scope's");
        const atHead = await store.transact((tx) => tx.journalNamedSince(scope, head));
        assert.deepStrictEqual({ through: atHead.through, named: [...atHead.named] }, { through: head, named: [unsealed.inv.invocationId] }, "above the head: only the unsealed entry, through unchanged");
        assert.deepStrictEqual(await store.transact((tx) => tx.journalNamedSince(newScope(), 7)), { named: new Set(), through: 7 }, "an empty scope: nothing, through unchanged");
        const mine = new Set([...ids, elsewhere.inv.invocationId]);
        const listed = (await store.transact((tx) => tx.listEndedInvocations({ endedBefore: base + 3, limit: 1000 }))).filter((i) => mine.has(i.invocationId));
        assert.deepStrictEqual(
          listed.map((i) => i.invocationId),
          [high.inv.invocationId, ...[unsealed, elsewhere].sort((x, y) => (x.inv.tenantId < y.inv.tenantId ? -1 : 1)).map((x) => x.inv.invocationId)],
          "ended before the cut-off, oldest first, queued ones never",
        );
        const first = listed[0]!;
        const rest = (await store.transact((tx) => tx.listEndedInvocations({ endedBefore: base + 4, limit: 1000, after: first }))).filter((i) => mine.has(i.invocationId));
        assert.ok(!rest.some((i) => i.invocationId === first.invocationId) && rest.some((i) => i.invocationId === low.inv.invocationId), "the cursor goes on after the last seen");
      });
    },
  },
  {
    // Invariant: delivered and dead notification deliveries, expired completions and remembered
    // webhook delivery ids older than the cut-off are deleted, oldest first, at most `limit` per
    // call; pending deliveries, younger records and other completions stay.
    name: "retention: age-only records go by age, pending deliveries never",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const base = T0 - 800 * DAY;
        const sub = uid("sub");
        const d = (status: Delivery["status"], updatedAt: number): Delivery => ({
          tenantId: scope.tenantId, deliveryId: uid("dlv"), subscriptionId: sub, eventId: uid("evt"), eventType: "invocation.ended", spaceId: scope.spaceId,
          at: updatedAt, body: "{}", status, attempts: 1, nextAttemptAt: updatedAt, createdAt: updatedAt, updatedAt, log: [],
        });
        const cp = (disposition: CompletionRecord["disposition"], expiredAt: number): CompletionRecord => ({
          ...scope, completionId: uid("cpl"), connector: "payments", externalRef: uid("ref"), outcome: "success", contentDigest: "sha256:x", disposition, receivedAt: base, ...(disposition === "expired" ? { expiredAt } : {}),
        });
        const deliveries = [d("delivered", base + 1), d("dead", base + 2), d("pending", base), d("delivered", base + 10)];
        const completions = [cp("expired", base + 1), cp("expired", base + 10), cp("early", base)];
        await store.transact(async (tx) => {
          await tx.insertDeliveries(deliveries);
          for (const c of completions) await tx.insertCompletion(scope, c);
          await tx.rememberDelivery(scope, "payments", "wh-old", base + 1);
          await tx.rememberDelivery(scope, "payments", "wh-new", base + 10);
        });
        const cut = base + 5;
        assert.ok((await store.transact((tx) => tx.countAgedRecords("notify_deliveries", cut))) >= 2);
        assert.equal(await store.transact((tx) => tx.deleteAgedRecords("notify_deliveries", cut, 1)), 1, "at most limit");
        await store.transact((tx) => tx.deleteAgedRecords("notify_deliveries", cut, 1000));
        await store.transact((tx) => tx.deleteAgedRecords("expired_completions", cut, 1000));
        await store.transact((tx) => tx.deleteAgedRecords("webhook_deliveries", cut, 1000));
        const left = await store.transact((tx) => tx.listDeliveries(scope.tenantId, { limit: 100 }));
        assert.deepStrictEqual(left.map((x) => x.deliveryId).sort(), [deliveries[2]!.deliveryId, deliveries[3]!.deliveryId].sort(), "pending and young deliveries stay");
        const refs = await store.transact(async (tx) => Promise.all(completions.map(async (c) => (await tx.listCompletions(scope, c.connector, c.externalRef)).length)));
        assert.deepStrictEqual(refs, [0, 1, 1], "only the old expired completion went");
        assert.equal(await store.transact((tx) => tx.rememberDelivery(scope, "payments", "wh-old", base + 20)), true, "an old webhook delivery id was forgotten");
        assert.equal(await store.transact((tx) => tx.rememberDelivery(scope, "payments", "wh-new", base + 20)), false, "a young one is remembered");
      });
    },
  },
  {
    // Invariant: a hold memo passed from run to run reads, while the archive watermark stays, only
    // the entries sealed since its previous read (not the whole journal above the watermark again),
    // and changes nothing about what goes: an invocation held stays held while the watermark
    // stays, a new one named by new entries is held, and once the watermark passes their entries
    // both go (the memo starts over from the new watermark). A memo past its size asks for the
    // window's ids instead and prunes the same.
    name: "retention: a hold memo reads only what was sealed since while the watermark stays, and prunes the same",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        for (const maxIds of [100_000, 0]) {
          const scope = newScope();
          const now = T0 + 1000 * DAY;
          const a = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY });
          const b = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + 1 });
          await store.transact((tx) => tx.setJournalArchivedThrough(scope, a.seqs[1]!));
          // The first journal read of each run (the window's; the deletes' re-reads come after it).
          let first: { named: number | null; asked: boolean } = { named: null, asked: false };
          const counted = watched(store, (t, p) => {
            if (p === "journalNamedSince")
              return (sc: Scope, above: number) => {
                if (first.named === null && !first.asked) first.named = above;
                return t.journalNamedSince(sc, above);
              };
            if (p === "journalNamesAbove")
              return (sc: Scope, above: number, ids: string[]) => {
                if (first.named === null) first.asked = true;
                return t.journalNamesAbove(sc, above, ids);
              };
            return undefined;
          });
          const memo = holdMemo(maxIds);
          const run = async (): Promise<typeof first> => {
            first = { named: null, asked: false };
            await runRetention(counted, settings(), { now, memo });
            return first;
          };
          const head = async (): Promise<number> => (await store.transact((tx) => tx.journalHead(scope)))?.seq ?? 0;
          const present = async (m: { inv: Invocation; decisionId: string }): Promise<boolean> => (await store.transact((tx) => rowsOf(tx, scope, m.inv, m.decisionId))).invocation === true;
          // A memo past its bound (maxIds 0) reads above a new watermark once, then asks for each window's ids.
          const reads = (from: number, fresh = false) => (maxIds > 0 || fresh ? { named: from, asked: false } : { named: null, asked: true });
          assert.deepStrictEqual(await run(), reads(a.seqs[1]!, true), "the first run reads above the watermark");
          assert.deepStrictEqual([await present(a), await present(b)], [false, true], "the archived one went, the other is held");
          const h1 = await head();
          assert.deepStrictEqual(await run(), reads(h1), "the watermark stayed: only what was sealed since is read");
          assert.equal(await present(b), true, "still held");
          const c = await seedInvocation(store, scope, { status: "failed", updatedAt: now - 3 * DAY + 2 });
          assert.deepStrictEqual(await run(), reads(h1), "the new entries are read from where the last read ended");
          assert.deepStrictEqual([await present(b), await present(c)], [true, true], "the new candidate is held by its new entries");
          await store.transact((tx) => tx.setJournalArchivedThrough(scope, c.seqs[1]!));
          assert.deepStrictEqual(await run(), reads(c.seqs[1]!, true), "the watermark moved: the memo starts over from it");
          assert.deepStrictEqual([await present(b), await present(c)], [false, false], "both went once archived");
        }
      });
    },
  },
  {
    // Invariant: an entry naming an ended invocation that is journaled after the pruner read the
    // window's holds (a late completion's evidence) and before the delete holds that invocation:
    // it stays with all its rows, as does a bare record so named, and the others go.
    name: "retention: an entry journaled between the window's read and the delete holds its invocation",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const now = T0 + 1000 * DAY;
        const a = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY });
        const b = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + 1 });
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, b.seqs[1]!));
        let late = false;
        const pause = async (): Promise<void> => {
          if (late) return;
          late = true;
          await store.transact((tx) => tx.insertUnsealed(scope, [{ ...scope, id: uid("entry"), at: now, type: "completion.evidence", refs: { invocationId: a.inv.invocationId }, data: {} }]));
        };
        const report = await runRetention(store, settings({ pauseMs: 1 }), { now, pause });
        assert.ok(late, "the entry was journaled before the delete");
        const rows = await store.transact(async (tx) => [await rowsOf(tx, scope, a.inv, a.decisionId), await rowsOf(tx, scope, b.inv, b.decisionId)]);
        assert.deepStrictEqual(rows[0], ALL_PRESENT, "the invocation the late entry names keeps every row");
        assert.deepStrictEqual(rows[1], ALL_GONE, "the other went");
        // Counts span every scope of the store (a shared PostgreSQL database holds other cases' too).
        assert.ok(report.held.not_archived >= 1, "reported as held, not archived");
        assert.ok(report.pruned.invocations >= 1);
      });
    },
  },
  {
    // Invariant: an entry the delete's own re-read finds naming a member it just deleted (a writer
    // that held the member's row committed it while the delete waited for the lock) rolls the
    // delete back whole: that member keeps every row, the batch goes again without it, and the
    // other members go. The later batches of the window hold what the re-read named.
    name: "retention: a delete whose re-read names a deleted member rolls back and goes again without it",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const now = T0 + 1000 * DAY;
        const a = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY });
        const b = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + 1 });
        const c = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + 2 });
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, c.seqs[1]!));
        let planted = 0;
        let rereads = 0;
        const racing = watched(store, (t, p) => {
          if (p !== "journalNamedSince") return undefined;
          return async (sc: Scope, above: number) => {
            rereads += 1;
            // The first re-read sees an entry naming `a`, written inside the delete's transaction
            // (so it is rolled back with it), and one naming `c`, whose batch has not come yet.
            if (planted++ === 0) {
              await t.insertUnsealed(scope, [a, c].map((x) => ({ ...scope, id: uid("entry"), at: now, type: "completion.evidence", refs: { invocationId: x.inv.invocationId }, data: {} })));
            }
            return t.journalNamedSince(sc, above);
          };
        });
        const report = await runRetention(racing, settings({ batchSize: 2 }), { now });
        assert.ok(rereads >= 2, "the rolled-back batch went again");
        const rows = await store.transact(async (tx) => Promise.all([a, b, c].map((x) => rowsOf(tx, scope, x.inv, x.decisionId))));
        assert.deepStrictEqual(rows[0], ALL_PRESENT, "the member the re-read named keeps every row (the delete rolled back)");
        assert.deepStrictEqual(rows[1], ALL_GONE, "its batch-mate went on the second try");
        assert.deepStrictEqual(rows[2], ALL_PRESENT, "the later batch's member the re-read named is held");
        assert.ok(report.held.not_archived >= 2, "both reported as held, not archived");
      });
    },
  },
  {
    // Invariant: a backlog that is all held (nothing archived) is read window by window at the
    // pruner's pace, with a pause between windows, and nothing of it is deleted.
    name: "retention: windows of a held backlog are paced like batches",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const now = T0 + 1000 * DAY;
        const made: Array<Awaited<ReturnType<typeof seedInvocation>>> = [];
        for (let i = 0; i < 51; i++) made.push(await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + i }));
        // What the run does, in order: window reads, deletes and pauses.
        const events: string[] = [];
        const traced = watched(store, (_t, p) => {
          if (p === "listEndedInvocations") events.push("window");
          if (p === "deleteEndedInvocations") events.push("delete");
        });
        // batchSize 1: windows of 50 candidates, so this scope alone spans two.
        const report = await runRetention(traced, settings({ batchSize: 1, pauseMs: 1 }), { now, pause: async () => void events.push("pause") });
        const windows = events.flatMap((e, i) => (e === "window" ? [i] : []));
        assert.ok(windows.length >= 2, "the backlog spans windows");
        assert.ok(windows.slice(1).every((i) => events[i - 1] === "pause"), `a pause before every window after the first (${events.join(", ")})`);
        assert.ok(report.held.not_archived >= 51, "every one held");
        const present = await store.transact(async (tx) => Promise.all(made.map(async (m) => (await rowsOf(tx, scope, m.inv, m.decisionId)).invocation)));
        assert.ok(present.every((x) => x), "nothing of it deleted");
      });
    },
  },
  {
    // Invariant (random mixes, fixed seeds): a pruner run deletes exactly the invocations that are
    // ended AND ended before the cut-off AND whose journal entries are all at or below the archive
    // watermark AND have no open reconciliation or pending approval; every other invocation keeps
    // all its rows; the journal is untouched. Batches of 3 cross scopes and held invocations.
    name: "retention: a prune deletes exactly what is ended, old enough and archived (random mixes)",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        for (const seed of [1, 7, 42]) await checkPruneMix(store, mixOf(prng(seed)), `seed ${seed}`);
      });
    },
  },
];
