/**
 * `writ notifications subscribe|ls|enable|disable|rm|deliveries|redeliver` (docs/notifications.md):
 * the tenant's subscriptions and their deliveries. The CLI works on the store directly, like the
 * other operator commands; the dispatcher of `writ serve` / `writ worker` sends.
 */
import { DELIVERY_STATUSES, NOTIFICATION_EVENTS, NOTIFICATION_FORMATS, type Delivery } from "../../core/types.js";
import { intFlag, list, oneOf, required, str } from "../args.js";
import { LIMIT_OPTION, QUIET_OPTION, printList, type CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { brief, time } from "../output.js";
import type { SubscriptionView } from "../../host/notify-subscriptions.js";

function printSubscriptions(ctx: CliContext, items: readonly SubscriptionView[]): void {
  ctx.out.table(
    items,
    [
      { header: "subscription", value: (s) => s.subscriptionId },
      { header: "enabled", value: (s) => (s.enabled ? "yes" : "no") },
      { header: "format", value: (s) => s.format },
      // The origin only: a path may carry a token (Slack's incoming-webhook URLs do).
      { header: "url", value: (s) => `${new URL(s.url).origin}/…` },
      { header: "events", value: (s) => s.events.join(",") },
      { header: "description", value: (s) => s.description ?? "-" },
    ],
    "(no subscriptions: `writ notifications subscribe --url <url> --event <event>` creates one)",
  );
}

function printDeliveries(ctx: CliContext, items: readonly Delivery[]): void {
  ctx.out.table(
    items,
    [
      { header: "delivery", value: (d) => d.deliveryId },
      { header: "status", value: (d) => d.status },
      { header: "event", value: (d) => d.eventType },
      { header: "subscription", value: (d) => d.subscriptionId },
      { header: "tries", value: (d) => String(d.attempts) },
      { header: "last", value: (d) => { const l = d.log.at(-1); return l ? `${l.statusCode ?? "-"} ${brief(l.error ?? "", 40)}`.trim() : "-"; } },
      { header: "next", value: (d) => (d.status === "pending" ? time(d.nextAttemptAt) : "-") },
    ],
    "(no deliveries)",
  );
}

export const notificationsSubscribe: CommandBody = {
  options: {
    url: { type: "string", value: "<url>", description: "where to POST (http or https, no credentials)" },
    event: { type: "string", multiple: true, value: "<event>", description: `repeatable (required): ${NOTIFICATION_EVENTS.join(", ")}` },
    format: { type: "string", value: "<format>", description: `${NOTIFICATION_FORMATS.join(" or ")} (default standard)` },
    action: { type: "string", multiple: true, value: "<glob>", description: "only events about these actions (payments.*); repeatable" },
    status: { type: "string", multiple: true, value: "<status>", description: "invocation.ended only for these ending statuses; repeatable" },
    "only-space": { type: "string", multiple: true, value: "<space>", description: "only events of these spaces; repeatable (default: every space of the tenant)" },
    description: { type: "string", value: "<text>", description: "what it is for" },
  },
  details: "Prints the subscription's signing secret (whsec_…) this once: receivers verify every delivery with it (Standard Webhooks).",
  async run(ctx) {
    const url = required(ctx.values, "url", "`writ notifications subscribe`");
    const actions = list(ctx.values, "action");
    const statuses = list(ctx.values, "status");
    const spaces = list(ctx.values, "only-space");
    const filter = { ...(actions.length > 0 ? { actions } : {}), ...(statuses.length > 0 ? { statuses } : {}), ...(spaces.length > 0 ? { spaces } : {}) };
    const format = str(ctx.values, "format");
    const description = str(ctx.values, "description");
    const { tenantId } = await ctx.scope();
    const rt = await ctx.runtime();
    const { subscription, secret } = await rt.host.notifications.create(
      tenantId,
      { url, events: list(ctx.values, "event"), ...(format !== undefined ? { format } : {}), ...(Object.keys(filter).length > 0 ? { filter } : {}), ...(description !== undefined ? { description } : {}) },
      ctx.operator(),
    );
    ctx.out.result({ subscription, secret }, () => {
      ctx.out.line(secret);
      ctx.out.note(`subscription ${subscription.subscriptionId} for tenant ${tenantId} (${subscription.events.join(", ")}; ${subscription.format}). The secret above is shown this once: receivers verify deliveries with it.`);
    });
  },
};

export const notificationsLs: CommandBody = {
  options: { ...QUIET_OPTION },
  async run(ctx) {
    const { tenantId } = await ctx.scope();
    const items = await (await ctx.runtime()).host.notifications.list(tenantId);
    printList(ctx, { items }, items, (s) => s.subscriptionId, () => printSubscriptions(ctx, items));
  },
};

function toggle(enabled: boolean): CommandBody {
  return {
    options: {},
    details: enabled ? "Deliveries that waited while it was disabled go out in order." : "Events keep being recorded as deliveries; they wait until it is enabled again.",
    async run(ctx, p) {
      const { tenantId } = await ctx.scope();
      const s = await (await ctx.runtime()).host.notifications.update(tenantId, p[0]!, { enabled });
      ctx.out.result({ subscription: s }, () => ctx.out.line(`subscription ${s.subscriptionId} ${enabled ? "enabled" : "disabled"}`));
    },
  };
}
export const notificationsEnable = toggle(true);
export const notificationsDisable = toggle(false);

export const notificationsRm: CommandBody = {
  options: {},
  async run(ctx, p) {
    const { tenantId } = await ctx.scope();
    await (await ctx.runtime()).host.notifications.remove(tenantId, p[0]!);
    ctx.out.result({ deleted: p[0]! }, () => ctx.out.line(`subscription ${p[0]!} deleted with its deliveries`));
  },
};

export const notificationsDeliveries: CommandBody = {
  options: {
    subscription: { type: "string", value: "<subscription-id>", description: "only this subscription's" },
    status: { type: "string", value: "<status>", description: `${DELIVERY_STATUSES.join(", ")} (default all)` },
    ...LIMIT_OPTION,
    ...QUIET_OPTION,
  },
  details: "Newest first. `writ --json notifications deliveries` shows every try (status code, latency, error, the start of the answer).",
  async run(ctx) {
    const status = oneOf(ctx.values, "status", DELIVERY_STATUSES);
    const subscriptionId = str(ctx.values, "subscription");
    const { tenantId } = await ctx.scope();
    const items = await (await ctx.runtime()).host.notifications.deliveries(tenantId, {
      limit: intFlag(ctx.values, "limit") ?? 50,
      ...(status !== undefined ? { status } : {}),
      ...(subscriptionId !== undefined ? { subscriptionId } : {}),
    });
    printList(ctx, { items }, items, (d) => d.deliveryId, () => printDeliveries(ctx, items));
  },
};

export const notificationsRedeliver: CommandBody = {
  options: {},
  details: "Sends a delivered or dead delivery again with the same event id (receivers dedupe on it) and body; it keeps its place in its subscription's order.",
  async run(ctx, p) {
    const { tenantId } = await ctx.scope();
    const d = await (await ctx.runtime()).host.notifications.redeliver(tenantId, p[0]!);
    ctx.out.result({ delivery: d }, () => ctx.out.line(`delivery ${d.deliveryId} (${d.eventType}) is pending again; a running dispatcher sends it`));
  },
};
