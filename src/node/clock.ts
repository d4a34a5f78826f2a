/** Node implementations of the Clock and Random ports. */
import nodeCrypto from "node:crypto";
import type { Clock, Random } from "../core/ports.js";

/** The system clock; timers are unref'd so they never keep a process alive on their own. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

const POOL_SIZE = 8192;
let pool = nodeCrypto.randomBytes(POOL_SIZE);
let offset = 0;

/**
 * Cryptographically strong randomness, served from a pool refilled by randomBytes (one system
 * call per 8 KiB instead of one per id). Every byte is handed out once.
 */
export const systemRandom: Random = {
  bytes(n) {
    if (n > POOL_SIZE / 4) return nodeCrypto.randomBytes(n);
    if (offset + n > POOL_SIZE) {
      pool = nodeCrypto.randomBytes(POOL_SIZE);
      offset = 0;
    }
    const out = pool.subarray(offset, offset + n);
    offset += n;
    return Uint8Array.from(out);
  },
};
