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
 *
 * On a store with sealer claims (`Store.journalSealers`, PostgreSQL) a started sequencer claims the
 * scopes it seals, and the hints and polls of every other process leave a claimed scope to its
 * holder instead of racing it for the chain's head (docs/journal.md, "One sealer per scope"). A
 * started sequencer seals (and tries to claim) a scope whoever holds it when two of its polls in a
 * row found the same oldest unsealed entry, older than a quarter of the bound; a sequencer that is
 * not started seals a scope it left to a holder itself half a bound later. Explicit seals, `idle()`
 * and a stop seal whatever they are asked to.
 */
import { WritError } from "./errors.js";
import { coalescer } from "./batch.js";
import { sealScopeNow, sealScopesNow } from "./journal.js";
import { innerStore } from "./sealing.js";
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
/** Most sealer claims one store object holds (on PostgreSQL, session locks on one connection). */
const MAX_CLAIMS = 128;
/** A claim on a scope that had nothing to seal for this long is given up. */
const IDLE_CLAIM_MS = 10_000;
/**
 * How long a running sequencer trusts the answer that another store holds a scope's claim before it
 * asks again. Long, since the bound never depends on it: a scope its holder leaves unsealed is
 * sealed anyway (see `ours`).
 */
const CLAIM_RECHECK_MS = 1_000;

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

/** A hint a window left to a scope's holder: when it came, when this process seals anyway, its waiter. */
interface BackstopHint {
  at: number;
  due: number;
  resolve: () => void;
}

/** A scope's hints left to its holder (see `backstops` in createSequencer). */
interface Backstop {
  scope: Scope;
  hints: BackstopHint[];
}

/** When the earliest of a backstop's hints is due. */
const dueOf = (x: Backstop): number => Math.min(...x.hints.map((h) => h.due));

const registry = new WeakMap<Store, Sequencer>();
const noop = (): void => undefined;

/**
 * The process's sequencer for `store` (created, and subscribed to the store's commit hint, on
 * first use). `onError` of the first caller receives failures of hint-driven runs, `onOk` their
 * successes.
 */
export function sequencerFor(store: Store, crypto: CryptoPort, onError?: (err: unknown, scope: Scope | null) => void, onOk?: () => void): Sequencer {
  // A sealing store and the store beneath it share one sequencer: sealing never touches the
  // journal, and two would race each other's seals on every hint.
  store = innerStore(store);
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
  store = innerStore(store);
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

  const sealers = store.journalSealers;
  /** The running polls: while there is one, this sequencer polls, and so may hold claims. */
  const starts: Array<{ bound: number; clock: Clock }> = [];
  /** The smallest bound among the running polls (the default while none runs). */
  const bound = (): number => (starts.length > 0 ? Math.min(...starts.map((x) => x.bound)) : DEFAULT_SEAL_WITHIN_MS);
  /** Scopes whose claim another store held when this one last asked, and when it asked. */
  const others = new Map<string, number>();
  /** Not started: scopes nobody held when this one last asked, and when it asked. */
  const free = new Map<string, number>();
  /** The scopes this store claimed, and when each last had something to seal. */
  const claimed = new Map<string, { scope: Scope; at: number }>();
  /**
   * Scopes a hint window left to their holder, each hint to be sealed here anyway at its due time
   * (a backstop: this process's commits never wait on a holder that stalls, or whose poll does not
   * reach the scope). The hints resolve when that seal settles, so that a store's close waits for it.
   */
  const backstops = new Map<string, Backstop>();
  let backstopTimer: { timers: Clock; cancel: () => void; at: number } | null = null;
  /** Hint windows deciding which scopes to seal (`idle()` waits for them). */
  const deciding = new Set<Promise<void>>();

  /**
   * Of `scopes` (hinted, or found unsealed by a poll, with their oldest entries' `at` and what the
   * same poll loop found the time before), the ones this sequencer seals now: all of them on a store
   * without claims, or when the claims cannot be asked about (sealing never depends on them).
   * Otherwise, while started: those it holds or could claim, those over the claim cap, and those
   * another holder left unsealed (`late`). While not started: those nobody holds, or this store does.
   */
  async function ours(scopes: Scope[], now: number, poll?: { oldest: ReadonlyMap<string, number>; before: ReadonlyMap<string, number> }): Promise<Scope[]> {
    if (sealers === undefined || scopes.length === 0) return scopes;
    const started = starts.length > 0;
    const b = bound();
    // Another holder's answer is trusted for a while (a second, or the bound if longer, while
    // started: the bound never depends on it; half the bound while not). When some answers have
    // run out, the ones past half their time are asked again with them, so that the answers of
    // scopes seen together run out together (one statement asks them all).
    const ttl = started ? Math.max(CLAIM_RECHECK_MS, b) : b / 2;
    // Not started, an answer that nobody holds a scope is trusted as long (no question per window).
    const age = (k: string): number => now - Math.max(others.get(k) ?? -Infinity, started ? -Infinity : (free.get(k) ?? -Infinity));
    // Left by its holder: this poll loop found the same oldest unsealed entry the time before, and
    // it is past a quarter of the bound. A holder seals a scope at its own commits' hint windows
    // and at each of its polls, a quarter of the bound apart, so with a live holder a scope's oldest
    // entry seldom outlives two polls here; a dead or stalled one leaves it, and it is sealed here
    // about half the bound after its commit.
    const late = (k: string): boolean => {
      const at = poll?.oldest.get(k);
      return at !== undefined && poll!.before.get(k) === at && now - at > b / 4;
    };
    try {
      const keep: Scope[] = [];
      const ask: Scope[] = [];
      const wait: Scope[] = [];
      for (const sc of scopes) {
        const k = scopeKey(sc);
        if (sealers.holds(sc)) {
          if (started) claimed.set(k, { scope: sc, at: now });
          keep.push(sc);
        } else if (age(k) >= ttl || (started && late(k))) ask.push(sc);
        else wait.push(sc);
      }
      if (ask.length > 0) for (const sc of wait.splice(0)) (age(scopeKey(sc)) >= ttl / 2 ? ask : wait).push(sc);
      if (started) {
        // Over the cap, a scope is sealed as on a store without claims.
        keep.push(...ask.splice(Math.max(0, MAX_CLAIMS - sealers.count())));
        const got = ask.length > 0 ? await sealers.claim(ask) : [];
        const stillStarted = starts.length > 0;
        ask.forEach((sc, i) => {
          const k = scopeKey(sc);
          if (got[i] === true) {
            others.delete(k);
            if (stillStarted) claimed.set(k, { scope: sc, at: now });
            keep.push(sc);
          } else {
            others.set(k, now);
            if (late(k)) keep.push(sc);
          }
        });
        // Stopped while the claim was out: nothing would give these up.
        if (!stillStarted) await sealers.release(ask.filter((_, i) => got[i] === true)).catch(noop);
        return keep;
      }
      // Not started (a bare boundary's store, or a host without a worker): it never claims. A
      // scope another store holds is left to it, whose poll seals it (and the window's backstop
      // half a bound later, see `backstop`).
      const timers = clock ?? hintClocks.get(store) ?? null;
      if (timers === null) return scopes;
      const held = ask.length > 0 ? await sealers.held(ask) : [];
      ask.forEach((sc, i) => {
        const k = scopeKey(sc);
        if (held[i] === true) {
          others.set(k, now);
          free.delete(k);
        } else {
          others.delete(k);
          free.set(k, now);
        }
      });
      for (const sc of [...ask, ...wait]) if (!others.has(scopeKey(sc))) keep.push(sc);
      for (const m of [others, free]) if (m.size > 4 * MAX_CLAIMS) for (const [k, at] of m) if (now - at >= ttl) m.delete(k);
      return keep;
    } catch {
      return scopes;
    }
  }

  /** Seals `scope` half a bound from now whoever holds it, then calls `resolve` (see `backstops`). */
  function backstop(scope: Scope, timers: Clock, resolve: () => void): void {
    const on = backstopTimer?.timers ?? timers;
    const k = scopeKey(scope);
    const now = on.now();
    const hint = { at: now, due: now + Math.ceil(bound() / 2), resolve };
    const b = backstops.get(k);
    if (b !== undefined) b.hints.push(hint);
    else backstops.set(k, { scope, hints: [hint] });
    if (backstopTimer === null) armBackstops(on);
  }

  function armBackstops(timers: Clock): void {
    const next = Math.min(...[...backstops.values()].map(dueOf));
    const cancel = timers.setTimer(Math.max(1, next - timers.now()), () => {
      backstopTimer = null;
      // idle() waits for it like a window deciding: its read comes before any seal it starts.
      const f = fireBackstops(timers.now() + bound() / 4, timers).then(noop, noop);
      deciding.add(f);
      void f.finally(() => deciding.delete(f));
      if (backstops.size > 0) armBackstops(timers);
    });
    backstopTimer = { timers, cancel, at: next };
  }

  /** Takes the backstops `which` picks out of the map (the timer goes with the last one). */
  function takeBackstops(which: (k: string, x: Backstop) => boolean): Backstop[] {
    const taken = [...backstops].filter(([k, x]) => which(k, x));
    for (const [k] of taken) backstops.delete(k);
    if (backstops.size === 0 && backstopTimer !== null) {
      backstopTimer.cancel();
      backstopTimer = null;
    }
    return taken.map(([, x]) => x);
  }

  /**
   * Resolves the hints of `x` whose commits are sealed, by a read of the scopes with unsealed
   * entries that began at `readAt`: the hint came before the read began (so its commits, which came
   * before the hint, are in what the read saw), and none of the scope's unsealed entries is as old
   * as the hint (`oldest`: the oldest unsealed entry's `at`, Infinity when none; an entry's `at` is
   * before its commit, on the clock the hints are timed on). Returns the hints still waiting.
   */
  function settleCovered(x: Backstop, oldest: number, readAt: number): BackstopHint[] {
    const left: BackstopHint[] = [];
    for (const h of x.hints) {
      if (h.at < readAt && oldest > h.at) h.resolve();
      else left.push(h);
    }
    return left;
  }

  /**
   * Seals the backstops due by `until` (all of them with Infinity); resolves when their seals
   * settled. On the clock of a started poll (`timers`), one read of the scopes with unsealed entries
   * comes first: a hint whose commits a holder has sealed since resolves without a seal here, and a
   * backstop whose remaining hints are not due yet goes back to wait. Under steady load a held
   * scope is hinted at every window, so most of its backstop's hints are sealed by the holder by
   * the time the first is due; sealing anyway raced the holder for the chain's head (with four
   * worker processes on one scope, about a third of all seal attempts lost such a race and read
   * again). A backstop keeps every hint's own time and due, so a late hint never delays an early
   * one's seal.
   */
  async function fireBackstops(until: number, timers?: Clock): Promise<unknown> {
    const due = takeBackstops((_, x) => dueOf(x) <= until);
    if (due.length === 0) return;
    let seal = due;
    if (timers !== undefined && timers === clock) {
      const readAt = timers.now();
      // A failed read (thrown or rejected) seals as before.
      const found = await Promise.resolve()
        .then(() => readCommitted(store, (tx) => tx.unsealedScopes(POLL_SCOPES)))
        .catch(() => null);
      if (found !== null && found.length < POLL_SCOPES) {
        const oldest = new Map(found.map((sc) => [scopeKey(sc), sc.oldestAt]));
        // Stopped during the read: nothing goes back to wait on a clock no poll runs.
        const live = timers === clock;
        seal = [];
        for (const x of due) {
          const left = settleCovered(x, oldest.get(scopeKey(x.scope)) ?? Infinity, readAt);
          if (left.length === 0) continue;
          const rest = { scope: x.scope, hints: left };
          if (!live || dueOf(rest) <= until) seal.push(rest);
          else putBack(rest, timers);
        }
      }
    }
    return Promise.all(seal.map((x) => sealHinted(x.scope).then(() => x.hints.forEach((h) => h.resolve()))));
  }

  /** Returns a backstop's waiting hints to the map (beside any that came meanwhile), its timer armed. */
  function putBack(x: Backstop, timers: Clock): void {
    const k = scopeKey(x.scope);
    const b = backstops.get(k);
    if (b !== undefined) b.hints.unshift(...x.hints);
    else backstops.set(k, x);
    // The timer may be armed for a later backstop's due time: armed again for the earliest.
    if (backstopTimer !== null && backstopTimer.at > dueOf(x)) {
      backstopTimer.cancel();
      backstopTimer = null;
    }
    if (backstopTimer === null) armBackstops(timers);
  }

  /**
   * Waits for the hint windows deciding (and backstop timers' reads), then seals every backstop
   * now: nothing is left to a holder. Again while either is left, at most `passes` times (a stop
   * must end while other processes' commits keep hinting).
   */
  async function settleHints(passes = Infinity): Promise<void> {
    for (let pass = 0; pass < passes; pass++) {
      flushDelayed();
      if (deciding.size === 0 && backstops.size === 0) return;
      await Promise.allSettled([...deciding]);
      await fireBackstops(Infinity);
    }
  }

  /** Gives up the claims of scopes idle for IDLE_CLAIM_MS (all of them with `all`). */
  async function releaseClaims(now: number, all: boolean): Promise<void> {
    if (sealers === undefined) return;
    for (const [k, at] of others) if (now - at >= 2 * Math.max(CLAIM_RECHECK_MS, bound())) others.delete(k);
    const idle = [...claimed].filter(([, c]) => all || now - c.at >= IDLE_CLAIM_MS);
    if (idle.length === 0) return;
    for (const [k] of idle) claimed.delete(k);
    await sealers.release(idle.map(([, c]) => c.scope)).catch(noop);
  }

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
    return sealFound(null);
  }

  /**
   * Seals the scopes with unsealed entries. A poll loop (`polled`, with what it found the time
   * before) leaves those another holder seals.
   */
  async function sealFound(polled: { clock: Clock; sighted: Map<string, number> } | null): Promise<number> {
    // A read: on PostgreSQL one statement in autocommit, not BEGIN, the read and COMMIT.
    const readAt = polled?.clock.now() ?? 0;
    const found = await readCommitted(store, (tx) => tx.unsealedScopes(POLL_SCOPES));
    let scopes: Scope[] = found;
    if (polled !== null) {
      const now = polled.clock.now();
      const oldest = new Map(found.map((sc) => [scopeKey(sc), sc.oldestAt]));
      scopes = await ours(
        found.map((sc) => ({ tenantId: sc.tenantId, spaceId: sc.spaceId })),
        now,
        { oldest, before: polled.sighted },
      );
      polled.sighted = oldest;
      // Backstop hints this poll shows needless: the poll saw every scope with unsealed entries
      // (fewer than its limit), and none of the scope's is as old as the hint (an entry's `at` is
      // before its commit, on the clock the poll runs on), so the commits it covers are sealed.
      if (found.length < POLL_SCOPES && backstopTimer?.timers === polled.clock) {
        const settled = new Set<string>();
        for (const [k, x] of backstops) {
          x.hints = settleCovered(x, oldest.get(k) ?? Infinity, readAt);
          if (x.hints.length === 0) settled.add(k);
        }
        takeBackstops((k) => settled.has(k));
      }
      await releaseClaims(now, false);
    }
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
  /** Seals the scopes hinted in the window; `all` (a stop, idle) leaves none to a claim's holder. */
  const fireWindow = (all: boolean): void => {
    const w = hinted;
    if (w === null) return;
    hinted = null;
    w.cancel();
    const timers = clock ?? hintClocks.get(store) ?? null;
    const waiting = [...w.scopes.values()];
    if (all || sealers === undefined || timers === null) {
      for (const { scope, resolve } of waiting) void sealHinted(scope).then(resolve);
      return;
    }
    const d = ours(
      waiting.map((x) => x.scope),
      timers.now(),
    ).then((keep) => {
      const go = new Set(keep.map(scopeKey));
      for (const { scope, resolve } of waiting) {
        if (go.has(scopeKey(scope))) void sealHinted(scope).then(resolve);
        else backstop(scope, timers, resolve);
      }
    });
    deciding.add(d);
    void d.finally(() => deciding.delete(d));
  };
  store.onJournalAppend?.((scope) => {
    // While no poll runs, the clock given by sequencerHintClock (a bare boundary's), if any.
    const timers = clock ?? hintClocks.get(store) ?? null;
    if (hintDelay <= 0 || timers === null) return sealHinted(scope);
    const key = scopeKey(scope);
    if (hinted?.scopes.has(key)) return;
    if (hinted === null) {
      const cancel = timers.setTimer(hintDelay, () => fireWindow(false));
      hinted = { cancel, scopes: new Map() };
    }
    const w = hinted;
    return new Promise<void>((resolve) => w.scopes.set(key, { scope, resolve }));
  });
  /** Seals what waits for its delay right away (stop, idle). */
  const flushDelayed = (): void => fireWindow(true);

  return {
    seal,
    sealAll,
    start(polling) {
      const within = checkSealWithinMs("sequencer", polling.sealWithinMs);
      clock = polling.clock;
      const me = { bound: within, clock: polling.clock };
      starts.push(me);
      const pollMs = Math.max(1, Math.floor(within / 4));
      /** What this poll loop found the time before (its own: two loops must not count as one's two polls). */
      const polled = { clock: polling.clock, sighted: new Map<string, number>() };
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
          current = sealFound(polled)
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
        if (stopped) return;
        stopped = true;
        starts.splice(starts.indexOf(me), 1);
        flushDelayed();
        clock = starts.at(-1)?.clock ?? null;
        cancel?.();
        await current;
        // A stop seals what waits, whoever holds it. Two passes: a backstop timer that fired during
        // the first has its read in `deciding`, and (its clock no longer a poll's) seals what it took.
        await settleHints(2);
        // The last poll gives its claims up; the scopes' next hints or polls elsewhere take them.
        if (starts.length === 0) await releaseClaims(0, true);
      };
    },
    async idle() {
      for (;;) {
        await settleHints();
        const pending: Promise<unknown>[] = [...runs.values()].flatMap((r) => [r.running, r.queued]).filter((p): p is Promise<number> => p !== null);
        if (pending.length === 0) return;
        await Promise.allSettled(pending);
      }
    },
  };
}
