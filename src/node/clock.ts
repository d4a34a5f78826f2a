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

/** Cryptographically strong randomness. */
export const systemRandom: Random = {
  bytes: (n) => nodeCrypto.randomBytes(n),
};
