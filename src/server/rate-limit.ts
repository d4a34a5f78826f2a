/**
 * Per-key rate limits (docs/security.md): a token bucket per API key id, refilled continuously.
 * A request over the limit is 429 RATE_LIMITED with `Retry-After` (whole seconds until a token is
 * back). In memory, per server process: a fleet of servers behind a balancer limits per process.
 */
import { ApiError } from "./errors.js";

export interface RateLimit {
  /** Requests per second a key may sustain. */
  perSecond: number;
  /** Requests a key may send at once after being idle. */
  burst: number;
}

/** A limiter over `now()` (ms); `take(id)` throws the 429 when the bucket is empty. */
export function createRateLimiter(limit: RateLimit, now: () => number): { take(id: string): void } {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(id) {
      const t = now();
      const b = buckets.get(id) ?? { tokens: limit.burst, at: t };
      b.tokens = Math.min(limit.burst, b.tokens + ((t - b.at) / 1000) * limit.perSecond);
      b.at = t;
      if (buckets.size > 100_000) buckets.clear(); // bounded memory; a reset only forgives
      if (b.tokens < 1) {
        buckets.set(id, b);
        const retry = Math.max(1, Math.ceil((1 - b.tokens) / limit.perSecond));
        throw new ApiError("RATE_LIMITED", `this API key sent more than ${limit.perSecond} requests per second; retry after ${retry} s`, { retryAfterSeconds: retry }, { "retry-after": String(retry) });
      }
      b.tokens -= 1;
      buckets.set(id, b);
    },
  };
}
