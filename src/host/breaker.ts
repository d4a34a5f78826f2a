/** Circuit breakers per (connector, operation): open after N consecutive transient failures. */
import type { BreakerOptions } from "./options.js";

interface State {
  failures: number;
  openUntil: number;
  halfOpen: boolean;
}

export interface Breakers {
  /** Epoch ms until which calls are refused, or 0 when a call may go through (closed or half-open). */
  blockedUntil(connector: string, operation: string, now: number): number;
  success(connector: string, operation: string): void;
  failure(connector: string, operation: string, now: number): void;
  snapshot(): Array<{ connector: string; operation: string; state: "closed" | "open" | "half_open"; failures: number; openUntil: number }>;
}

export function createBreakers(o: BreakerOptions): Breakers {
  const states = new Map<string, State>();
  const key = (c: string, op: string): string => `${c}\u0000${op}`;
  const get = (c: string, op: string): State => {
    let s = states.get(key(c, op));
    if (!s) states.set(key(c, op), (s = { failures: 0, openUntil: 0, halfOpen: false }));
    return s;
  };
  return {
    blockedUntil(c, op, now) {
      const s = states.get(key(c, op));
      if (!s || s.openUntil === 0) return 0;
      if (now < s.openUntil) return s.openUntil;
      // One probe at a time; a probe that never reported (its worker died) is replaced after a cooldown.
      if (s.halfOpen && now < s.openUntil + o.cooldownMs) return s.openUntil + o.cooldownMs;
      s.halfOpen = true; // cooldown over: let one call through
      return 0;
    },
    success(c, op) {
      const s = get(c, op);
      s.failures = 0;
      s.openUntil = 0;
      s.halfOpen = false;
    },
    failure(c, op, now) {
      const s = get(c, op);
      s.failures += 1;
      if (s.halfOpen || s.failures >= o.failureThreshold) {
        s.openUntil = now + o.cooldownMs;
        s.halfOpen = false;
      }
    },
    snapshot() {
      return [...states].map(([k, s]) => {
        const [connector, operation] = k.split("\u0000") as [string, string];
        const state = s.openUntil === 0 ? "closed" : s.halfOpen ? "half_open" : "open";
        return { connector, operation, state, failures: s.failures, openUntil: s.openUntil };
      });
    },
  };
}
