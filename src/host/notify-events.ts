/**
 * Notification events (docs/notifications.md, "Events"): which sealed journal entries become which
 * events, what each carries, and whether a subscription wants it. Events are derived from the
 * journal, which every state change writes in its own transaction: an event exists exactly when
 * its state change committed.
 */
import { base64url, utf8 } from "../core/encoding.js";
import { globsCover } from "../core/glob.js";
import type { CryptoPort } from "../core/ports.js";
import { TERMINAL_INVOCATION_STATUSES, type Invocation, type InvocationStatus, type JournalEntry, type Json, type NotificationEventType, type Subscription } from "../core/types.js";

/** One event, before it is formatted for a subscription. */
export interface NotificationEvent {
  /** Stable across retries and redeliveries: receivers dedupe on it (the `webhook-id`). */
  eventId: string;
  type: NotificationEventType;
  tenantId: string;
  spaceId?: string;
  at: number;
  data: { [k: string]: Json };
}

/** A stable event id: the same source always yields the same id (`evt_` + 22 base64url characters). */
export function eventIdOf(crypto: CryptoPort, parts: ReadonlyArray<string | number>): string {
  return `evt_${base64url(crypto.sha256(utf8(JSON.stringify(parts)))).slice(0, 22)}`;
}

const DECISIONS: Record<string, string> = { "approval.granted": "approved", "approval.denied": "denied", "approval.revoked": "revoked", "approval.expired": "expired" };

/** The event types a sealed entry may become, from its type alone (no read). */
export function candidateTypes(e: JournalEntry): NotificationEventType[] {
  if (e.type === "approval.opened") return ["approval.requested"];
  if (e.type in DECISIONS) return ["approval.decided"];
  if (e.type === "reconciliation.opened") return isOverdue(e) ? ["reconciliation.opened", "handoff.overdue"] : ["reconciliation.opened"];
  if (e.type === "reconciliation.resolved") return ["reconciliation.resolved"];
  if (e.type === "breaker.opened") return ["breaker.opened"];
  if (e.type.startsWith("invocation.") && (TERMINAL_INVOCATION_STATUSES as readonly string[]).includes(e.type.slice("invocation.".length))) return ["invocation.ended"];
  return [];
}

function isOverdue(e: JournalEntry): boolean {
  const d = e.data;
  return d !== null && typeof d === "object" && !Array.isArray(d) && d.reasonCode === "COMPLETION_OVERDUE";
}

function obj(v: Json | undefined): { [k: string]: Json } {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
}

/** What an event says about its invocation (params masked by the caller's redaction). */
function invocationFacts(inv: Invocation | null): { [k: string]: Json } {
  if (!inv) return {};
  return { action: inv.action, actionVersion: inv.actionVersion, actor: { type: inv.request.actor.type, id: inv.request.actor.id }, params: inv.request.params };
}

/** The event `type` made of a sealed entry, with its invocation (already redacted) when it has one. */
export function eventOfEntry(crypto: CryptoPort, type: NotificationEventType, e: JournalEntry, inv: Invocation | null): NotificationEvent {
  const d = obj(e.data);
  const refs = e.refs ?? {};
  const data: { [k: string]: Json } = { ...(refs.invocationId ? { invocationId: refs.invocationId } : {}), ...invocationFacts(inv) };
  switch (type) {
    case "approval.requested":
      Object.assign(data, { approvalId: refs.approvalId ?? null, reasons: d.reasons ?? [], policyRef: d.policyRef ?? null, quorum: d.quorum ?? 1, votes: 0, expiresAt: d.expiresAt ?? null });
      break;
    case "approval.decided":
      Object.assign(data, { approvalId: refs.approvalId ?? null, decision: DECISIONS[e.type]!, votes: d.votes ?? 0, quorum: d.quorum ?? 1, ...(d.by !== undefined ? { by: d.by } : {}) });
      break;
    case "reconciliation.opened":
    case "handoff.overdue":
      Object.assign(data, { reconciliationId: refs.reconciliationId ?? null, reasonCode: d.reasonCode ?? null, reason: d.reason ?? null, stepIndex: d.stepIndex ?? null, ...(d.externalRef !== undefined ? { externalRef: d.externalRef } : {}) });
      break;
    case "reconciliation.resolved":
      Object.assign(data, { reconciliationId: refs.reconciliationId ?? null, outcome: d.outcome ?? null, note: d.note ?? null, ...(d.by !== undefined ? { by: d.by } : {}) });
      break;
    case "invocation.ended":
      Object.assign(data, { status: d.to ?? e.type.slice("invocation.".length), ...(d.reasons !== undefined ? { reasons: d.reasons } : {}), ...(d.error !== undefined ? { error: d.error } : {}) });
      break;
    case "breaker.opened":
      Object.assign(data, { connector: d.connector ?? null, operation: d.operation ?? null, failures: d.failures ?? null, openUntil: d.openUntil ?? null });
      break;
    default:
      break;
  }
  return { eventId: eventIdOf(crypto, [e.tenantId, e.spaceId, e.id, type]), type, tenantId: e.tenantId, spaceId: e.spaceId, at: e.at, data };
}

/** Whether the subscription wants this event: its kind, and every filter it sets. */
export function wants(sub: Subscription, e: NotificationEvent): boolean {
  if (!sub.events.includes(e.type)) return false;
  const f = sub.filter;
  if (!f) return true;
  if (f.spaces && e.spaceId !== undefined && !f.spaces.includes(e.spaceId)) return false;
  if (f.actions && typeof e.data.action === "string" && !globsCover(f.actions, e.data.action)) return false;
  if (f.actions && e.data.action === undefined && e.data.invocationId !== undefined) return false;
  if (f.statuses && e.type === "invocation.ended" && !f.statuses.includes(e.data.status as InvocationStatus)) return false;
  return true;
}

/** The Standard Webhooks body: `{ type, timestamp, data }` (data carries the event id and scope). */
export function standardBody(e: NotificationEvent, link: string | undefined): string {
  const data: { [k: string]: Json } = { eventId: e.eventId, tenantId: e.tenantId, ...(e.spaceId !== undefined ? { spaceId: e.spaceId } : {}), ...e.data };
  if (link !== undefined) data.consoleUrl = link;
  return JSON.stringify({ type: e.type, timestamp: new Date(e.at).toISOString(), data });
}
