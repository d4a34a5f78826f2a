/** Notifications: the tenant's subscriptions, and each delivery with every try and a way to send it again. */
import { DELIVERY_STATUSES, type Delivery, type DeliveryStatus } from "../../core/types.js";
import type { NotificationsApi, SubscriptionView } from "../../host/notify-subscriptions.js";
import { badge, code, enc, form, h, idText, json, nothing, q, relative, table, time, type H } from "../html.js";
import type { Viewer } from "../viewer.js";

const DELIVERY_KIND: Record<DeliveryStatus, string> = { pending: "wait", delivered: "ok", dead: "bad" };

/** Only the origin of a URL is shown: a path may carry a token (Slack's incoming-webhook URLs do). */
function origin(url: string): string {
  return URL.canParse(url) ? `${new URL(url).origin}/…` : "(invalid)";
}

function subscriptionRows(subs: readonly SubscriptionView[]): H[][] {
  return subs.map((s) => [idText(s.subscriptionId), badge(s.enabled ? "enabled" : "disabled", s.enabled ? "ok" : "neutral"), h`${s.format}`, h`${origin(s.url)}`, h`${s.events.join(", ")}`, h`${s.description ?? "—"}`]);
}

function attemptsOf(d: Delivery): H {
  if (d.log.length === 0) return h`<p class="muted">Not tried yet.</p>`;
  return table({
    label: `Tries of delivery ${d.deliveryId}`,
    columns: [{ label: "When" }, { label: "Status code" }, { label: "Latency" }, { label: "Error" }, { label: "Answer (start)" }],
    rows: d.log.map((a) => [time(a.at), h`${a.statusCode ?? "—"}`, h`${a.latencyMs} ms`, h`${a.error ?? "—"}`, a.response ? code(a.response.slice(0, 200)) : h`—`]),
  });
}

function deliveryCard(v: Viewer, d: Delivery, back: string, now: number): H {
  const id = `dlv-${d.deliveryId}`;
  const last = d.log.at(-1);
  const redeliver =
    d.status === "pending"
      ? nothing
      : form(`/console/notifications/deliveries/${enc(d.deliveryId)}/redeliver`, v.session.csrf, h`<input type="hidden" name="back" value="${back}"><div class="buttons"><button type="submit">Redeliver</button></div>`, h` class="redeliver"`);
  return h`<article class="card delivery" id="${id}" data-delivery="${d.deliveryId}" data-status="${d.status}" aria-labelledby="${id}-title">
  <h2 id="${id}-title">${d.eventType} ${badge(d.status, DELIVERY_KIND[d.status])}</h2>
  <dl class="facts">
    <div><dt>Event id</dt><dd>${idText(d.eventId)}</dd></div>
    <div><dt>Subscription</dt><dd>${idText(d.subscriptionId)}</dd></div>
    <div><dt>Space</dt><dd>${d.spaceId ?? "—"}</dd></div>
    <div><dt>Happened</dt><dd>${time(d.at)} <span class="muted">(${relative(d.at, now)})</span></dd></div>
    <div><dt>Tries</dt><dd data-testid="tries">${d.attempts}${last ? h` (last: ${last.statusCode ?? "no answer"}${last.error ? h`, ${last.error}` : nothing})` : nothing}</dd></div>
    ${d.status === "pending" ? h`<div><dt>Next try</dt><dd>${time(d.nextAttemptAt)}</dd></div>` : nothing}
    ${d.deliveredAt !== undefined ? h`<div><dt>Delivered</dt><dd>${time(d.deliveredAt)}</dd></div>` : nothing}
    ${d.deadReason ? h`<div><dt>Dead</dt><dd>${d.deadReason}</dd></div>` : nothing}
  </dl>
  <details><summary>Tries and body</summary>
  ${attemptsOf(d)}
  ${json(JSON.parse(d.body) as unknown, `Body of delivery ${d.deliveryId}`)}
  </details>
  ${redeliver}
</article>`;
}

/** The page body; `status` filters the deliveries (all when absent or unknown). */
export async function notificationsBody(n: NotificationsApi, v: Viewer, query: { status?: string }, now: number): Promise<H> {
  const status = (DELIVERY_STATUSES as readonly string[]).includes(query.status ?? "") ? (query.status as DeliveryStatus) : undefined;
  const subs = await n.list(v.key.tenantId);
  const deliveries = await n.deliveries(v.key.tenantId, { limit: 50, ...(status ? { status } : {}) });
  const back = `/console/notifications${q({ status })}`;
  const tab = (s: DeliveryStatus | undefined, label: string): H => h`<li><a href="/console/notifications${q({ status: s })}"${status === s ? h` aria-current="page"` : nothing}>${label}</a></li>`;
  return h`<h1>Notifications</h1>
<p class="lead">Events go to each subscription in the order they happened, signed with its secret (Standard Webhooks). A failing receiver holds the events behind the failing one; after its last try a delivery is dead and can be sent again from here or with <code>writ notifications redeliver</code>.</p>
<section aria-labelledby="subs-title" data-testid="subscriptions">
<h2 id="subs-title">Subscriptions</h2>
${
  subs.length === 0
    ? h`<p class="empty">No subscriptions. Create one with <code>writ notifications subscribe --url … --event …</code> or <code>POST /v1/notifications/subscriptions</code>.</p>`
    : table({ label: "Subscriptions", columns: [{ label: "Subscription", cls: "id" }, { label: "State", cls: "status" }, { label: "Format" }, { label: "URL" }, { label: "Events" }, { label: "Description" }], rows: subscriptionRows(subs) })
}
</section>
<h2 id="deliveries-title">Deliveries</h2>
<nav aria-label="Delivery status"><ul class="tabs">
  ${tab(undefined, "all")}${DELIVERY_STATUSES.map((s) => tab(s, s))}
</ul></nav>
<section aria-labelledby="deliveries-title" data-testid="deliveries">
${deliveries.length > 0 ? deliveries.map((d) => deliveryCard(v, d, back, now)) : h`<p class="empty">No ${status ?? ""} deliveries.</p>`}
</section>`;
}
