/**
 * The HTTP server's options as a config sets them (`server` in writ.config.ts): every option
 * `writ serve` has, its default, and its check, in one place. `createApp` and `startServer` take
 * the same names; an option passed to them wins over the config's (docs/http-api.md).
 */
import { WritError } from "../core/errors.js";

/** Per-key rate limit: a token bucket per API key, per server process (docs/security.md). */
export interface RateLimitConfig {
  /** Requests per second a key may sustain. @defaultValue 200 */
  perSecond?: number;
  /** Requests a key may send at once after being idle. @defaultValue 1000 */
  burst?: number;
}

/** `server` in writ.config.ts. */
export interface ServerConfig {
  /** 0 picks a free port. @defaultValue 8787 */
  port?: number;
  /** @defaultValue "127.0.0.1" */
  host?: string;
  /** Largest request body (413 beyond), 1 to 1 GiB. @defaultValue 1048576 (1 MiB) */
  bodyLimitBytes?: number;
  /** Deepest JSON nesting in a body (400 beyond), 1 to 256. @defaultValue 32 */
  maxJsonDepth?: number;
  /** Per-key rate limit (429 RATE_LIMITED with Retry-After beyond). @defaultValue { perSecond: 200, burst: 1000 } */
  rateLimit?: RateLimitConfig;
  /**
   * How long a verified API key is answered from memory, 0 to 60000 ms (0: every request reads the
   * store). Bounds how long a key revoked elsewhere still works here, except on PostgreSQL, where a
   * revocation reaches every server at once (docs/security.md). @defaultValue 1000
   */
  apiKeyCacheMs?: number;
  /** How long /healthz waits for the store. @defaultValue 2000 */
  healthTimeoutMs?: number;
  /** A client must send its whole request head within this (slowloris). @defaultValue 10000 */
  headersTimeoutMs?: number;
  /** A client must send its whole request, body included, within this. @defaultValue 30000 */
  requestTimeoutMs?: number;
}

export interface ResolvedServerConfig {
  port: number;
  host: string;
  bodyLimitBytes: number;
  maxJsonDepth: number;
  rateLimit: { perSecond: number; burst: number };
  apiKeyCacheMs: number;
  healthTimeoutMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/** The defaults: one place. */
export const SERVER_DEFAULTS: Readonly<ResolvedServerConfig> = Object.freeze({
  port: 8787,
  host: "127.0.0.1",
  bodyLimitBytes: 1024 * 1024,
  maxJsonDepth: 32,
  rateLimit: Object.freeze({ perSecond: 200, burst: 1000 }),
  apiKeyCacheMs: 1000,
  healthTimeoutMs: 2000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
});

/** Integer options and their ranges. */
const RANGES: Record<Exclude<keyof ResolvedServerConfig, "host" | "rateLimit">, [number, number]> = {
  port: [0, 65_535],
  bodyLimitBytes: [1, 1024 ** 3],
  maxJsonDepth: [1, 256],
  // At most a minute: the bound is how long a key revoked elsewhere may still be accepted here.
  apiKeyCacheMs: [0, 60_000],
  healthTimeoutMs: [1, 600_000],
  headersTimeoutMs: [1, 2_147_483_647],
  requestTimeoutMs: [1, 2_147_483_647],
};
const RATE_RANGES = { perSecond: [1, 1_000_000], burst: [1, 10_000_000] } as const;

function int(where: string, name: string, v: unknown, dflt: number, [min, max]: readonly [number, number]): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new WritError("INVALID_OPTION", `${where}${name} must be an integer from ${min} to ${max}`);
  return v;
}

function knownKeys(where: string, o: object, known: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new WritError("INVALID_OPTION", `${where}${k} is not an option (known: ${known.join(", ")})`);
  }
}

/**
 * Checks `o` and fills in the defaults. `where` prefixes each option's name in an error, e.g.
 * `"writ.config.ts: server."` gives "writ.config.ts: server.rateLimit.burst must be ...".
 * @example
 * resolveServerConfig({ rateLimit: { perSecond: 50 } }, "server.").rateLimit; // { perSecond: 50, burst: 1000 }
 */
export function resolveServerConfig(o: ServerConfig | undefined, where: string): ResolvedServerConfig {
  if (o === undefined) return { ...SERVER_DEFAULTS, rateLimit: { ...SERVER_DEFAULTS.rateLimit } };
  if (typeof o !== "object" || o === null || Array.isArray(o)) throw new WritError("INVALID_OPTION", `${where.replace(/\.$/, "")} must be an object`);
  knownKeys(where, o, Object.keys(SERVER_DEFAULTS));
  const rl = o.rateLimit;
  if (rl !== undefined) {
    if (typeof rl !== "object" || rl === null || Array.isArray(rl)) throw new WritError("INVALID_OPTION", `${where}rateLimit must be an object { perSecond, burst }`);
    knownKeys(`${where}rateLimit.`, rl, Object.keys(RATE_RANGES));
  }
  if (o.host !== undefined && (typeof o.host !== "string" || o.host.length === 0)) throw new WritError("INVALID_OPTION", `${where}host must be a host name or address`);
  const ints = {} as Record<keyof typeof RANGES, number>;
  for (const [name, range] of Object.entries(RANGES) as Array<[keyof typeof RANGES, [number, number]]>) ints[name] = int(where, name, o[name], SERVER_DEFAULTS[name], range);
  return {
    ...ints,
    host: o.host ?? SERVER_DEFAULTS.host,
    rateLimit: {
      perSecond: int(where, "rateLimit.perSecond", rl?.perSecond, SERVER_DEFAULTS.rateLimit.perSecond, RATE_RANGES.perSecond),
      burst: int(where, "rateLimit.burst", rl?.burst, SERVER_DEFAULTS.rateLimit.burst, RATE_RANGES.burst),
    },
  };
}
