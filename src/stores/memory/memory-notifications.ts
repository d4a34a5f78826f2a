/**
 * Notification records (docs/notifications.md): subscriptions with their leases, per-(subscription,
 * space) journal cursors, and deliveries in the order they were written. Tenant-level, like API keys.
 */
import { WritError } from "../../core/errors.js";
import type { DeliveryFilter, SubscriptionClaimOptions } from "../../core/store.js";
import type { Delivery, Subscription } from "../../core/types.js";
import { copy, copyOrNull } from "./memory-copy.js";
import { deleteUndoable, keyOf, limited, setUndoable, type Work } from "./memory-state.js";

export function putSubscription(w: Work, sub: Subscription): void {
  const prev = w.state.notify.subscriptions.get(sub.subscriptionId);
  if (prev && prev.tenantId !== sub.tenantId) throw new WritError("SCOPE_VIOLATION", `subscription ${sub.subscriptionId} belongs to another tenant`);
  setUndoable(w, w.state.notify.subscriptions, sub.subscriptionId, copy(sub));
}

export function getSubscription(w: Work, tenantId: string, subscriptionId: string): Subscription | null {
  const s = w.state.notify.subscriptions.get(subscriptionId);
  return s && s.tenantId === tenantId ? copy(s) : null;
}

export function listSubscriptions(w: Work, tenantId: string): Subscription[] {
  return [...w.state.notify.subscriptions.values()].filter((s) => s.tenantId === tenantId).sort((a, b) => a.createdAt - b.createdAt || cmp(a.subscriptionId, b.subscriptionId)).map(copy);
}

export function deleteSubscription(w: Work, tenantId: string, subscriptionId: string): boolean {
  const n = w.state.notify;
  const s = n.subscriptions.get(subscriptionId);
  if (!s || s.tenantId !== tenantId) return false;
  deleteUndoable(w, n.subscriptions, subscriptionId);
  deleteUndoable(w, n.leases, subscriptionId);
  for (const k of [...n.cursors.keys()]) if (k.startsWith(keyOf(subscriptionId, ""))) deleteUndoable(w, n.cursors, k);
  for (const d of [...n.deliveries.values()]) {
    if (d.subscriptionId !== subscriptionId) continue;
    deleteUndoable(w, n.deliveries, d.deliveryId);
    deleteUndoable(w, n.deliveryEvents, keyOf(subscriptionId, d.eventId));
  }
  return true;
}

export function claimSubscriptions(w: Work, opts: SubscriptionClaimOptions): Subscription[] {
  const n = w.state.notify;
  const free = [...n.subscriptions.values()]
    .filter((s) => s.enabled && (n.leases.get(s.subscriptionId)?.until ?? 0) <= opts.now)
    .sort((a, b) => (n.leases.get(a.subscriptionId)?.turn ?? 0) - (n.leases.get(b.subscriptionId)?.turn ?? 0) || cmp(a.subscriptionId, b.subscriptionId))
    .slice(0, opts.limit);
  // Claims go round: each lease takes the next turn, the least recent turn goes first.
  for (const s of free) {
    const turn = (n.seq.get("turn") ?? 0) + 1;
    setUndoable(w, n.seq, "turn", turn);
    setUndoable(w, n.leases, s.subscriptionId, { owner: opts.owner, until: opts.now + opts.leaseMs, turn });
  }
  return free.map(copy);
}

export function holdSubscription(w: Work, subscriptionId: string, owner: string, until: number): boolean {
  const lease = w.state.notify.leases.get(subscriptionId);
  if (!lease || lease.owner !== owner || !w.state.notify.subscriptions.has(subscriptionId)) return false;
  setUndoable(w, w.state.notify.leases, subscriptionId, { ...lease, until });
  return true;
}

export function notifyCursors(w: Work, subscriptionId: string): Map<string, number> {
  const prefix = keyOf(subscriptionId, "");
  const out = new Map<string, number>();
  for (const [k, seq] of w.state.notify.cursors) if (k.startsWith(prefix)) out.set(k.slice(prefix.length), seq);
  return out;
}

export function putNotifyCursor(w: Work, subscriptionId: string, spaceId: string, seq: number): void {
  setUndoable(w, w.state.notify.cursors, keyOf(subscriptionId, spaceId), seq);
}

export function journalHeads(w: Work, tenantId: string): Array<{ spaceId: string; seq: number }> {
  const spaces = w.state.tenants.get(tenantId);
  if (!spaces) return [];
  return [...spaces.entries()].filter(([, d]) => d.journal.length > 0).map(([spaceId, d]) => ({ spaceId, seq: d.archive.pruned + d.journal.length })).sort((a, b) => cmp(a.spaceId, b.spaceId));
}

export function insertDeliveries(w: Work, deliveries: Delivery[]): number {
  const n = w.state.notify;
  let inserted = 0;
  for (const d of deliveries) {
    const k = keyOf(d.subscriptionId, d.eventId);
    if (n.deliveryEvents.has(k)) continue;
    if (n.deliveries.has(d.deliveryId)) throw new WritError("CONFLICT", `delivery ${d.deliveryId} already exists`);
    const seq = (n.seq.get("n") ?? 0) + 1;
    setUndoable(w, n.seq, "n", seq);
    d.seq = seq;
    setUndoable(w, n.deliveries, d.deliveryId, copy(d));
    setUndoable(w, n.deliveryEvents, k, d.deliveryId);
    inserted++;
  }
  return inserted;
}

export function getDelivery(w: Work, tenantId: string, deliveryId: string): Delivery | null {
  const d = w.state.notify.deliveries.get(deliveryId);
  return d && d.tenantId === tenantId ? copy(d) : null;
}

export function listDeliveries(w: Work, tenantId: string, f: DeliveryFilter = {}): Delivery[] {
  const all = [...w.state.notify.deliveries.values()].filter(
    (d) => d.tenantId === tenantId && (f.subscriptionId === undefined || d.subscriptionId === f.subscriptionId) && (f.status === undefined || d.status === f.status) && (f.beforeSeq === undefined || d.seq! < f.beforeSeq),
  );
  return limited(all.sort((a, b) => b.seq! - a.seq!), f.limit).map(copy);
}

export function nextDelivery(w: Work, subscriptionId: string): Delivery | null {
  let best: Delivery | undefined;
  for (const d of w.state.notify.deliveries.values()) if (d.subscriptionId === subscriptionId && d.status === "pending" && (best === undefined || d.seq! < best.seq!)) best = d;
  return copyOrNull(best);
}

export function updateDelivery(w: Work, d: Delivery): void {
  const prev = w.state.notify.deliveries.get(d.deliveryId);
  if (!prev || prev.tenantId !== d.tenantId || prev.subscriptionId !== d.subscriptionId) throw new WritError("NOT_FOUND", `no delivery ${d.deliveryId}`);
  d.seq = prev.seq!;
  setUndoable(w, w.state.notify.deliveries, d.deliveryId, copy(d));
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
