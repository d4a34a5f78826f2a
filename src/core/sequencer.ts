/**
 * The journal sequencer (docs/journal.md). Transitions write their journal entries unsealed inside
 * their own transaction; the sequencer chains them afterwards, in the order it sees them commit,
 * in short transactions of its own that hold the scope's journal lock. No action transaction
 * waits for that lock.
 *
 * One sequencer per store object in a process (`sequencerFor`): it seals a scope one run at a
 * time (a commit hint during a run queues exactly one more run), and across processes the
 * store's journal lock (a PostgreSQL advisory lock) keeps runs of one scope apart. It is woken by
 * the store's in-process commit hint (`Store.onJournalAppend`) and, while started, polls
 * `unsealedScopes` every quarter of the bound, so entries left by another process (or one that
 * died between its commit and the seal) are sealed within the bound too.
 */
import { WritError } from "./errors.js";
import { coalescer } from "./batch.js";
import { sealScopeNow, sealScopesNow } from "./journal.js";
import type { Clock, CryptoPort } from "./ports.js";
import { readCommitted, type Store } from "./store.js";
import type { Scope } from "./types.js";

/** The default bound between a transition's commit and the seal of its entries. */
export const DEFAULT_SEAL_WITHIN_MS = 250;
/** The largest bound accepted. */
export const MAX_SEAL_WITHIN_MS = 60_000;
/** Scopes looked at per poll. */
const POLL_SCOPES = 100;
/** Most scopes sealed in one round (two statements on PostgreSQL). */
const ROUND_SCOPES = 64;

/** Validates a bound (`sealWithinMs`): an integer from 1 to 60000 ms, naming `where` on error. */
export function checkSealWithinMs(where: string, v: unknown): number {
  if (v === undefined) return DEFAULT_SEAL_WITHIN_MS;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_SEAL_WITHIN_MS) {
    throw new WritError("INVALID_OPTION", `${where}: sealWithinMs must be an integer from 1 to ${MAX_SEAL_WITHIN_MS} (milliseconds)`);
  }
  return v;
}

export interface SequencerPolling {
  clock: Clock;
  /** @defaultValue 250 */
  sealWithinMs?: number;
  /** Called when a poll or a seal fails (it is retried at the next poll). */
  onError?: (err: unknown, scope: Scope | null) => void;
  /** Called after a poll pass that succeeded (so a caller can tell an outage has ended). */
  onOk?: () => void;
}

export interface Sequencer {
  /**
   * Seals every committed, visible unsealed entry of `scope`: resolves when a run that began after
   * this call has ended (with the number of entries that run sealed).
   */
  seal(scope: Scope): Promise<number>;
  /** One pass over every scope with unsealed entries; resolves with how many entries it sealed. */
  sealAll(): Promise<number>;
  /** Starts a bounded poll (one per call; each start has its own stop). */
  start(polling: SequencerPolling): () => Promise<void>;
  /** Resolves once no run is in flight. */
  idle(): Promise<void>;
}

interface ScopeRuns {
  running: Promise<number> | null;
  queued: Promise<number> | null;
}

const registry = new WeakMap<Store, Sequencer>();
const noop = (): void => undefined;

/**
 * The process's sequencer for `store` (created, and subscribed to the store's commit hint, on
 * first use). `onError` of the first caller receives failures of hint-driven runs, `onOk` their
 * successes.
 */
export function sequencerFor(store: Store, crypto: CryptoPort, onError?: (err: unknown, scope: Scope | null) => void, onOk?: () => void): Sequencer {
  let s = registry.get(store);
  if (s === undefined) {
    s = createSequencer(store, crypto, onError, onOk);
    registry.set(store, s);
  }
  return s;
}

/**
 * Gives `store`'s sequencer a clock for its commit-hint delay while it is not started (a bare
 * boundary's store, which nothing polls): without one, every hint seals at once, so on PostgreSQL
 * a seal round trip (and its read of the pending entries) followed nearly every commit. The clock
 * of a started poll takes precedence; the first clock given stays. Read at each hint, so it may be
 * given before or after the sequencer exists.
 */
export function sequencerHintClock(store: Store, clock: Clock): void {
  if (!hintClocks.has(store)) hintClocks.set(store, clock);
}

const hintClocks = new WeakMap<Store, Clock>();

function scopeKey(scope: Scope): string {
  return JSON.stringify([scope.tenantId, scope.spaceId]);
}

function createSequencer(store: Store, crypto: CryptoPort, onError?: (err: unknown, scope: Scope | null) => void, onOk?: () => void): Sequencer {
  const runs = new Map<string, ScopeRuns>();
  const ok = (): void => {
    try {
      onOk?.();
    } catch {
      // see report
    }
  };
  const report = (err: unknown, scope: Scope | null): void => {
    try {
      onError?.(err, scope);
    } catch {
      // a reporting hook must not break the sequencer
    }
  };

  // A store that seals several scopes per statement (PostgreSQL) gets rounds: the runs of
  // different scopes that start while a round is in flight go together in the next one.
  const t = store.transitions;
  const rounds =
    t?.readUnsealedMany !== undefined && t.sealIfHeadMany !== undefined
      ? // Two rounds at once: a round draining one scope's backlog does not hold back the others.
        coalescer<Scope, number>((scopes) => sealScopesNow(store, crypto, scopes), { maxBatch: ROUND_SCOPES, maxInFlight: 2 })
      : null;

  function begin(key: string, st: ScopeRuns, scope: Scope): Promise<number> {
    const own = { tenantId: scope.tenantId, spaceId: scope.spaceId };
    const p = (rounds !== null ? rounds(own) : sealScopeNow(store, crypto, own)).finally(() => {
      st.running = null;
      if (st.queued === null) runs.delete(key);
    });
    st.running = p;
    return p;
  }

  function seal(scope: Scope): Promise<number> {
    const key = scopeKey(scope);
    let st = runs.get(key);
    if (st === undefined) {
      st = { running: null, queued: null };
      runs.set(key, st);
    }
    if (st.queued !== null) return st.queued;
    if (st.running !== null) {
      const s = st;
      const q = st.running.then(noop, noop).then(() => {
        s.queued = null;
        return begin(key, s, scope);
      });
      s.queued = q;
      return q;
    }
    return begin(key, st, scope);
  }

  async function sealAll(): Promise<number> {
    // A read: on PostgreSQL one statement in autocommit, not BEGIN, the read and COMMIT.
    const scopes = await readCommitted(store, (tx) => tx.unsealedScopes(POLL_SCOPES));
    // Side by side: on a store with rounds, the scopes go together.
    const counts = await Promise.all(
      scopes.map((sc) =>
        seal(sc).catch((e: unknown) => {
          report(e, { tenantId: sc.tenantId, spaceId: sc.spaceId });
          return 0;
        }),
      ),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  // A store whose commits do not wait for their hint (PostgreSQL) may ask for hints to be
  // coalesced for a few ms, so that one seal chains several commits and one round several scopes.
  // Only while started: the delay needs the clock the polling was given.
  let clock: Clock | null = null;
  const hintDelay = store.journalHintDelayMs ?? 0;
  // Hints of every scope share one delay: the scopes hinted while it runs are sealed together.
  let hinted: { cancel: () => void; scopes: Map<string, { scope: Scope; resolve: () => void }> } | null = null;
  const sealHinted = (scope: Scope): Promise<void> =>
    seal(scope).then(ok, (e: unknown) => {
      report(e, scope);
    });
  const fireWindow = (): void => {
    const w = hinted;
    if (w === null) return;
    hinted = null;
    w.cancel();
    for (const { scope, resolve } of w.scopes.values()) void sealHinted(scope).then(resolve);
  };
  store.onJournalAppend?.((scope) => {
    // While no poll runs, the clock given by sequencerHintClock (a bare boundary's), if any.
    const timers = clock ?? hintClocks.get(store) ?? null;
    if (hintDelay <= 0 || timers === null) return sealHinted(scope);
    const key = scopeKey(scope);
    if (hinted?.scopes.has(key)) return;
    if (hinted === null) {
      const cancel = timers.setTimer(hintDelay, () => fireWindow());
      hinted = { cancel, scopes: new Map() };
    }
    const w = hinted;
    return new Promise<void>((resolve) => w.scopes.set(key, { scope, resolve }));
  });
  /** Seals what waits for its delay right away (stop, idle). */
  const flushDelayed = (): void => fireWindow();

  return {
    seal,
    sealAll,
    start(polling) {
      const bound = checkSealWithinMs("sequencer", polling.sealWithinMs);
      clock = polling.clock;
      const pollMs = Math.max(1, Math.floor(bound / 4));
      let stopped = false;
      let cancel: (() => void) | null = null;
      let current: Promise<void> | null = null;
      const fail = (e: unknown): void => {
        try {
          (polling.onError ?? report)(e, null);
        } catch {
          // see report
        }
      };
      const schedule = (): void => {
        cancel = polling.clock.setTimer(pollMs, () => {
          cancel = null;
          current = sealAll()
            .then(() => {
              try {
                polling.onOk?.();
              } catch {
                // see report
              }
            }, fail)
            .finally(() => {
              current = null;
              if (!stopped) schedule();
            });
        });
      };
      schedule();
      return async () => {
        stopped = true;
        clock = null;
        flushDelayed();
        cancel?.();
        await current;
      };
    },
    async idle() {
      for (;;) {
        flushDelayed();
        const pending: Promise<unknown>[] = [...[...runs.values()].flatMap((r) => [r.running, r.queued]).filter((p): p is Promise<number> => p !== null)];
        if (pending.length === 0) return;
        await Promise.allSettled(pending);
      }
    },
  };
}
