/** Node implementations of the Clock and Random ports. */
import nodeCrypto from "node:crypto";
import type { Clock, Random } from "../core/ports.js";

/** Node clamps a delay above this to 1 ms; longer timers are chained. */
const MAX_DELAY = 2_147_483_647;

/**
 * The system clock; timers are unref'd so they never keep a process alive on their own. A delay
 * longer than a Node timer holds (2^31-1 ms) is reached in steps, never clamped to 1 ms.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    let t: ReturnType<typeof setTimeout>;
    const arm = (left: number): void => {
      t = setTimeout(left > MAX_DELAY ? () => arm(left - MAX_DELAY) : fn, Math.min(left, MAX_DELAY));
      t.unref();
    };
    arm(Number.isFinite(ms) && ms > 0 ? ms : 0);
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
