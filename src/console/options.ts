/** Console options: one typed object, defaults in one place, each option checked by name. */
import { WritError } from "../core/errors.js";

export interface ConsoleOptions {
  /** Serve the console at /console. @defaultValue true */
  enabled?: boolean;
  /**
   * Spaces a key valid in every space (`spaces: ["*"]`) sees without asking; a key limited to
   * some spaces sees exactly those. @defaultValue ["default"]
   */
  spaces?: string[];
  /** Absolute lifetime of a session from sign-in. @defaultValue 28800000 (8 h) */
  sessionTtlMs?: number;
  /** A session unused this long ends. @defaultValue 3600000 (1 h) */
  idleTtlMs?: number;
  /** Sessions kept at once (the oldest ends first beyond). @defaultValue 10000 */
  maxSessions?: number;
  /**
   * Trust `X-Forwarded-Proto: https` from a TLS-terminating proxy in front: the cookie is then
   * marked Secure. Without it only a request that reached Writ over https gets a Secure cookie.
   * @defaultValue false
   */
  trustProxy?: boolean;
  /** How often live pages are checked for changes (server-sent events). @defaultValue 1000 */
  livePollMs?: number;
}

export interface ResolvedConsoleOptions {
  enabled: boolean;
  spaces: string[];
  sessionTtlMs: number;
  idleTtlMs: number;
  maxSessions: number;
  trustProxy: boolean;
  livePollMs: number;
}

const SPACE_RE = /^[A-Za-z0-9_.:-]{1,200}$/;

function int(name: string, v: unknown, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new WritError("INVALID_OPTION", `console: ${name} must be an integer from ${min} to ${max}`);
  return v;
}

export function resolveConsoleOptions(o: ConsoleOptions = {}): ResolvedConsoleOptions {
  if (typeof o !== "object" || o === null) throw new WritError("INVALID_OPTION", "console: options must be an object");
  if (o.enabled !== undefined && typeof o.enabled !== "boolean") throw new WritError("INVALID_OPTION", "console: enabled must be a boolean");
  if (o.trustProxy !== undefined && typeof o.trustProxy !== "boolean") throw new WritError("INVALID_OPTION", "console: trustProxy must be a boolean");
  const spaces = o.spaces ?? ["default"];
  if (!Array.isArray(spaces) || spaces.length === 0 || spaces.length > 100 || !spaces.every((s) => typeof s === "string" && SPACE_RE.test(s))) {
    throw new WritError("INVALID_OPTION", "console: spaces must be 1-100 space ids (letters, digits, _ . : -)");
  }
  return {
    enabled: o.enabled ?? true,
    spaces: [...new Set(spaces)],
    sessionTtlMs: int("sessionTtlMs", o.sessionTtlMs, 8 * 3600_000, 1000, 30 * 86_400_000),
    idleTtlMs: int("idleTtlMs", o.idleTtlMs, 3600_000, 1000, 30 * 86_400_000),
    maxSessions: int("maxSessions", o.maxSessions, 10_000, 1, 1_000_000),
    trustProxy: o.trustProxy ?? false,
    livePollMs: int("livePollMs", o.livePollMs, 1000, 50, 60_000),
  };
}

export function isSpaceId(s: unknown): s is string {
  return typeof s === "string" && SPACE_RE.test(s);
}
