/**
 * Circuit breakers per (scope, connector, operation), held in the store (docs/host.md, "Circuit
 * breakers"): every worker and host process on the store sees the same state, and it survives
 * restarts. The transitions are core's (`core/breaker.ts`); this module runs them for one attempt.
 */
import { checkBreaker, recordBreaker, releaseBreaker, type BreakerChange, type BreakerGate, type BreakerKey, type BreakerOutcome, type BreakerPolicy } from "../core/breaker.js";
import { errorMessage } from "../core/errors.js";
import { readCommitted, type Store } from "../core/store.js";
import type { Clock } from "../core/ports.js";
import type { BreakerRecord, BreakerState, Scope } from "../core/types.js";
import type { Logger } from "./options.js";

/** A breaker as operators see it. */
export interface BreakerView {
  connector: string;
  operation: string;
  state: BreakerState;
  failures: number;
  /** Open: refused until then (0 when closed). */
  openUntil: number;
  /** Half-open with a probe in flight: its slot expires then. */
  probeUntil?: number;
  updatedAt: number;
}

/** The steps' (connector, operation), as the breakers key them. */
export interface BreakerTarget {
  connector: string;
  operation: string;
}

/** The breakers of one attempt: what its checks read, the probe slots it claimed. */
export interface AttemptBreakers {
  /**
   * Before a call to `t`: one read (none when `known` is the row a committed read just returned:
   * `null` for no row); a claim of the probe slot when the cooldown is over.
   */
  check(t: BreakerTarget, known?: BreakerRecord | null): Promise<BreakerGate>;
  /** After a call to `t` answered. Never throws: a lost breaker update only delays a state change. */
  outcome(t: BreakerTarget, outcome: BreakerOutcome): Promise<void>;
  /** Gives back every probe slot this attempt claimed and did not use (denied, parked, refused, vetoed). */
  releaseUnused(): Promise<void>;
}

/** A state change this process wrote (another process's changes are not reported here). */
export interface BreakerTransition extends BreakerChange {
  connector: string;
  operation: string;
}

export interface Breakers {
  readonly policy: BreakerPolicy;
  /** Runs `cb` after each state change this process writes (metrics); returns an unsubscribe function. */
  onChange(cb: (t: BreakerTransition) => void): () => void;
  /** `holder` names the attempt across the fleet (the invocation and its lease token). */
  forAttempt(scope: Scope, holder: string): AttemptBreakers;
  /** The scope's breakers, for operators (host API, console, metrics). */
  list(scope: Scope): Promise<BreakerView[]>;
}

export function viewOf(b: BreakerRecord): BreakerView {
  const v: BreakerView = { connector: b.connector, operation: b.operation, state: b.state, failures: b.failures, openUntil: b.openUntil, updatedAt: b.updatedAt };
  if (b.state === "half_open" && b.probeUntil !== undefined && b.probeHolder !== undefined) v.probeUntil = b.probeUntil;
  return v;
}

export function createBreakers(store: Store, clock: Clock, policy: BreakerPolicy, log: Logger): Breakers {
  const listeners = new Set<(t: BreakerTransition) => void>();
  const changed = (t: BreakerTarget, c: BreakerChange | null | undefined): void => {
    if (!c) return;
    for (const cb of listeners) {
      try {
        cb({ connector: t.connector, operation: t.operation, ...c });
      } catch {
        /* a metrics hook never changes an outcome */
      }
    }
  };
  return {
    policy,
    onChange(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    forAttempt(scope, holder) {
      const keyOf = (t: BreakerTarget): BreakerKey => ({ tenantId: scope.tenantId, spaceId: scope.spaceId, connector: t.connector, operation: t.operation });
      const id = (t: BreakerTarget): string => `${t.connector}\u0000${t.operation}`;
      // What each check read (a success on a clean breaker then writes nothing), and the probes claimed.
      const seen = new Map<string, BreakerRecord | null>();
      const claimed = new Map<string, BreakerTarget>();
      return {
        async check(t, known) {
          const r = await checkBreaker(store, keyOf(t), holder, clock.now(), policy, known);
          changed(t, r.change);
          seen.set(id(t), r.seen);
          if (r.gate.kind === "probe") claimed.set(id(t), t);
          return r.gate;
        },
        async outcome(t, outcome) {
          claimed.delete(id(t));
          try {
            changed(t, await recordBreaker(store, keyOf(t), outcome, holder, seen.get(id(t)), clock.now(), policy));
            seen.delete(id(t));
          } catch (e) {
            log.warn({ connector: t.connector, operation: t.operation, err: errorMessage(e) }, "circuit breaker update lost; the breaker catches up on the next outcome");
          }
        },
        async releaseUnused() {
          for (const t of [...claimed.values()]) {
            claimed.delete(id(t));
            try {
              await releaseBreaker(store, keyOf(t), holder, clock.now());
            } catch (e) {
              log.warn({ connector: t.connector, operation: t.operation, err: errorMessage(e) }, "probe slot not released; it expires after probeTimeoutMs");
            }
          }
        },
      };
    },
    async list(scope) {
      return (await readCommitted(store, (tx) => tx.listBreakers(scope, { limit: 1000 }))).map(viewOf);
    },
  };
}
