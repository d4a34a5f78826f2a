/**
 * Moving an invocation to reconciliation_required: a record for an operator, the invocation's
 * move, and their journal entries. As data (`planReconciliation`, for a transition that writes
 * it with other changes) or inside a transaction (`toReconciliation`). Its own module, so the
 * processing, compensation and completion modules use it without importing each other.
 */
import type { ErrorTextContext } from "../core/redact.js";
import { appendJournal, draft, type JournalDraft } from "../core/journal.js";
import type { StoreTx } from "../core/store.js";
import type { Fence, Invocation, ReasonCode, ReconciliationRecord } from "../core/types.js";
import { scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";

/** A move to reconciliation_required as data: the next invocation, the record, the entries. */
export function planReconciliation(
  ctx: HostContext,
  inv: Invocation,
  stepIndex: number,
  reasonCode: ReasonCode,
  reason: string,
  externalRef: string | undefined,
  events: HostEvent[],
  patch: Partial<Invocation> = {},
): { next: Invocation; rec: ReconciliationRecord; entries: JournalDraft[] } {
  const now = ctx.o.clock.now();
  const scope = scopeOf(inv);
  const rec: ReconciliationRecord = {
    ...scope,
    reconciliationId: ctx.newId("rec_"),
    invocationId: inv.invocationId,
    stepIndex,
    reason: ctx.o.redactErrorText ? safeRedact(ctx, reason, { source: "reconciliation", action: inv.action, invocationId: inv.invocationId }) : reason,
    reasonCode,
    status: "open",
    createdAt: now,
    updatedAt: now,
  };
  if (externalRef !== undefined) rec.externalRef = externalRef;
  const moved = ctx.plan(inv, "reconciliation_required", { lastError: rec.reason, nextStep: stepIndex, ...patch }, { events, data: { reconciliationId: rec.reconciliationId, reasonCode } });
  const opened = draft("reconciliation.opened", [rec.reconciliationId], now, { invocationId: inv.invocationId, reconciliationId: rec.reconciliationId }, {
    stepIndex,
    reasonCode,
    reason: rec.reason,
    ...(externalRef !== undefined ? { externalRef } : {}),
  });
  return { next: moved.next, rec, entries: [moved.entry, opened] };
}

/** Moves an invocation to reconciliation_required with a reconciliation record. */
export async function toReconciliation(
  ctx: HostContext,
  tx: StoreTx,
  inv: Invocation,
  fence: Fence | undefined,
  stepIndex: number,
  reasonCode: ReasonCode,
  reason: string,
  externalRef: string | undefined,
  events: HostEvent[],
  patch: Partial<Invocation> = {},
): Promise<Invocation> {
  const scope = scopeOf(inv);
  // The invocation row first (lock order, docs/stores.md); unfenced callers locked it already.
  if (fence) await tx.assertLease(scope, fence);
  const p = planReconciliation(ctx, inv, stepIndex, reasonCode, reason, externalRef, events, patch);
  await tx.updateInvocation(scope, p.next, fence);
  await tx.insertReconciliation(scope, p.rec);
  await appendJournal(tx, ctx.o.crypto, scope, p.entries);
  return p.next;
}

function safeRedact(ctx: HostContext, t: string, context: ErrorTextContext): string {
  try {
    return ctx.o.redactErrorText!(t, context);
  } catch {
    return "[error text withheld]";
  }
}
