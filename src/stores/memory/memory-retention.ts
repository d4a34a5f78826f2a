/**
 * Retention (docs/retention.md): ended invocations found oldest first across scopes, the journal's
 * hold on them (entries not archived yet), whole-invocation deletes and the age-only deletes.
 */
import { WritError } from "../../core/errors.js";
import type { AgedRecordKind, EndedCursor, PrunedInvocationRows } from "../../core/store.js";
import { TERMINAL_INVOCATION_STATUSES, type Invocation, type Scope } from "../../core/types.js";
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

export function listEndedInvocations(w: Work, opts: { endedBefore: number; limit: number; after?: EndedCursor }): Invocation[] {
  const out: Invocation[] = [];
  for (const sd of allScopes(w.state)) {
    for (const inv of sd.invocations.values()) {
      if (!ENDED.has(inv.status) || inv.updatedAt >= opts.endedBefore) continue;
      if (opts.after !== undefined && endedOrder(inv, opts.after) <= 0) continue;
      out.push(inv);
    }
  }
  return out.sort(endedOrder).slice(0, opts.limit).map(copy);
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

export function deleteInvocation(w: Work, scope: Scope, invocationId: string): PrunedInvocationRows {
  const n: PrunedInvocationRows = { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 };
  const sd = findScope(w.state, scope);
  const inv = sd?.invocations.get(invocationId);
  if (sd === undefined || inv === undefined) return n;
  if (!ENDED.has(inv.status)) throw new WritError("CONFLICT", `invocation ${invocationId} is ${inv.status}, not ended: retention never deletes it`);
  const steps = sd.steps.get(invocationId);
  const refs = new Set<string>();
  for (const s of steps?.values() ?? []) if (s.connector !== undefined && s.externalRef !== undefined) refs.add(keyOf(s.connector, s.externalRef));
  n.steps = steps?.size ?? 0;
  deleteUndoable(w, sd.steps, invocationId);
  for (const [k, c] of [...sd.completions]) {
    if (c.invocationId === invocationId && refs.has(keyOf(c.connector, c.externalRef))) {
      deleteUndoable(w, sd.completions, k);
      n.completions += 1;
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
  const key = keyOf(inv.action, inv.idempotencyKey);
  if (sd.idempotency.get(key)?.invocationId === invocationId) {
    deleteUndoable(w, sd.idempotency, key);
    n.idempotency = 1;
  }
  for (const r of [...sd.reconciliations.values()]) {
    if (r.invocationId !== invocationId) continue;
    deleteUndoable(w, sd.reconciliations, r.reconciliationId);
    n.reconciliations += 1;
  }
  if (inv.approvalId !== undefined && sd.approvals.has(inv.approvalId)) {
    deleteUndoable(w, sd.approvals, inv.approvalId);
    n.approvals = 1;
  }
  if (sd.invocationKeys.get(key) === invocationId) deleteUndoable(w, sd.invocationKeys, key);
  deleteUndoable(w, sd.invocations, invocationId);
  n.invocations = 1;
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
