/** Notification options (docs/notifications.md), validated at `createHost` with the option named. */
import { WritError } from "../core/errors.js";
import { MAX_TIMER_MS } from "../core/validate.js";

/** How the host delivers notifications. Every field is optional. */
export interface NotificationOptions {
  /**
   * The console's public base URL (`https://writ.example.com`): Slack messages link to the page that
   * acts on an event, and standard bodies carry `data.consoleUrl`. @defaultValue none: no links
   */
  consoleUrl?: string;
  /** Tries of one delivery before it is dead. An integer from 1 to 100. @defaultValue 10 */
  maxAttempts?: number;
  /** A delivery still failing this long (ms) after it was written is dead at its next failure. @defaultValue 86400000 (24 h) */
  maxAgeMs?: number;
  /** The first retry's delay (ms); each further retry doubles it, with jitter (a random half of it). @defaultValue 5000 */
  retryBaseMs?: number;
  /** The longest retry delay (ms). @defaultValue 3600000 (1 h) */
  retryMaxMs?: number;
  /** One try's time limit (ms), the receiver's answer included. @defaultValue 10000 */
  timeoutMs?: number;
  /** How often a started dispatcher looks for work when idle (ms). @defaultValue 1000 */
  pollMs?: number;
  /** A dispatcher's lease on one subscription (ms); another process takes it over after it lapses. @defaultValue 60000 */
  leaseMs?: number;
  /** `approval.expiring` is sent once when a pending approval has this long (ms) left. @defaultValue 900000 (15 min) */
  expiringWithinMs?: number;
  /** Subscriptions one dispatcher serves at once. @defaultValue 4 */
  concurrency?: number;
  /** false: this host's workers run no dispatcher (subscriptions can still be managed). @defaultValue true */
  dispatch?: boolean;
  /** Sends the requests. @defaultValue globalThis.fetch */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
}

export interface ResolvedNotificationOptions {
  consoleUrl: string | undefined;
  maxAttempts: number;
  maxAgeMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  pollMs: number;
  leaseMs: number;
  expiringWithinMs: number;
  concurrency: number;
  dispatch: boolean;
  fetch: (url: string, init: RequestInit) => Promise<Response>;
}

function int(name: string, v: unknown, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) throw new WritError("INVALID_OPTION", `createHost: notifications.${name} must be an integer from ${min} to ${max}`);
  return v;
}

/** Checks an http(s) base URL without credentials; answers it without a trailing slash. */
function baseUrl(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  const u = typeof v === "string" && URL.canParse(v) ? new URL(v) : null;
  if (!u || (u.protocol !== "http:" && u.protocol !== "https:") || u.username !== "" || u.password !== "" || u.search !== "" || u.hash !== "") {
    throw new WritError("INVALID_OPTION", "createHost: notifications.consoleUrl must be an http(s) URL without credentials, query or fragment (the console's public base, e.g. https://writ.example.com)");
  }
  return u.href.replace(/\/+$/, "");
}

export function resolveNotificationOptions(o: NotificationOptions | undefined): ResolvedNotificationOptions {
  if (o !== undefined && (typeof o !== "object" || o === null)) throw new WritError("INVALID_OPTION", "createHost: notifications must be an object");
  const n = o ?? {};
  if (n.dispatch !== undefined && typeof n.dispatch !== "boolean") throw new WritError("INVALID_OPTION", "createHost: notifications.dispatch must be a boolean");
  if (n.fetch !== undefined && typeof n.fetch !== "function") throw new WritError("INVALID_OPTION", "createHost: notifications.fetch must be a function");
  const retryBaseMs = int("retryBaseMs", n.retryBaseMs, 5000, 1, MAX_TIMER_MS);
  return {
    consoleUrl: baseUrl(n.consoleUrl),
    maxAttempts: int("maxAttempts", n.maxAttempts, 10, 1, 100),
    maxAgeMs: int("maxAgeMs", n.maxAgeMs, 86_400_000, 1, Number.MAX_SAFE_INTEGER),
    retryBaseMs,
    retryMaxMs: int("retryMaxMs", n.retryMaxMs, Math.max(3_600_000, retryBaseMs), retryBaseMs, MAX_TIMER_MS),
    timeoutMs: int("timeoutMs", n.timeoutMs, 10_000, 1, MAX_TIMER_MS),
    pollMs: int("pollMs", n.pollMs, 1000, 1, MAX_TIMER_MS),
    leaseMs: int("leaseMs", n.leaseMs, 60_000, 1, MAX_TIMER_MS),
    expiringWithinMs: int("expiringWithinMs", n.expiringWithinMs, 900_000, 1, Number.MAX_SAFE_INTEGER),
    concurrency: int("concurrency", n.concurrency, 4, 1, 64),
    dispatch: n.dispatch ?? true,
    fetch: n.fetch ?? ((url, init) => globalThis.fetch(url, init)),
  };
}
