/** Notification subscriptions and their deliveries (docs/notifications.md): tenant-level, for admin keys over every space. */
import type { ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import {
  DeliveryAnswer,
  DeliveryList,
  DeliveryListQuery,
  DeliveryPath,
  ErrorBody,
  RedeliverBody,
  SubscriptionAnswer,
  SubscriptionBody,
  SubscriptionCreated,
  SubscriptionList,
  SubscriptionPatch,
  SubscriptionPath,
} from "../schemas.js";

const ACCESS = { kind: "key", roles: ["admin"], tenant: true } as const;

export function notificationRoutes(s: ServerContext): Route[] {
  const n = s.runtime.host.notifications;
  return [
    defineRoute({
      method: "get",
      path: "/v1/notifications/subscriptions",
      operationId: "listSubscriptions",
      tag: "notifications",
      summary: "List the tenant's notification subscriptions",
      access: ACCESS,
      responses: { 200: { description: "subscriptions, oldest first (secrets never shown)", schema: SubscriptionList } },
      async handle({ caller }) {
        return { status: 200, body: { items: await n.list(caller.key.tenantId) } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/notifications/subscriptions",
      operationId: "createSubscription",
      tag: "notifications",
      summary: "Subscribe a URL to events (its signing secret is in this answer only)",
      description:
        "Events from now on are delivered to `url`, signed the Standard Webhooks way with the `whsec_` secret of this answer (shown once). A bad URL, an unknown event name or a bad filter is 400 naming the problem.",
      access: ACCESS,
      body: SubscriptionBody,
      responses: { 201: { description: "the subscription and its secret", schema: SubscriptionCreated } },
      async handle({ caller, body }) {
        const out = await n.create(caller.key.tenantId, body, caller.actor);
        return { status: 201, body: out };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications/subscriptions/{subscriptionId}",
      operationId: "getSubscription",
      tag: "notifications",
      summary: "Get a subscription",
      access: ACCESS,
      params: SubscriptionPath,
      responses: { 200: { description: "the subscription", schema: SubscriptionAnswer } },
      async handle({ caller, params }) {
        return { status: 200, body: { subscription: await n.get(caller.key.tenantId, params.subscriptionId) } };
      },
    }),
    defineRoute({
      method: "patch",
      path: "/v1/notifications/subscriptions/{subscriptionId}",
      operationId: "updateSubscription",
      tag: "notifications",
      summary: "Change a subscription (enabled: false pauses it)",
      access: ACCESS,
      params: SubscriptionPath,
      body: SubscriptionPatch,
      responses: { 200: { description: "the subscription as changed", schema: SubscriptionAnswer } },
      async handle({ caller, params, body }) {
        return { status: 200, body: { subscription: await n.update(caller.key.tenantId, params.subscriptionId, body) } };
      },
    }),
    defineRoute({
      method: "delete",
      path: "/v1/notifications/subscriptions/{subscriptionId}",
      operationId: "deleteSubscription",
      tag: "notifications",
      summary: "Delete a subscription with its deliveries",
      access: ACCESS,
      params: SubscriptionPath,
      responses: { 204: { description: "deleted" } },
      async handle({ c, caller, params }) {
        await n.remove(caller.key.tenantId, params.subscriptionId);
        return c.body(null, 204);
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications/deliveries",
      operationId: "listDeliveries",
      tag: "notifications",
      summary: "List deliveries, newest first, with their tries",
      access: ACCESS,
      query: DeliveryListQuery,
      responses: { 200: { description: "deliveries, newest first", schema: DeliveryList } },
      async handle({ caller, query }) {
        const limit = query.limit ?? 50;
        const items = await n.deliveries(caller.key.tenantId, { ...query, limit });
        return { status: 200, body: { items, nextBeforeSeq: items.length === limit ? (items.at(-1)?.seq ?? null) : null } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/notifications/deliveries/{deliveryId}",
      operationId: "getDelivery",
      tag: "notifications",
      summary: "Get a delivery and every try",
      access: ACCESS,
      params: DeliveryPath,
      responses: { 200: { description: "the delivery", schema: DeliveryAnswer } },
      async handle({ caller, params }) {
        return { status: 200, body: { delivery: await n.delivery(caller.key.tenantId, params.deliveryId) } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/notifications/deliveries/{deliveryId}/redeliver",
      operationId: "redeliver",
      tag: "notifications",
      summary: "Send a delivered or dead delivery again (same event id and body)",
      access: ACCESS,
      params: DeliveryPath,
      body: RedeliverBody,
      bodyOptional: true,
      responses: {
        200: { description: "the delivery, pending again", schema: DeliveryAnswer },
        409: { description: "INVALID_STATE: it is still pending", schema: ErrorBody },
      },
      async handle({ caller, params }) {
        return { status: 200, body: { delivery: await n.redeliver(caller.key.tenantId, params.deliveryId) } };
      },
    }),
  ];
}
