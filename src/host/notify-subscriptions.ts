/**
 * Notification subscriptions and deliveries as the API, CLI and console manage them
 * (docs/notifications.md): input checks that name the bad field, the signing secret (shown once,
 * sealed at rest under the host's data key when it has one), redelivery, and events that are not
 * journal entries (a failed journal verification).
 */
import { base64, utf8, fromUtf8 } from "../core/encoding.js";
import { WritError } from "../core/errors.js";
import type { JournalVerification } from "../core/journal.js";
import { readCommitted } from "../core/store.js";
import { DELIVERY_STATUSES, NOTIFICATION_EVENTS, NOTIFICATION_FORMATS, TERMINAL_INVOCATION_STATUSES, type Actor, type Delivery, type DeliveryStatus, type InvocationStatus, type NotificationEventType, type NotificationFormat, type Scope, type Subscription, type SubscriptionFilter } from "../core/types.js";
import type { HostContext } from "./context.js";
import { eventIdOf, wants, type NotificationEvent } from "./notify-events.js";
import type { ResolvedNotificationOptions } from "./notify-options.js";
import { bodyFor, newDelivery } from "./notify-body.js";

/** What a caller gives to create a subscription. */
export interface SubscriptionInput {
  url: string;
  events: string[];
  /** @defaultValue "standard" */
  format?: string;
  /** Checked like the rest: `statuses` must be ending statuses (see {@link SubscriptionFilter}). */
  filter?: { actions?: string[]; statuses?: string[]; spaces?: string[] };
  description?: string;
  /** @defaultValue true */
  enabled?: boolean;
}

/** A subscription as answers show it: never its secret. */
export type SubscriptionView = Omit<Subscription, "secret">;

export interface NotificationsApi {
  /** Creates a subscription; the answer carries its secret, the only time it is shown. */
  create(tenantId: string, input: SubscriptionInput, by?: Actor): Promise<{ subscription: SubscriptionView; secret: string }>;
  list(tenantId: string): Promise<SubscriptionView[]>;
  /** NOT_FOUND when the tenant has no such subscription. */
  get(tenantId: string, subscriptionId: string): Promise<SubscriptionView>;
  /** Changes the given fields (`enabled: false` pauses deliveries; they wait, nothing is lost). */
  update(tenantId: string, subscriptionId: string, patch: Partial<SubscriptionInput>): Promise<SubscriptionView>;
  /** Deletes it with its cursors and deliveries. */
  remove(tenantId: string, subscriptionId: string): Promise<void>;
  /** Newest first. */
  deliveries(tenantId: string, filter?: { subscriptionId?: string; status?: string; limit?: number; beforeSeq?: number }): Promise<Delivery[]>;
  delivery(tenantId: string, deliveryId: string): Promise<Delivery>;
  /** Sends a delivered or dead delivery again (the same event id and body), keeping its place in the order. */
  redeliver(tenantId: string, deliveryId: string): Promise<Delivery>;
  /** Records `journal.verify_failed` for the scope's subscribers (in one transaction); how many deliveries it wrote. */
  verifyFailed(scope: Scope, v: JournalVerification): Promise<number>;
}

const MAX_URL = 2048;
const MAX_LIST = 100;

function bad(message: string): WritError {
  return new WritError("INVALID_ARGUMENT", message);
}

/** The URL checked: http(s), no credentials; the message never repeats the URL (it may hold a token). */
export function checkUrl(v: unknown): string {
  if (typeof v !== "string" || v.length === 0) throw bad("url must be a non-empty string");
  if (v.length > MAX_URL) throw bad(`url is longer than ${MAX_URL} characters`);
  if (!URL.canParse(v)) throw bad("url is not a valid URL");
  const u = new URL(v);
  if (u.protocol !== "http:" && u.protocol !== "https:") throw bad(`url must use http or https (not ${u.protocol.replace(/:$/, "")})`);
  if (u.username !== "" || u.password !== "") throw bad("url must not carry credentials (user:password@): the secret signs each delivery instead");
  if (u.hash !== "") throw bad("url must not carry a #fragment");
  return u.href;
}

function checkEvents(v: unknown): NotificationEventType[] {
  if (!Array.isArray(v) || v.length === 0) throw bad(`events must be a non-empty list of event names (${NOTIFICATION_EVENTS.join(", ")})`);
  const out: NotificationEventType[] = [];
  for (const e of v) {
    if (typeof e !== "string" || !(NOTIFICATION_EVENTS as readonly string[]).includes(e)) {
      throw bad(`unknown event ${JSON.stringify(typeof e === "string" ? e.slice(0, 80) : e)} in events (known: ${NOTIFICATION_EVENTS.join(", ")})`);
    }
    if (!out.includes(e as NotificationEventType)) out.push(e as NotificationEventType);
  }
  return out;
}

function stringList(v: unknown, what: string): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > MAX_LIST) throw bad(`${what} must be a list of 1 to ${MAX_LIST} strings`);
  for (const s of v) if (typeof s !== "string" || s.length === 0 || s.length > 512) throw bad(`${what} must hold non-empty strings of at most 512 characters`);
  return [...new Set(v as string[])];
}

function checkFilter(v: unknown, events: readonly NotificationEventType[]): SubscriptionFilter | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw bad("filter must be an object { actions?, statuses?, spaces? }");
  const f = v as Record<string, unknown>;
  for (const k of Object.keys(f)) if (k !== "actions" && k !== "statuses" && k !== "spaces") throw bad(`filter.${k} is not a filter (known: actions, statuses, spaces)`);
  const out: SubscriptionFilter = {};
  if (f.actions !== undefined) out.actions = stringList(f.actions, "filter.actions");
  if (f.spaces !== undefined) out.spaces = stringList(f.spaces, "filter.spaces");
  if (f.statuses !== undefined) {
    const statuses = stringList(f.statuses, "filter.statuses");
    for (const s of statuses) {
      if (!(TERMINAL_INVOCATION_STATUSES as readonly string[]).includes(s)) throw bad(`filter.statuses: ${JSON.stringify(s.slice(0, 80))} is not an ending status (one of ${TERMINAL_INVOCATION_STATUSES.join(", ")})`);
    }
    if (!events.includes("invocation.ended")) throw bad("filter.statuses applies to invocation.ended only: add it to events");
    out.statuses = statuses as InvocationStatus[];
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

function checkFormat(v: unknown): NotificationFormat {
  if (v === undefined) return "standard";
  if (typeof v !== "string" || !(NOTIFICATION_FORMATS as readonly string[]).includes(v)) throw bad(`format must be one of ${NOTIFICATION_FORMATS.join(", ")}`);
  return v as NotificationFormat;
}

function checkDescription(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "string" || v.length > 200) throw bad("description must be a string of at most 200 characters");
  return v;
}

function viewOf(s: Subscription): SubscriptionView {
  const { secret: _secret, ...view } = s;
  return view;
}

/** Where a sealed secret belongs: one subscription of one tenant (an envelope cannot move). */
function secretContext(s: { tenantId: string; subscriptionId: string }): Uint8Array {
  return utf8(JSON.stringify(["notification-secret", s.tenantId, s.subscriptionId]));
}

const SEALED_PREFIX = "sealed:";

/** The secret as stored: sealed under the data key when the host has one. */
function storedSecret(ctx: HostContext, s: { tenantId: string; subscriptionId: string }, secret: string): string {
  return ctx.o.dataKey ? SEALED_PREFIX + ctx.o.dataKey.seal(utf8(secret), secretContext(s)) : secret;
}

/** The `whsec_` secret of a stored subscription. */
export function openSecret(ctx: HostContext, s: Subscription): string {
  if (!s.secret.startsWith(SEALED_PREFIX)) return s.secret;
  if (!ctx.o.dataKey) throw new WritError("INVALID_STATE", `subscription ${s.subscriptionId}'s secret is sealed and this host has no data key`);
  return fromUtf8(ctx.o.dataKey.open(s.secret.slice(SEALED_PREFIX.length), secretContext(s)));
}

export function notificationsApi(ctx: HostContext, n: ResolvedNotificationOptions): NotificationsApi {
  const { store, clock } = ctx.o;
  const load = async (tenantId: string, subscriptionId: string): Promise<Subscription> => {
    if (typeof subscriptionId !== "string" || subscriptionId.length === 0 || subscriptionId.length > 200) throw bad("subscriptionId must be a non-empty string");
    const s = await readCommitted(store, (tx) => tx.getSubscription(tenantId, subscriptionId));
    if (!s) throw new WritError("NOT_FOUND", `no subscription ${subscriptionId} in this tenant`);
    return s;
  };
  const loadDelivery = async (tenantId: string, deliveryId: string): Promise<Delivery> => {
    if (typeof deliveryId !== "string" || deliveryId.length === 0 || deliveryId.length > 200) throw bad("deliveryId must be a non-empty string");
    const d = await readCommitted(store, (tx) => tx.getDelivery(tenantId, deliveryId));
    if (!d) throw new WritError("NOT_FOUND", `no delivery ${deliveryId} in this tenant`);
    return d;
  };
  return {
    async create(tenantId, input, by) {
      if (typeof input !== "object" || input === null) throw bad("a subscription needs { url, events }");
      const url = checkUrl(input.url);
      const events = checkEvents(input.events);
      const filter = checkFilter(input.filter, events);
      const format = checkFormat(input.format);
      const description = checkDescription(input.description);
      if (input.enabled !== undefined && typeof input.enabled !== "boolean") throw bad("enabled must be a boolean");
      const now = clock.now();
      const subscriptionId = ctx.newId("sub_");
      const secret = `whsec_${base64(ctx.o.random.bytes(24))}`;
      const sub: Subscription = {
        tenantId,
        subscriptionId,
        url,
        events,
        ...(filter ? { filter } : {}),
        format,
        secret: storedSecret(ctx, { tenantId, subscriptionId }, secret),
        ...(description !== undefined ? { description } : {}),
        enabled: input.enabled ?? true,
        createdAt: now,
        updatedAt: now,
        ...(by ? { createdBy: { type: by.type, id: by.id } } : {}),
      };
      await store.transact(async (tx) => {
        await tx.putSubscription(sub);
        // Events from now on: each space's journal is read from its current head.
        for (const h of await tx.journalHeads(tenantId)) await tx.putNotifyCursor(subscriptionId, h.spaceId, h.seq);
      });
      ctx.log.info({ tenantId, subscriptionId, origin: new URL(url).origin, events }, "notification subscription created");
      return { subscription: viewOf(sub), secret };
    },
    async list(tenantId) {
      return (await readCommitted(store, (tx) => tx.listSubscriptions(tenantId))).map(viewOf);
    },
    async get(tenantId, subscriptionId) {
      return viewOf(await load(tenantId, subscriptionId));
    },
    async update(tenantId, subscriptionId, patch) {
      if (typeof patch !== "object" || patch === null) throw bad("an update must be an object");
      for (const k of Object.keys(patch)) if (!["url", "events", "format", "filter", "description", "enabled"].includes(k)) throw bad(`${k} cannot be changed (changeable: url, events, format, filter, description, enabled)`);
      return store.transact(async (tx) => {
        const cur = await tx.getSubscription(tenantId, subscriptionId);
        if (!cur) throw new WritError("NOT_FOUND", `no subscription ${subscriptionId} in this tenant`);
        const events = patch.events !== undefined ? checkEvents(patch.events) : cur.events;
        const filter = patch.filter !== undefined ? checkFilter(patch.filter, events) : checkFilter(cur.filter, events);
        if (patch.enabled !== undefined && typeof patch.enabled !== "boolean") throw bad("enabled must be a boolean");
        const description = patch.description !== undefined ? checkDescription(patch.description) : cur.description;
        const next: Subscription = {
          ...cur,
          url: patch.url !== undefined ? checkUrl(patch.url) : cur.url,
          events,
          format: patch.format !== undefined ? checkFormat(patch.format) : cur.format,
          enabled: patch.enabled ?? cur.enabled,
          updatedAt: clock.now(),
        };
        if (filter) next.filter = filter;
        else delete next.filter;
        if (description !== undefined) next.description = description;
        await tx.putSubscription(next);
        return viewOf(next);
      });
    },
    async remove(tenantId, subscriptionId) {
      if (!(await store.transact((tx) => tx.deleteSubscription(tenantId, subscriptionId)))) throw new WritError("NOT_FOUND", `no subscription ${subscriptionId} in this tenant`);
    },
    async deliveries(tenantId, filter = {}) {
      if (filter.status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(filter.status)) throw bad(`status must be one of ${DELIVERY_STATUSES.join(", ")}`);
      return readCommitted(store, (tx) =>
        tx.listDeliveries(tenantId, {
          limit: filter.limit ?? 50,
          ...(filter.subscriptionId !== undefined ? { subscriptionId: filter.subscriptionId } : {}),
          ...(filter.status !== undefined ? { status: filter.status as DeliveryStatus } : {}),
          ...(filter.beforeSeq !== undefined ? { beforeSeq: filter.beforeSeq } : {}),
        }),
      );
    },
    delivery: loadDelivery,
    async redeliver(tenantId, deliveryId) {
      return store.transact(async (tx) => {
        const d = await tx.getDelivery(tenantId, deliveryId);
        if (!d) throw new WritError("NOT_FOUND", `no delivery ${deliveryId} in this tenant`);
        if (d.status === "pending") throw new WritError("INVALID_STATE", `delivery ${deliveryId} is still pending: it is sent (or retried) on its own`);
        const now = clock.now();
        const next: Delivery = { ...d, status: "pending", attempts: 0, nextAttemptAt: now, updatedAt: now, createdAt: now };
        delete next.deadReason;
        delete next.deliveredAt;
        await tx.updateDelivery(next);
        return next;
      });
    },
    async verifyFailed(scope, v) {
      if (v.ok) return 0;
      const now = clock.now();
      const problems = v.problems.slice(0, 20).map((p) => ({ kind: p.kind, message: p.message.slice(0, 300), ...(p.seq !== undefined ? { seq: p.seq } : {}) }));
      const first = v.problems[0];
      // The same failure (first problem and its place) is one event however often it is verified.
      const e: NotificationEvent = {
        eventId: eventIdOf(ctx.o.crypto, [scope.tenantId, scope.spaceId, "journal.verify_failed", first?.kind ?? "", first?.seq ?? 0, v.problems.length]),
        type: "journal.verify_failed",
        tenantId: scope.tenantId,
        spaceId: scope.spaceId,
        at: now,
        data: { problems, problemCount: v.problems.length },
      };
      return store.transact(async (tx) => {
        const subs = (await tx.listSubscriptions(scope.tenantId)).filter((s) => s.enabled && wants(s, e));
        const ds = subs.map((s) => newDelivery(ctx, s, e, bodyFor(n, s, e), now));
        return ds.length > 0 ? tx.insertDeliveries(ds) : 0;
      });
    },
  };
}
