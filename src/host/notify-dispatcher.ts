/**
 * The notification dispatcher (docs/notifications.md, "Delivery"): the sealed journal is the outbox.
 * A dispatcher leases a subscription (one sender per subscription across every process), turns the
 * sealed entries past the subscription's cursor into deliveries in one transaction with the
 * cursor's move, then sends the subscription's pending deliveries oldest first: a failing head
 * holds the ones behind it until it is delivered or dead. Nothing is written on the action path:
 * with no subscription, a dispatcher's only work is one claim per poll.
 */
import { base64url } from "../core/encoding.js";
import { errorMessage } from "../core/errors.js";
import { innerStore } from "../core/sealing.js";
import { readCommitted } from "../core/store.js";
import type { Delivery, DeliveryAttempt, Invocation, JournalEntry, Subscription } from "../core/types.js";
import { storableText } from "../core/text.js";
import { signWebhook } from "../core/webhook.js";
import type { HostContext } from "./context.js";
import { bodyFor, newDelivery } from "./notify-body.js";
import { candidateTypes, eventIdOf, eventOfEntry, wants, type NotificationEvent } from "./notify-events.js";
import type { ResolvedNotificationOptions } from "./notify-options.js";
import { openSecret } from "./notify-subscriptions.js";
import { outageLog } from "./outage.js";

/** Sealed entries read per step of a fan-out. */
const PAGE = 200;
/** Sends per subscription per lease (then it goes back to the pool, so others get a turn). */
const SENDS_PER_TURN = 50;
/** Characters of a receiver's answer kept per try. */
const RESPONSE_KEPT = 512;
/** Tries kept per delivery. */
const LOG_KEPT = 100;

export interface Dispatcher {
  /** Starts the background loop (idempotent). */
  start(): void;
  /** Stops claiming and waits for the subscriptions in hand (their leases are given back). */
  stop(): Promise<void>;
  /** Serves the subscriptions one claim gets: fan-out, then sends. Returns how many it served. */
  runOnce(): Promise<number>;
}

/**
 * The delay before retry `attempt` (1 for the first retry): `retryBaseMs · 2^(attempt-1)`, capped
 * at `retryMaxMs`, of which a random half is jitter (so receivers recovering together are not hit
 * at once). `r` is a uniform number in [0, 1).
 */
export function retryDelayMs(n: Pick<ResolvedNotificationOptions, "retryBaseMs" | "retryMaxMs">, attempt: number, r: number): number {
  const full = Math.min(n.retryMaxMs, n.retryBaseMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(full / 2 + (full / 2) * r);
}

/** What a try's answer makes of the delivery. */
export function settleDelivery(n: Pick<ResolvedNotificationOptions, "retryBaseMs" | "retryMaxMs" | "maxAttempts" | "maxAgeMs">, d: Delivery, tryLog: DeliveryAttempt, ok: boolean, now: number, r: number): Delivery {
  const attempts = d.attempts + 1;
  const log = [...d.log, tryLog].slice(-LOG_KEPT);
  if (ok) return { ...d, status: "delivered", attempts, log, deliveredAt: now, updatedAt: now };
  if (attempts >= n.maxAttempts) return { ...d, status: "dead", attempts, log, deadReason: `${attempts} tries failed (maxAttempts)`, updatedAt: now };
  if (now - d.createdAt >= n.maxAgeMs) return { ...d, status: "dead", attempts, log, deadReason: `still failing ${Math.round((now - d.createdAt) / 1000)} s after it was written (maxAgeMs)`, updatedAt: now };
  return { ...d, attempts, log, nextAttemptAt: now + retryDelayMs(n, attempts, r), updatedAt: now };
}

function random01(ctx: HostContext): number {
  const b = ctx.o.random.bytes(4);
  return (((b[0]! << 24) >>> 0) + (b[1]! << 16) + (b[2]! << 8) + b[3]!) / 2 ** 32;
}

/** Reads at most `max` characters of the answer, then lets the rest go. */
async function answerText(res: Response, max: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    while (text.length < max) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  // A cut may split a surrogate pair, and a receiver may answer NUL: kept as U+FFFD (a store keeps
  // the log whatever it holds; docs/stores.md, "Documents that hold NUL").
  return storableText(text.slice(0, max));
}

/** Why a request failed, without the URL (it may hold a token) or anything secret. */
function failureText(e: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `no answer within ${timeoutMs} ms`;
  const cause = (e as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  return code ? `request failed: ${code}` : `request failed: ${storableText(errorMessage(e)).replace(/https?:\/\/\S+/g, "[url]")}`;
}

export function createDispatcher(ctx: HostContext, n: ResolvedNotificationOptions): Dispatcher {
  const { store, clock } = ctx.o;
  // Events carry invocations redacted, and every sealed value sits at a sensitive pointer the
  // redaction replaces: their reads go beneath the sealing layer, so an invocation this process
  // cannot open (sealed under a key it does not hold) does not stop the fan-out behind it.
  const stored = innerStore(store);
  const id = `notify-${base64url(ctx.o.random.bytes(6))}`;
  const now = (): number => clock.now();
  const trouble = outageLog(ctx.log, "notification dispatch", { dispatcher: id }, now);
  /** When each subscription's pending approvals were last looked at (approval.expiring). */
  const expiringSeen = new Map<string, number>();
  let running = false;
  /** Whether the last claim found subscriptions: only then do this process's commits wake the loop early. */
  let active = false;
  let loop: Promise<void> | null = null;
  let wake: (() => void) | null = null;
  let woken = false;

  /** Writes under the subscription's lease, which it extends; false when the lease was lost. */
  async function underLease<T>(sub: Subscription, owner: string, fn: (tx: Parameters<Parameters<typeof store.transact>[0]>[0]) => Promise<T>): Promise<{ held: boolean; value?: T }> {
    return store.transact(async (tx) => {
      if (!(await tx.holdSubscription(sub.subscriptionId, owner, now() + n.leaseMs))) return { held: false };
      return { held: true, value: await fn(tx) };
    });
  }

  /** Turns the sealed entries past each cursor into deliveries; false when the lease was lost. */
  async function fanOut(sub: Subscription, owner: string): Promise<boolean> {
    const [heads, cursors] = await readCommitted(store, async (tx) => [await tx.journalHeads(sub.tenantId), await tx.notifyCursors(sub.subscriptionId)] as const);
    for (const h of heads) {
      let cursor = cursors.get(h.spaceId) ?? 0;
      const scope = { tenantId: sub.tenantId, spaceId: h.spaceId };
      while (cursor < h.seq) {
        const at = now();
        const events = await readCommitted(stored, async (tx) => {
          const entries = await tx.readJournal(scope, { fromSeq: cursor + 1, limit: PAGE });
          const out: NotificationEvent[] = [];
          const invs = new Map<string, Invocation | null>();
          for (const e of entries) out.push(...(await eventsOf(sub, e, async (invocationId) => {
            if (!invs.has(invocationId)) {
              const inv = await tx.getInvocation(scope, invocationId);
              invs.set(invocationId, inv ? ctx.redactInvocation(inv) : null);
            }
            return invs.get(invocationId)!;
          })));
          return { out, last: entries.length > 0 ? entries[entries.length - 1]!.seq : h.seq };
        });
        const ds = events.out.map((e) => newDelivery(ctx, sub, e, bodyFor(n, sub, e), at));
        const r = await underLease(sub, owner, async (tx) => {
          if (ds.length > 0) await tx.insertDeliveries(ds);
          await tx.putNotifyCursor(sub.subscriptionId, h.spaceId, events.last);
        });
        if (!r.held) return false;
        cursor = events.last;
      }
    }
    return true;
  }

  async function eventsOf(sub: Subscription, e: JournalEntry, invocation: (id: string) => Promise<Invocation | null>): Promise<NotificationEvent[]> {
    const types = candidateTypes(e).filter((t) => sub.events.includes(t));
    if (types.length === 0) return [];
    const inv = e.refs?.invocationId ? await invocation(e.refs.invocationId) : null;
    return types.map((t) => eventOfEntry(ctx.o.crypto, t, e, inv)).filter((ev) => wants(sub, ev));
  }

  /** approval.expiring: pending approvals with less than `expiringWithinMs` left, once each. */
  async function expiring(sub: Subscription, owner: string): Promise<boolean> {
    if (!sub.events.includes("approval.expiring")) return true;
    const t = now();
    const every = Math.min(60_000, Math.max(1000, Math.floor(n.expiringWithinMs / 4)));
    if (t - (expiringSeen.get(sub.subscriptionId) ?? 0) < every) return true;
    expiringSeen.set(sub.subscriptionId, t);
    const heads = await readCommitted(store, (tx) => tx.journalHeads(sub.tenantId));
    for (const h of heads) {
      const scope = { tenantId: sub.tenantId, spaceId: h.spaceId };
      const events = await readCommitted(stored, async (tx) => {
        const out: NotificationEvent[] = [];
        for (const a of await tx.listApprovals(scope, { status: "pending", limit: 1000 })) {
          if (a.expiresAt <= t || a.expiresAt - t > n.expiringWithinMs) continue;
          const raw = a.invocationId ? await tx.getInvocation(scope, a.invocationId) : null;
          const inv = raw ? ctx.redactInvocation(raw) : null;
          const e: NotificationEvent = {
            eventId: eventIdOf(ctx.o.crypto, [sub.tenantId, h.spaceId, "approval.expiring", a.approvalId]),
            type: "approval.expiring",
            tenantId: sub.tenantId,
            spaceId: h.spaceId,
            at: t,
            data: {
              approvalId: a.approvalId,
              ...(a.invocationId ? { invocationId: a.invocationId } : {}),
              ...(inv ? { action: inv.action, actor: { type: inv.request.actor.type, id: inv.request.actor.id }, params: inv.request.params } : {}),
              expiresAt: a.expiresAt,
              votes: a.votes.filter((v) => v.verdict === "approve").length,
              quorum: a.quorum,
            },
          };
          if (wants(sub, e)) out.push(e);
        }
        return out;
      });
      if (events.length === 0) continue;
      const r = await underLease(sub, owner, (tx) => tx.insertDeliveries(events.map((e) => newDelivery(ctx, sub, e, bodyFor(n, sub, e), t))));
      if (!r.held) return false;
    }
    return true;
  }

  /** One try of `d`: signed, timed, its answer recorded. */
  async function send(sub: Subscription, secret: string, d: Delivery): Promise<{ ok: boolean; log: DeliveryAttempt }> {
    const started = now();
    const ts = Math.floor(started / 1000);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "writ-notifications",
      "webhook-id": d.eventId,
      "webhook-timestamp": String(ts),
      "webhook-signature": signWebhook(ctx.o.crypto, secret, d.eventId, ts, d.body),
    };
    const ac = new AbortController();
    let timedOut = false;
    const cancel = clock.setTimer(n.timeoutMs, () => {
      timedOut = true;
      ac.abort();
    });
    try {
      const res = await n.fetch(sub.url, { method: "POST", headers, body: d.body, signal: ac.signal, redirect: "manual" });
      const response = await answerText(res, RESPONSE_KEPT).catch(() => "");
      const ok = res.status >= 200 && res.status < 300;
      const log: DeliveryAttempt = { at: started, latencyMs: now() - started, statusCode: res.status, ...(response.length > 0 ? { response } : {}) };
      if (!ok) log.error = `the receiver answered ${res.status}`;
      return { ok, log };
    } catch (e) {
      return { ok: false, log: { at: started, latencyMs: now() - started, error: failureText(e, timedOut, n.timeoutMs) } };
    } finally {
      cancel();
    }
  }

  /** Sends the subscription's due deliveries in order; stops at a head that must wait. */
  async function deliver(sub: Subscription, owner: string): Promise<void> {
    let secret: string | null = null;
    for (let i = 0; i < SENDS_PER_TURN; i++) {
      const d = await readCommitted(store, (tx) => tx.nextDelivery(sub.subscriptionId));
      if (!d || d.nextAttemptAt > now()) return;
      secret ??= openSecret(ctx, sub);
      const { ok, log } = await send(sub, secret, d);
      const next = settleDelivery(n, d, log, ok, now(), random01(ctx));
      const r = await underLease(sub, owner, async (tx) => {
        // Only the lease holder writes a pending row; it may have been deleted with its subscription.
        const cur = await tx.getDelivery(sub.tenantId, d.deliveryId);
        if (!cur || cur.status !== "pending") return false;
        await tx.updateDelivery(next);
        return true;
      });
      if (!r.held) return;
      if (next.status === "dead") ctx.log.warn({ tenantId: sub.tenantId, subscriptionId: sub.subscriptionId, deliveryId: d.deliveryId, eventType: d.eventType, reason: next.deadReason }, "notification delivery is dead");
      if (next.status === "pending") return;
    }
  }

  async function serve(sub: Subscription, owner: string): Promise<void> {
    try {
      if (!(await fanOut(sub, owner))) return;
      if (!(await expiring(sub, owner))) return;
      await deliver(sub, owner);
    } finally {
      // Give the lease back so the next claim (any process) can take it at once.
      await store.transact((tx) => tx.holdSubscription(sub.subscriptionId, owner, 0)).catch(() => undefined);
    }
  }

  async function runOnce(): Promise<number> {
    const owner = `${id}.${base64url(ctx.o.random.bytes(6))}`;
    const subs = await store.transact((tx) => tx.claimSubscriptions({ owner, now: now(), leaseMs: n.leaseMs, limit: n.concurrency }));
    const results = await Promise.allSettled(subs.map((s) => serve(s, owner)));
    for (const r of results) if (r.status === "rejected") throw r.reason;
    return subs.length;
  }

  function sleep(ms: number): Promise<void> {
    if (woken) {
      woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const cancel = clock.setTimer(ms, () => {
        wake = null;
        resolve();
      });
      wake = () => {
        wake = null;
        cancel();
        resolve();
      };
    });
  }

  async function run(): Promise<void> {
    while (running) {
      let served = 0;
      try {
        served = await runOnce();
        active = served > 0;
        trouble.ok();
      } catch (e) {
        trouble.failed(e);
      }
      if (running && served < n.concurrency) await sleep(n.pollMs);
    }
  }

  let unsubscribe: (() => void) | null = null;
  return {
    start() {
      if (running) return;
      running = true;
      // While subscriptions exist, entries this process commits are worth a look before the next
      // poll (a hint only; with none, a commit costs nothing here).
      unsubscribe = store.onJournalAppend?.(() => {
        if (!active) return;
        if (wake) wake();
        else woken = true;
      }) ?? null;
      loop = run();
    },
    async stop() {
      running = false;
      wake?.();
      unsubscribe?.();
      unsubscribe = null;
      await loop;
      loop = null;
    },
    runOnce,
  };
}
