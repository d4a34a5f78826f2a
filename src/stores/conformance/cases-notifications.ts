/**
 * Notification records (docs/notifications.md): subscriptions per tenant, their leases (one holder
 * at a time), journal cursors and heads, and deliveries in the order they were written.
 */
import assert from "node:assert/strict";
import { WritError } from "../../core/errors.js";
import type { Delivery, Subscription } from "../../core/types.js";
import { assertRecord, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, journalChain, newScope, uid } from "./fixtures.js";

function subscription(tenantId: string, over: Partial<Subscription> = {}): Subscription {
  return { tenantId, subscriptionId: uid("sub"), url: "https://hooks.example.com/writ", events: ["approval.requested"], format: "standard", secret: "whsec_MDEyMzQ1Njc4OWFiY2RlZg==", enabled: true, createdAt: T0, updatedAt: T0, ...over };
}

function delivery(sub: Subscription, over: Partial<Delivery> = {}): Delivery {
  return {
    tenantId: sub.tenantId,
    deliveryId: uid("dlv"),
    subscriptionId: sub.subscriptionId,
    eventId: uid("evt"),
    eventType: "approval.requested",
    spaceId: "s1",
    at: T0,
    body: '{"type":"approval.requested"}',
    status: "pending",
    attempts: 0,
    nextAttemptAt: T0,
    createdAt: T0,
    updatedAt: T0,
    log: [],
    ...over,
  };
}

export const notificationCases: StoreConformanceCase[] = [
  {
    // Invariant: subscriptions are found per tenant only, listed oldest first, never moved to another
    // tenant; deleting one removes its cursors and deliveries with it.
    name: "notifications: subscriptions per tenant, delete takes cursors and deliveries along",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t1 = newScope().tenantId;
        const t2 = newScope().tenantId;
        const a = subscription(t1, { createdAt: T0 + 1 });
        const b = subscription(t1, { createdAt: T0, filter: { actions: ["payments.*"] }, description: "ops" });
        await store.transact(async (tx) => {
          await tx.putSubscription(a);
          await tx.putSubscription(b);
        });
        assertRecord(await store.transact((tx) => tx.getSubscription(t1, a.subscriptionId)), a, "subscription by id");
        assert.equal(await store.transact((tx) => tx.getSubscription(t2, a.subscriptionId)), null, "another tenant does not see it");
        assert.deepStrictEqual((await store.transact((tx) => tx.listSubscriptions(t1))).map((s) => s.subscriptionId), [b.subscriptionId, a.subscriptionId]);
        assert.deepStrictEqual(await store.transact((tx) => tx.listSubscriptions(t2)), []);
        await rejectsWithCode(store.transact((tx) => tx.putSubscription({ ...a, tenantId: t2 })), "SCOPE_VIOLATION", "moving a subscription to another tenant");
        const paused = { ...a, enabled: false, updatedAt: T0 + 5 };
        await store.transact((tx) => tx.putSubscription(paused));
        assertRecord(await store.transact((tx) => tx.getSubscription(t1, a.subscriptionId)), paused, "replaced subscription");
        await store.transact(async (tx) => {
          await tx.putNotifyCursor(a.subscriptionId, "s1", 4);
          await tx.insertDeliveries([delivery(a)]);
        });
        assert.equal(await store.transact((tx) => tx.deleteSubscription(t2, a.subscriptionId)), false, "another tenant cannot delete it");
        assert.equal(await store.transact((tx) => tx.deleteSubscription(t1, a.subscriptionId)), true);
        assert.equal(await store.transact((tx) => tx.deleteSubscription(t1, a.subscriptionId)), false, "a second delete finds nothing");
        assert.equal(await store.transact((tx) => tx.getSubscription(t1, a.subscriptionId)), null);
        assert.equal((await store.transact((tx) => tx.notifyCursors(a.subscriptionId))).size, 0, "its cursors are gone");
        assert.deepStrictEqual(await store.transact((tx) => tx.listDeliveries(t1, { subscriptionId: a.subscriptionId })), [], "its deliveries are gone");
      });
    },
  },
  {
    // Invariant: a leased subscription is not claimed again until its lease lapses or is given
    // back; disabled ones are never claimed; only the lease's owner can extend or release it.
    name: "notifications: subscription leases have one holder at a time",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = newScope().tenantId;
        const on = subscription(t);
        const off = subscription(t, { enabled: false });
        await store.transact(async (tx) => {
          await tx.putSubscription(on);
          await tx.putSubscription(off);
        });
        // Other cases' subscriptions may share the storage: only this tenant's are looked at.
        const claim = async (owner: string, now: number): Promise<string[]> =>
          (await store.transact((tx) => tx.claimSubscriptions({ owner, now, leaseMs: 1000, limit: 10_000 }))).filter((s) => s.tenantId === t).map((s) => s.subscriptionId);
        const now = T0 + 1_000_000_000;
        assert.deepStrictEqual(await claim("a", now), [on.subscriptionId], "the enabled one is leased");
        assert.deepStrictEqual(await claim("b", now + 10), [], "not again while the lease runs");
        assert.equal(await store.transact((tx) => tx.holdSubscription(on.subscriptionId, "b", now + 5000)), false, "another owner cannot extend it");
        assert.equal(await store.transact((tx) => tx.holdSubscription(on.subscriptionId, "a", now + 5000)), true, "its owner extends it");
        assert.deepStrictEqual(await claim("b", now + 2000), [], "the extended lease still runs");
        assert.deepStrictEqual(await claim("b", now + 5000), [on.subscriptionId], "claimed once the lease lapsed");
        assert.equal(await store.transact((tx) => tx.holdSubscription(on.subscriptionId, "a", now + 9000)), false, "the old owner lost it");
        assert.equal(await store.transact((tx) => tx.holdSubscription(on.subscriptionId, "b", 0)), true, "released");
        assert.deepStrictEqual(await claim("c", now + 5001), [on.subscriptionId], "a released lease is claimed at once");
        assert.equal(await store.transact((tx) => tx.holdSubscription(uid("sub"), "c", now)), false, "no lease on an unknown subscription");
      });
    },
  },
  {
    // Invariant: cursors are kept per (subscription, space); journal heads name each space of the
    // tenant that holds sealed entries, with its highest seq, and no other tenant's.
    name: "notifications: cursors per space, journal heads per tenant",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const s1 = newScope();
        const s2 = { tenantId: s1.tenantId, spaceId: `${s1.spaceId}-b` };
        const other = newScope();
        await store.transact(async (tx) => {
          await tx.insertJournal(s1, journalChain(s1, 3));
          await tx.insertJournal(s2, journalChain(s2, 1));
          await tx.insertJournal(other, journalChain(other, 2));
        });
        const heads = await store.transact((tx) => tx.journalHeads(s1.tenantId));
        assert.deepStrictEqual([...heads].sort((a, b) => (a.spaceId < b.spaceId ? -1 : 1)), [
          { spaceId: s1.spaceId, seq: 3 },
          { spaceId: s2.spaceId, seq: 1 },
        ]);
        assert.deepStrictEqual(await store.transact((tx) => tx.journalHeads(newScope().tenantId)), []);
        const sub = uid("sub");
        await store.transact(async (tx) => {
          await tx.putNotifyCursor(sub, s1.spaceId, 2);
          await tx.putNotifyCursor(sub, s2.spaceId, 1);
          await tx.putNotifyCursor(sub, s1.spaceId, 3);
        });
        assert.deepStrictEqual(
          [...(await store.transact((tx) => tx.notifyCursors(sub))).entries()].sort(),
          [
            [s1.spaceId, 3],
            [s2.spaceId, 1],
          ].sort(),
        );
      });
    },
  },
  {
    // Invariant: deliveries get increasing seqs in the order written; an event already queued for
    // a subscription (this batch included) is skipped; the head of the line is the oldest pending
    // one; lists are newest first, per tenant, filtered and paged; a rolled-back insert leaves nothing.
    name: "notifications: deliveries keep their order and are written once per event",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = newScope().tenantId;
        const sub = subscription(t);
        const other = subscription(t);
        const d1 = delivery(sub);
        const d2 = delivery(sub);
        const dup = delivery(sub, { eventId: d1.eventId });
        const d3 = delivery(other);
        assert.equal(await store.transact((tx) => tx.insertDeliveries([d1, d2, dup, delivery(sub, { eventId: d2.eventId })])), 2);
        assert.equal(await store.transact((tx) => tx.insertDeliveries([d3, delivery(sub, { eventId: d1.eventId })])), 1);
        assert.ok(d1.seq! < d2.seq! && d2.seq! < d3.seq!, "seqs follow the order written");
        await rejectsWithCode(store.transact((tx) => tx.insertDeliveries([delivery(other, { deliveryId: d1.deliveryId })])), "CONFLICT", "a delivery id clash");
        await rejectsWithCode(
          store.transact(async (tx) => {
            await tx.insertDeliveries([delivery(sub)]);
            throw new WritError("INVALID_STATE", "roll back");
          }),
          "INVALID_STATE",
          "rolled back",
        );
        assert.equal((await store.transact((tx) => tx.listDeliveries(t, { subscriptionId: sub.subscriptionId }))).length, 2, "the rolled-back delivery is not there");
        assertRecord(await store.transact((tx) => tx.getDelivery(t, d1.deliveryId)), d1, "delivery by id");
        assert.equal(await store.transact((tx) => tx.getDelivery(newScope().tenantId, d1.deliveryId)), null, "another tenant does not see it");
        assert.equal((await store.transact((tx) => tx.nextDelivery(sub.subscriptionId)))?.deliveryId, d1.deliveryId, "the oldest pending one first");
        const sent: Delivery = { ...d1, status: "delivered", attempts: 1, deliveredAt: T0 + 1, updatedAt: T0 + 1, log: [{ at: T0 + 1, latencyMs: 3, statusCode: 204 }] };
        await store.transact((tx) => tx.updateDelivery(sent));
        assertRecord(await store.transact((tx) => tx.getDelivery(t, d1.deliveryId)), sent, "updated delivery");
        assert.equal((await store.transact((tx) => tx.nextDelivery(sub.subscriptionId)))?.deliveryId, d2.deliveryId, "the next one is the head now");
        assert.deepStrictEqual((await store.transact((tx) => tx.listDeliveries(t))).map((d) => d.deliveryId), [d3.deliveryId, d2.deliveryId, d1.deliveryId], "newest first");
        assert.deepStrictEqual((await store.transact((tx) => tx.listDeliveries(t, { status: "delivered" }))).map((d) => d.deliveryId), [d1.deliveryId]);
        assert.deepStrictEqual((await store.transact((tx) => tx.listDeliveries(t, { beforeSeq: d3.seq!, limit: 1 }))).map((d) => d.deliveryId), [d2.deliveryId], "a page before a seq");
        await rejectsWithCode(store.transact((tx) => tx.updateDelivery(delivery(sub))), "NOT_FOUND", "an unknown delivery");
        await rejectsWithCode(store.transact((tx) => tx.updateDelivery({ ...d2, tenantId: newScope().tenantId })), "NOT_FOUND", "another tenant's delivery");
      });
    },
  },
];
