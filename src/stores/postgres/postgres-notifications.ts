/**
 * Notification records (docs/notifications.md): subscriptions with their leases, per-(subscription,
 * space) journal cursors, and deliveries whose bigserial `seq` is the delivery order. Claims skip
 * rows another dispatcher has locked (`FOR UPDATE SKIP LOCKED`), so two workers never lease the same
 * subscription: one sender per subscription keeps its order. Claims go round: each lease takes the
 * next turn of a sequence and the least recent turn goes first (a shared millisecond orders nothing).
 */
import { WritError } from "../../core/errors.js";
import type { DeliveryFilter, SubscriptionClaimOptions } from "../../core/store.js";
import type { Delivery, Subscription } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, type DocRow } from "./postgres-rows.js";

const PUT_SUBSCRIPTION = statement(
  "put_subscription",
  "INSERT INTO writ_notify_subscriptions AS s (subscription_id, tenant_id, enabled, created_at, doc) VALUES ($1, $2, $3, $4, $5) " +
    "ON CONFLICT (subscription_id) DO UPDATE SET enabled = excluded.enabled, doc = excluded.doc WHERE s.tenant_id = excluded.tenant_id",
);
const GET_SUBSCRIPTION = statement("get_subscription", "SELECT doc FROM writ_notify_subscriptions WHERE subscription_id = $1 AND tenant_id = $2");
const LIST_SUBSCRIPTIONS = statement("list_subscriptions", "SELECT doc FROM writ_notify_subscriptions WHERE tenant_id = $1 ORDER BY created_at, subscription_id");
const DELETE_SUBSCRIPTION = statement("delete_subscription", "DELETE FROM writ_notify_subscriptions WHERE subscription_id = $1 AND tenant_id = $2");
const DELETE_CURSORS = statement("delete_notify_cursors", "DELETE FROM writ_notify_cursors WHERE subscription_id = $1");
const DELETE_DELIVERIES = statement("delete_notify_deliveries", "DELETE FROM writ_notify_deliveries WHERE subscription_id = $1");
const CLAIM_SUBSCRIPTIONS = statement(
  "claim_subscriptions",
  "UPDATE writ_notify_subscriptions SET lease_owner = $1, lease_until = $2::bigint + $3::bigint, lease_turn = nextval('writ_notify_lease_turn') WHERE subscription_id IN (" +
    "SELECT subscription_id FROM writ_notify_subscriptions WHERE enabled AND lease_until <= $2 ORDER BY lease_turn, subscription_id LIMIT $4 FOR UPDATE SKIP LOCKED) RETURNING doc",
);
const HOLD_SUBSCRIPTION = statement("hold_subscription", "UPDATE writ_notify_subscriptions SET lease_until = $3 WHERE subscription_id = $1 AND lease_owner = $2");
const NOTIFY_CURSORS = statement("notify_cursors", "SELECT space_id, seq FROM writ_notify_cursors WHERE subscription_id = $1");
const PUT_NOTIFY_CURSOR = statement(
  "put_notify_cursor",
  "INSERT INTO writ_notify_cursors (subscription_id, space_id, seq) VALUES ($1, $2, $3) ON CONFLICT (subscription_id, space_id) DO UPDATE SET seq = excluded.seq",
);
/** The tenant's spaces with sealed entries and their heads, by skipping through the chain's primary key one space at a time. */
const JOURNAL_HEADS = statement(
  "journal_heads",
  `WITH RECURSIVE s(space_id) AS (
     SELECT (SELECT space_id FROM writ_journal_chain WHERE tenant_id = $1 ORDER BY space_id LIMIT 1)
     UNION ALL
     SELECT (SELECT c.space_id FROM writ_journal_chain c WHERE c.tenant_id = $1 AND c.space_id > s.space_id ORDER BY c.space_id LIMIT 1) FROM s WHERE s.space_id IS NOT NULL)
   SELECT s.space_id, (SELECT c.seq FROM writ_journal_chain c WHERE c.tenant_id = $1 AND c.space_id = s.space_id ORDER BY c.seq DESC LIMIT 1) AS seq FROM s WHERE s.space_id IS NOT NULL`,
);
const INSERT_DELIVERY = statement(
  "insert_delivery",
  "INSERT INTO writ_notify_deliveries (delivery_id, tenant_id, subscription_id, event_id, status, doc) VALUES ($1, $2, $3, $4, $5, $6) " +
    "ON CONFLICT (subscription_id, event_id) DO NOTHING RETURNING seq",
);
const GET_DELIVERY = statement("get_delivery", "SELECT seq, doc FROM writ_notify_deliveries WHERE delivery_id = $1 AND tenant_id = $2");
const LIST_DELIVERIES = statement(
  "list_deliveries",
  "SELECT seq, doc FROM writ_notify_deliveries WHERE tenant_id = $1 AND ($2::text IS NULL OR subscription_id = $2) AND ($3::text IS NULL OR status = $3) " +
    "AND ($4::bigint IS NULL OR seq < $4) ORDER BY seq DESC LIMIT $5",
);
const NEXT_DELIVERY = statement("next_delivery", "SELECT seq, doc FROM writ_notify_deliveries WHERE subscription_id = $1 AND status = 'pending' ORDER BY seq LIMIT 1");
const UPDATE_DELIVERY = statement("update_delivery", "UPDATE writ_notify_deliveries SET status = $4, doc = $5 WHERE delivery_id = $1 AND tenant_id = $2 AND subscription_id = $3");

interface DeliveryRow extends DocRow<Delivery> {
  seq: string | number;
}

function deliveryOf(r: DeliveryRow): Delivery {
  const d = r.doc;
  d.seq = Number(r.seq);
  return d;
}

function docOfDelivery(d: Delivery): string {
  const { seq: _seq, ...rest } = d;
  return docOf(rest);
}

export async function putSubscription(x: Exec, sub: Subscription): Promise<void> {
  if ((await x.count(PUT_SUBSCRIPTION, [sub.subscriptionId, sub.tenantId, sub.enabled, sub.createdAt, docOf(sub)])) === 0) {
    throw new WritError("SCOPE_VIOLATION", `subscription ${sub.subscriptionId} belongs to another tenant`);
  }
}

export async function getSubscription(x: Exec, tenantId: string, subscriptionId: string): Promise<Subscription | null> {
  const [row] = await x.rows<DocRow<Subscription>>(GET_SUBSCRIPTION, [subscriptionId, tenantId]);
  return row?.doc ?? null;
}

export async function listSubscriptions(x: Exec, tenantId: string): Promise<Subscription[]> {
  return (await x.rows<DocRow<Subscription>>(LIST_SUBSCRIPTIONS, [tenantId])).map((r) => r.doc);
}

export async function deleteSubscription(x: Exec, tenantId: string, subscriptionId: string): Promise<boolean> {
  if ((await x.count(DELETE_SUBSCRIPTION, [subscriptionId, tenantId])) === 0) return false;
  await x.count(DELETE_CURSORS, [subscriptionId]);
  await x.count(DELETE_DELIVERIES, [subscriptionId]);
  return true;
}

export async function claimSubscriptions(x: Exec, o: SubscriptionClaimOptions): Promise<Subscription[]> {
  return (await x.rows<DocRow<Subscription>>(CLAIM_SUBSCRIPTIONS, [o.owner, o.now, o.leaseMs, o.limit])).map((r) => r.doc);
}

export async function holdSubscription(x: Exec, subscriptionId: string, owner: string, until: number): Promise<boolean> {
  return (await x.count(HOLD_SUBSCRIPTION, [subscriptionId, owner, until])) === 1;
}

export async function notifyCursors(x: Exec, subscriptionId: string): Promise<Map<string, number>> {
  return new Map((await x.rows<{ space_id: string; seq: string | number }>(NOTIFY_CURSORS, [subscriptionId])).map((r) => [r.space_id, Number(r.seq)]));
}

export async function putNotifyCursor(x: Exec, subscriptionId: string, spaceId: string, seq: number): Promise<void> {
  await x.count(PUT_NOTIFY_CURSOR, [subscriptionId, spaceId, seq]);
}

export async function journalHeads(x: Exec, tenantId: string): Promise<Array<{ spaceId: string; seq: number }>> {
  return (await x.rows<{ space_id: string; seq: string | number }>(JOURNAL_HEADS, [tenantId])).map((r) => ({ spaceId: r.space_id, seq: Number(r.seq) }));
}

export async function insertDeliveries(x: Exec, deliveries: Delivery[]): Promise<number> {
  let inserted = 0;
  for (const d of deliveries) {
    const [row] = await x.rows<{ seq: string | number }>(INSERT_DELIVERY, [d.deliveryId, d.tenantId, d.subscriptionId, d.eventId, d.status, docOfDelivery(d)]);
    if (row) {
      d.seq = Number(row.seq);
      inserted++;
    }
  }
  return inserted;
}

export async function getDelivery(x: Exec, tenantId: string, deliveryId: string): Promise<Delivery | null> {
  const [row] = await x.rows<DeliveryRow>(GET_DELIVERY, [deliveryId, tenantId]);
  return row ? deliveryOf(row) : null;
}

export async function listDeliveries(x: Exec, tenantId: string, f: DeliveryFilter = {}): Promise<Delivery[]> {
  return (await x.rows<DeliveryRow>(LIST_DELIVERIES, [tenantId, f.subscriptionId ?? null, f.status ?? null, f.beforeSeq ?? null, limitParam(f.limit)])).map(deliveryOf);
}

export async function nextDelivery(x: Exec, subscriptionId: string): Promise<Delivery | null> {
  const [row] = await x.rows<DeliveryRow>(NEXT_DELIVERY, [subscriptionId]);
  return row ? deliveryOf(row) : null;
}

export async function updateDelivery(x: Exec, d: Delivery): Promise<void> {
  if ((await x.count(UPDATE_DELIVERY, [d.deliveryId, d.tenantId, d.subscriptionId, d.status, docOfDelivery(d)])) === 0) {
    throw new WritError("NOT_FOUND", `no delivery ${d.deliveryId}`);
  }
}
