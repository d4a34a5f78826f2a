/** What one event becomes for one subscription: the body in its format, and the outbox row. */
import type { Delivery, Subscription } from "../core/types.js";
import type { HostContext } from "./context.js";
import { standardBody, type NotificationEvent } from "./notify-events.js";
import type { ResolvedNotificationOptions } from "./notify-options.js";
import { consoleLink, slackMessage } from "./notify-slack.js";

/** The exact body sent for `e` to `s` (Standard Webhooks JSON, or a Slack Block Kit message). */
export function bodyFor(n: ResolvedNotificationOptions, s: Subscription, e: NotificationEvent): string {
  if (s.format === "slack") return JSON.stringify(slackMessage(e, n.consoleUrl));
  return standardBody(e, consoleLink(n.consoleUrl, e)?.url);
}

/** A new outbox row for one event and one subscription. */
export function newDelivery(ctx: HostContext, s: Subscription, e: NotificationEvent, body: string, now: number): Delivery {
  return {
    tenantId: s.tenantId,
    deliveryId: ctx.newId("dlv_"),
    subscriptionId: s.subscriptionId,
    eventId: e.eventId,
    eventType: e.type,
    ...(e.spaceId !== undefined ? { spaceId: e.spaceId } : {}),
    at: e.at,
    body,
    status: "pending",
    attempts: 0,
    nextAttemptAt: now,
    createdAt: now,
    updatedAt: now,
    log: [],
  };
}
