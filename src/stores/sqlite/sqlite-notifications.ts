/**
 * Notification records (docs/notifications.md): subscriptions with their leases, per-(subscription,
 * space) journal cursors, and deliveries whose INTEGER PRIMARY KEY is the delivery order.
 * Transactions are serial on one connection, so a claim reads then writes without SKIP LOCKED.
 * Claims go round: each lease takes the next turn number, the least recent turn is claimed first
 * (time cannot order them: many claims share a millisecond, and a frozen clock would starve some).
 */
import type Database from "better-sqlite3";
import { WritError } from "../../core/errors.js";
import type { DeliveryFilter, SubscriptionClaimOptions } from "../../core/store.js";
import type { Delivery, Subscription } from "../../core/types.js";
import type { Prepare } from "./sqlite-sql.js";

/** The notification statements, by name. */
export interface SqliteNotificationStatements {
  putSubscription: Database.Statement;
  getSubscription: Database.Statement;
  listSubscriptions: Database.Statement;
  deleteSubscription: Database.Statement;
  deleteCursors: Database.Statement;
  deleteDeliveries: Database.Statement;
  freeSubscriptions: Database.Statement;
  leaseSubscription: Database.Statement;
  holdSubscription: Database.Statement;
  notifyCursors: Database.Statement;
  putNotifyCursor: Database.Statement;
  journalHeads: Database.Statement;
  insertDelivery: Database.Statement;
  getDelivery: Database.Statement;
  listDeliveries: Database.Statement;
  nextDelivery: Database.Statement;
  updateDelivery: Database.Statement;
}

/**
 * The tenant's spaces that hold sealed entries, found by skipping from one space to the next in
 * the sealed-journal index (one probe per space, not a scan of the journal), with each head.
 */
const JOURNAL_HEADS = `
WITH RECURSIVE s(space_id) AS (
  SELECT (SELECT space_id FROM journal WHERE tenant_id = @t AND seq IS NOT NULL ORDER BY space_id LIMIT 1)
  UNION ALL
  SELECT (SELECT j.space_id FROM journal j WHERE j.tenant_id = @t AND j.seq IS NOT NULL AND j.space_id > s.space_id ORDER BY j.space_id LIMIT 1) FROM s WHERE s.space_id IS NOT NULL
)
SELECT s.space_id AS spaceId, (SELECT max(j.seq) FROM journal j WHERE j.tenant_id = @t AND j.space_id = s.space_id AND j.seq IS NOT NULL) AS seq FROM s WHERE s.space_id IS NOT NULL`;

export function prepareNotificationStatements(p: Prepare): SqliteNotificationStatements {
  return {
    putSubscription: p(
      "INSERT INTO notify_subscriptions (subscription_id, tenant_id, enabled, created_at, doc) VALUES (@id, @tenant, @enabled, @createdAt, @doc) " +
        "ON CONFLICT (subscription_id) DO UPDATE SET enabled = excluded.enabled, doc = excluded.doc WHERE notify_subscriptions.tenant_id = excluded.tenant_id",
    ),
    getSubscription: p("SELECT doc FROM notify_subscriptions WHERE subscription_id = @id AND tenant_id = @tenant").pluck(),
    listSubscriptions: p("SELECT doc FROM notify_subscriptions WHERE tenant_id = @tenant ORDER BY created_at, subscription_id").pluck(),
    deleteSubscription: p("DELETE FROM notify_subscriptions WHERE subscription_id = @id AND tenant_id = @tenant"),
    deleteCursors: p("DELETE FROM notify_cursors WHERE subscription_id = @id"),
    deleteDeliveries: p("DELETE FROM notify_deliveries WHERE subscription_id = @id"),
    freeSubscriptions: p("SELECT subscription_id AS id, doc FROM notify_subscriptions WHERE enabled = 1 AND lease_until <= @now ORDER BY lease_turn, subscription_id LIMIT @limit"),
    leaseSubscription: p("UPDATE notify_subscriptions SET lease_owner = @owner, lease_until = @until, lease_turn = (SELECT max(lease_turn) FROM notify_subscriptions) + 1 WHERE subscription_id = @id"),
    holdSubscription: p("UPDATE notify_subscriptions SET lease_until = @until WHERE subscription_id = @id AND lease_owner = @owner"),
    notifyCursors: p("SELECT space_id AS spaceId, seq FROM notify_cursors WHERE subscription_id = @id"),
    putNotifyCursor: p("INSERT INTO notify_cursors (subscription_id, space_id, seq) VALUES (@id, @space, @seq) ON CONFLICT (subscription_id, space_id) DO UPDATE SET seq = excluded.seq"),
    journalHeads: p(JOURNAL_HEADS),
    insertDelivery: p(
      "INSERT INTO notify_deliveries (delivery_id, tenant_id, subscription_id, event_id, status, doc) VALUES (@id, @tenant, @sub, @event, @status, @doc) " +
        "ON CONFLICT (subscription_id, event_id) DO NOTHING",
    ),
    getDelivery: p("SELECT seq, doc FROM notify_deliveries WHERE delivery_id = @id AND tenant_id = @tenant"),
    listDeliveries: p(
      "SELECT seq, doc FROM notify_deliveries WHERE tenant_id = @tenant AND (@sub IS NULL OR subscription_id = @sub) AND (@status IS NULL OR status = @status) AND (@before IS NULL OR seq < @before) " +
        "ORDER BY seq DESC LIMIT @limit",
    ),
    nextDelivery: p("SELECT seq, doc FROM notify_deliveries WHERE subscription_id = @sub AND status = 'pending' ORDER BY seq LIMIT 1"),
    updateDelivery: p("UPDATE notify_deliveries SET status = @status, doc = @doc WHERE delivery_id = @id AND tenant_id = @tenant AND subscription_id = @sub"),
  };
}

function parse<T>(doc: unknown): T {
  return JSON.parse(doc as string) as T;
}

function deliveryOf(row: unknown): Delivery {
  const r = row as { seq: number; doc: string };
  const d = parse<Delivery>(r.doc);
  d.seq = r.seq;
  return d;
}

function docOfDelivery(d: Delivery): string {
  const { seq: _seq, ...rest } = d;
  return JSON.stringify(rest);
}

export function putSubscription(q: SqliteNotificationStatements, sub: Subscription): void {
  if (q.putSubscription.run({ id: sub.subscriptionId, tenant: sub.tenantId, enabled: sub.enabled ? 1 : 0, createdAt: sub.createdAt, doc: JSON.stringify(sub) }).changes === 0) {
    throw new WritError("SCOPE_VIOLATION", `subscription ${sub.subscriptionId} belongs to another tenant`);
  }
}

export function getSubscription(q: SqliteNotificationStatements, tenantId: string, subscriptionId: string): Subscription | null {
  const doc = q.getSubscription.get({ id: subscriptionId, tenant: tenantId });
  return doc === undefined ? null : parse<Subscription>(doc);
}

export function listSubscriptions(q: SqliteNotificationStatements, tenantId: string): Subscription[] {
  return (q.listSubscriptions.all({ tenant: tenantId }) as string[]).map((d) => parse<Subscription>(d));
}

export function deleteSubscription(q: SqliteNotificationStatements, tenantId: string, subscriptionId: string): boolean {
  if (q.deleteSubscription.run({ id: subscriptionId, tenant: tenantId }).changes === 0) return false;
  q.deleteCursors.run({ id: subscriptionId });
  q.deleteDeliveries.run({ id: subscriptionId });
  return true;
}

export function claimSubscriptions(q: SqliteNotificationStatements, o: SubscriptionClaimOptions): Subscription[] {
  const rows = q.freeSubscriptions.all({ now: o.now, limit: o.limit }) as Array<{ id: string; doc: string }>;
  for (const r of rows) q.leaseSubscription.run({ id: r.id, owner: o.owner, until: o.now + o.leaseMs });
  return rows.map((r) => parse<Subscription>(r.doc));
}

export function holdSubscription(q: SqliteNotificationStatements, subscriptionId: string, owner: string, until: number): boolean {
  return q.holdSubscription.run({ id: subscriptionId, owner, until }).changes === 1;
}

export function notifyCursors(q: SqliteNotificationStatements, subscriptionId: string): Map<string, number> {
  return new Map((q.notifyCursors.all({ id: subscriptionId }) as Array<{ spaceId: string; seq: number }>).map((r) => [r.spaceId, r.seq]));
}

export function putNotifyCursor(q: SqliteNotificationStatements, subscriptionId: string, spaceId: string, seq: number): void {
  q.putNotifyCursor.run({ id: subscriptionId, space: spaceId, seq });
}

export function journalHeads(q: SqliteNotificationStatements, tenantId: string): Array<{ spaceId: string; seq: number }> {
  return q.journalHeads.all({ t: tenantId }) as Array<{ spaceId: string; seq: number }>;
}

export function insertDeliveries(q: SqliteNotificationStatements, deliveries: Delivery[]): number {
  let inserted = 0;
  for (const d of deliveries) {
    let r: Database.RunResult;
    try {
      r = q.insertDelivery.run({ id: d.deliveryId, tenant: d.tenantId, sub: d.subscriptionId, event: d.eventId, status: d.status, doc: docOfDelivery(d) });
    } catch (e) {
      if ((e as { code?: unknown }).code === "SQLITE_CONSTRAINT_UNIQUE") throw new WritError("CONFLICT", `delivery ${d.deliveryId} already exists`, { cause: e });
      throw e;
    }
    if (r.changes === 1) {
      d.seq = Number(r.lastInsertRowid);
      inserted++;
    }
  }
  return inserted;
}

export function getDelivery(q: SqliteNotificationStatements, tenantId: string, deliveryId: string): Delivery | null {
  const row = q.getDelivery.get({ id: deliveryId, tenant: tenantId });
  return row === undefined ? null : deliveryOf(row);
}

export function listDeliveries(q: SqliteNotificationStatements, tenantId: string, f: DeliveryFilter = {}): Delivery[] {
  return q.listDeliveries.all({ tenant: tenantId, sub: f.subscriptionId ?? null, status: f.status ?? null, before: f.beforeSeq ?? null, limit: f.limit ?? -1 }).map(deliveryOf);
}

export function nextDelivery(q: SqliteNotificationStatements, subscriptionId: string): Delivery | null {
  const row = q.nextDelivery.get({ sub: subscriptionId });
  return row === undefined ? null : deliveryOf(row);
}

export function updateDelivery(q: SqliteNotificationStatements, d: Delivery): void {
  if (q.updateDelivery.run({ id: d.deliveryId, tenant: d.tenantId, sub: d.subscriptionId, status: d.status, doc: docOfDelivery(d) }).changes === 0) {
    throw new WritError("NOT_FOUND", `no delivery ${d.deliveryId}`);
  }
}
