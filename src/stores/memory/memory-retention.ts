/**
 * Retention (docs/retention.md): ended invocations found oldest first across scopes, the journal's
 * hold on them (entries not archived yet), whole-invocation deletes member by member, bare
 * executions' idempotency records past the replay window, and the age-only deletes.
 */
import type { AgedRecordKind, BareCursor, EndedCursor, InvocationHold, PrunedInvocationRows, PrunedInvocations } from "../../core/store.js";
import { compensatedInvocation } from "../../core/invocation.js";
import { TERMINAL_INVOCATION_STATUSES, type IdempotencyRecord, type Invocation, type Scope } from "../../core/types.js";
import { copy } from "./memory-copy.js";
import { deleteUndoable, findScope, keyOf, type MemoryState, type ScopeData, type Work } from "./memory-state.js";

const ENDED: ReadonlySet<string> = new Set(TERMINAL_INVOCATION_STATUSES);

function* allScopes(state: MemoryState): Generator<ScopeData> {
  for (const spaces of state.tenants.values()) yield* spaces.values();
}

/** (updatedAt, tenantId, spaceId, invocationId) order; negative when `a` comes first. */
function endedOrder(a: EndedCursor, b: EndedCursor): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt - b.updatedAt;
  for (const k of ["tenantId", "spaceId", "invocationId"] as const) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

export function listEndedInvocations(w: Work, opts: { endedBefore: number; limit: number; after?: EndedCursor }): EndedCursor[] {
  const out: Invocation[] = [];
  for (const sd of allScopes(w.state)) {
    for (const inv of sd.invocations.values()) {
      if (!ENDED.has(inv.status) || inv.updatedAt >= opts.endedBefore) continue;
      if (opts.after !== undefined && endedOrder(inv, opts.after) <= 0) continue;
      out.push(inv);
    }
  }
  return out
    .sort(endedOrder)
    .slice(0, opts.limit)
    .map((i) => ({ updatedAt: i.updatedAt, tenantId: i.tenantId, spaceId: i.spaceId, invocationId: i.invocationId }));
}

export function journalNamesAbove(w: Work, scope: Scope, aboveSeq: number, invocationIds: string[]): Set<string> {
  const sd = findScope(w.state, scope);
  const wanted = new Set(invocationIds);
  const out = new Set<string>();
  if (sd === undefined) return out;
  const note = (refs: { [k: string]: string }): void => {
    const id = refs.invocationId;
    if (id !== undefined && wanted.has(id)) out.add(id);
  };
  for (const e of sd.unsealed) note(e.refs);
  for (const e of sd.journal) if (e.seq > aboveSeq) note(e.refs);
  return out;
}

/** The journal is kept in seq order: the entries above `aboveSeq` are found from the end. */
export function journalNamedSince(w: Work, scope: Scope, aboveSeq: number): { named: Set<string>; through: number } {
  const sd = findScope(w.state, scope);
  const named = new Set<string>();
  let through = aboveSeq;
  if (sd === undefined) return { named, through };
  const note = (refs: { [k: string]: string }): void => {
    if (refs.invocationId !== undefined) named.add(refs.invocationId);
  };
  for (const e of sd.unsealed) note(e.refs);
  for (let i = sd.journal.length - 1; i >= 0 && sd.journal[i]!.seq > aboveSeq; i--) {
    const e = sd.journal[i]!;
    through = Math.max(through, e.seq);
    note(e.refs);
  }
  return { named, through };
}

function noRows(): PrunedInvocationRows {
  return { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 };
}

/** Removes the steps, their matched completions, the attempts and their consumed decisions filed under `invocationId`. */
function dropExecution(w: Work, sd: ScopeData, invocationId: string, n: PrunedInvocationRows): void {
  const steps = sd.steps.get(invocationId);
  const refs = new Set<string>();
  for (const s of steps?.values() ?? []) if (s.connector !== undefined && s.externalRef !== undefined) refs.add(keyOf(s.connector, s.externalRef));
  n.steps += steps?.size ?? 0;
  if (steps !== undefined) deleteUndoable(w, sd.steps, invocationId);
  if (refs.size > 0) {
    for (const [k, c] of [...sd.completions]) {
      if (c.invocationId === invocationId && refs.has(keyOf(c.connector, c.externalRef))) {
        deleteUndoable(w, sd.completions, k);
        n.completions += 1;
      }
    }
  }
  for (let i = 0; i < sd.attempts.length; i++) {
    const a = sd.attempts[i];
    if (a == null || a.invocationId !== invocationId) continue;
    const d = a.decisionId === undefined ? undefined : sd.decisions.get(a.decisionId);
    if (d !== undefined && d.attemptId === a.attemptId) {
      deleteUndoable(w, sd.decisions, d.decisionId);
      n.decisions += 1;
    }
    sd.attempts[i] = null;
    deleteUndoable(w, sd.attemptIndex, a.attemptId);
    w.undo.push(() => {
      sd.attempts[i] = a;
    });
    n.attempts += 1;
  }
}

function holdOf(sd: ScopeData, inv: Invocation): InvocationHold | null {
  for (const r of sd.reconciliations.values()) if (r.invocationId === inv.invocationId && r.status === "open") return "open_reconciliation";
  if (inv.approvalId !== undefined && sd.approvals.get(inv.approvalId)?.status === "pending") return "pending_approval";
  return null;
}

export function invocationHolds(w: Work, scope: Scope, invocationIds: string[]): Map<string, InvocationHold> {
  const out = new Map<string, InvocationHold>();
  const sd = findScope(w.state, scope);
  if (sd === undefined) return out;
  for (const id of invocationIds) {
    const inv = sd.invocations.get(id);
    const h = inv === undefined ? null : holdOf(sd, inv);
    if (h !== null) out.set(id, h);
  }
  return out;
}

/** Member by member: each ended, unheld member whole (children first, the row last). */
export function deleteEndedInvocations(w: Work, scope: Scope, invocationIds: string[]): PrunedInvocations {
  const out: PrunedInvocations = { rows: noRows(), deleted: [], skipped: [] };
  const sd = findScope(w.state, scope);
  if (sd === undefined) return out;
  const n = out.rows;
  for (const invocationId of invocationIds) {
    const inv = sd.invocations.get(invocationId);
    if (inv === undefined) continue;
    const hold = ENDED.has(inv.status) ? holdOf(sd, inv) : "not_ended";
    if (hold !== null) {
      out.skipped.push({ invocationId, reason: hold });
      continue;
    }
    dropExecution(w, sd, invocationId, n);
    const key = keyOf(inv.action, inv.idempotencyKey);
    if (sd.idempotency.get(key)?.invocationId === invocationId) {
      deleteUndoable(w, sd.idempotency, key);
      n.idempotency += 1;
    }
    for (const r of [...sd.reconciliations.values()]) {
      if (r.invocationId !== invocationId) continue;
      deleteUndoable(w, sd.reconciliations, r.reconciliationId);
      n.reconciliations += 1;
    }
    if (inv.approvalId !== undefined && sd.approvals.has(inv.approvalId)) {
      deleteUndoable(w, sd.approvals, inv.approvalId);
      n.approvals += 1;
    }
    if (sd.invocationKeys.get(key) === invocationId) deleteUndoable(w, sd.invocationKeys, key);
    deleteUndoable(w, sd.invocations, invocationId);
    n.invocations += 1;
    out.deleted.push(invocationId);
  }
  return out;
}

const SETTLED: ReadonlySet<string> = new Set(["succeeded", "failed"]);

function bareOrder(a: BareCursor, b: BareCursor): number {
  if (a.updatedAt !== b.updatedAt) return a.updatedAt - b.updatedAt;
  for (const k of ["tenantId", "spaceId", "action", "idempotencyKey"] as const) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

/** Settled before `before` and held by no invocation of its scope: by its id, by the one a compensation undoes, or by its action and key. */
function isBare(sd: ScopeData, r: IdempotencyRecord, before: number): boolean {
  const parent = compensatedInvocation(r.invocationId);
  return SETTLED.has(r.state) && r.updatedAt < before && !sd.invocations.has(r.invocationId) && (parent === null || !sd.invocations.has(parent)) && !sd.invocationKeys.has(keyOf(r.action, r.idempotencyKey));
}

export function listBareIdempotency(w: Work, opts: { before: number; limit: number; after?: BareCursor }): { bare: IdempotencyRecord[]; next?: BareCursor } {
  const page: Array<{ sd: ScopeData; r: IdempotencyRecord }> = [];
  for (const sd of allScopes(w.state)) {
    for (const r of sd.idempotency.values()) {
      if (!SETTLED.has(r.state) || r.updatedAt >= opts.before) continue;
      if (opts.after !== undefined && bareOrder(r, opts.after) <= 0) continue;
      page.push({ sd, r });
    }
  }
  const looked = page.sort((a, b) => bareOrder(a.r, b.r)).slice(0, opts.limit);
  const bare = looked.filter(({ sd, r }) => isBare(sd, r, opts.before)).map(({ r }) => copy(r));
  const last = looked[looked.length - 1]?.r;
  if (looked.length < opts.limit || last === undefined) return { bare };
  return { bare, next: { updatedAt: last.updatedAt, tenantId: last.tenantId, spaceId: last.spaceId, action: last.action, idempotencyKey: last.idempotencyKey } };
}

export function deleteBareExecutions(w: Work, scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): PrunedInvocationRows {
  const n = noRows();
  const sd = findScope(w.state, scope);
  if (sd === undefined) return n;
  for (const k of keys) {
    const key = keyOf(k.action, k.idempotencyKey);
    const r = sd.idempotency.get(key);
    if (r === undefined || !isBare(sd, r, before)) continue;
    dropExecution(w, sd, r.invocationId, n);
    deleteUndoable(w, sd.idempotency, key);
    n.idempotency += 1;
  }
  return n;
}

/** The aged records of `kind` older than `before`, oldest first, each with its delete. */
function aged(w: Work, kind: AgedRecordKind, before: number): Array<{ at: number; drop: () => void }> {
  const out: Array<{ at: number; drop: () => void }> = [];
  if (kind === "notify_deliveries") {
    const n = w.state.notify;
    for (const d of n.deliveries.values()) {
      if (d.status === "pending" || d.updatedAt >= before) continue;
      out.push({
        at: d.updatedAt,
        drop: () => {
          deleteUndoable(w, n.deliveries, d.deliveryId);
          if (n.deliveryEvents.get(keyOf(d.subscriptionId, d.eventId)) === d.deliveryId) deleteUndoable(w, n.deliveryEvents, keyOf(d.subscriptionId, d.eventId));
        },
      });
    }
  } else {
    for (const sd of allScopes(w.state)) {
      if (kind === "expired_completions") {
        for (const [k, c] of sd.completions) {
          if (c.disposition === "expired" && (c.expiredAt ?? c.receivedAt) < before) out.push({ at: c.expiredAt ?? c.receivedAt, drop: () => deleteUndoable(w, sd.completions, k) });
        }
      } else {
        for (const [k, at] of sd.deliveries) if (at < before) out.push({ at, drop: () => deleteUndoable(w, sd.deliveries, k) });
      }
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

export function deleteAgedRecords(w: Work, kind: AgedRecordKind, before: number, limit: number): number {
  const doomed = aged(w, kind, before).slice(0, limit);
  for (const r of doomed) r.drop();
  return doomed.length;
}

export function countAgedRecords(w: Work, kind: AgedRecordKind, before: number): number {
  return aged(w, kind, before).length;
}
