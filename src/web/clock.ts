/**
 * Clock and Random ports on web-standard globals (workerd, browsers, Deno): docs/portable-core.md,
 * "Ports". Nothing here runs at import: workerd forbids entropy and timers outside a request.
 */
import type { Clock, Random } from "../core/ports.js";

/** What `crypto.getRandomValues` fills in one call (the WebCrypto limit). */
const MAX_RANDOM = 65_536;

interface WebGlobals {
  crypto: { getRandomValues<T extends Uint8Array>(a: T): T };
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(t: unknown): void;
}
const web = globalThis as unknown as WebGlobals;

/** The longest delay a web timer holds; longer ones fire at once in browsers, so they are chained. */
const MAX_DELAY = 2_147_483_647;

/** Wall-clock time from `Date.now`, timers from `setTimeout` (workerd: time advances with I/O only). */
export const webClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    let t: unknown;
    const arm = (left: number): void => {
      t = web.setTimeout(left > MAX_DELAY ? () => arm(left - MAX_DELAY) : fn, Math.min(left, MAX_DELAY));
    };
    arm(Number.isFinite(ms) && ms > 0 ? ms : 0);
    return () => web.clearTimeout(t);
  },
};

/** Cryptographically strong bytes from `crypto.getRandomValues`. */
export const webRandom: Random = {
  bytes(n) {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i += MAX_RANDOM) web.crypto.getRandomValues(out.subarray(i, Math.min(n, i + MAX_RANDOM)));
    return out;
  },
};
