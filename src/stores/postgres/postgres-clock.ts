/**
 * The database server's clock, sampled: the clock that governs leases and deadlines on a
 * PostgreSQL store (docs/deploying-postgres.md, "Whose clock governs leases").
 *
 * Workers on several machines stamp leases (`now + leaseMs`), judge them lapsed (`expiry <= now`),
 * schedule retries and sweep deadlines with the `now` they pass to the store. Were that each
 * machine's own clock, a worker minutes ahead would take live leases from healthy workers and stamp
 * leases nobody else sees lapse; one behind would stamp leases that are dead at birth. So the
 * store measures the offset between this process's clock and the server's
 * (`clock_timestamp()`, small statements off the hot path, every `clockSampleMs`) and the host
 * reads `process clock + offset`: every process sharing the database then runs on one clock, to
 * within half a sample's round trip. The hot path keeps its statements and the Store port keeps its
 * `now` arguments (memory and SQLite, one machine's clock, are unchanged).
 *
 * A sample's error is up to half its round trip, so the round trip must time the statement alone:
 * time spent connecting or waiting for a pooled connection comes before the server reads its
 * clock, and counted in, it shifted the offset by half of it (a fresh connection's 40-60 ms put
 * processes on one machine 20-30 ms apart, and a worker behind a submitter saw each new invocation
 * as not yet due). So `read` says when its statement leaves, each sampling takes the best of
 * several reads, and a sample replaces the one in use when its error bound is no larger than that
 * one's, aged by the most the clocks may drift apart since, or when the two disagree beyond both
 * bounds (the server's clock, or the server, changed) (docs/deploying-postgres.md, "Whose clock
 * governs leases").
 */
import { performance } from "node:perf_hooks";
import type { Clock } from "../../core/ports.js";
import { systemClock } from "../../node/clock.js";

/** The server's time in ms since the epoch, as a float (sub-ms precision). */
export const CLOCK_SQL = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms";

/** A sample whose round trip is longer than this is poor: the clock samples again within a second, not after `everyMs`. */
export const GOOD_SAMPLE_RTT_MS = 1_000;
/** A gap this large between the wall clock's and the monotonic clock's progress means the wall clock was stepped. */
const STEP_MS = 500;
/** Reads per sampling: the one with the shortest round trip is the sample. */
export const CLOCK_PROBES = 3;
/**
 * How fast a sample's error may grow with its age: 1,000 parts per million, the process's clock
 * and the server's each slewed by NTP at its most (500 ppm), in opposite directions. A sample `a`
 * ms old is trusted to within `rttMs / 2 + a * MAX_DRIFT`.
 */
export const MAX_DRIFT = 1_000e-6;

export interface ClockSample {
  /** Server clock minus this process's clock (ms). */
  offsetMs: number;
  /** The sample's round trip (ms): the offset is right to within half of it. */
  rttMs: number;
  /** When it was taken (this process's wall clock). */
  at: number;
}

export interface DatabaseClock extends Clock {
  /** Resolves once a sample succeeded; rejects when the attempt it waited for failed (the next call tries again). */
  ready(): Promise<void>;
  /** The sample in use, or null before the first. */
  sample(): ClockSample | null;
  /** Stops the periodic sampling (the store's close). */
  stop(): void;
}

export interface DatabaseClockOptions {
  /**
   * Reads the server's clock (ms since the epoch). Calls `sent()`, when given, just before its
   * statement leaves, once a connection is in hand: the round trip is timed from there (without
   * the call, from the read's start).
   */
  read: (sent: () => void) => Promise<number>;
  /** Reads per sampling (default {@link CLOCK_PROBES}): the shortest round trip's is kept. */
  probes?: number;
  /** How often to sample again. */
  everyMs: number;
  /** This process's clocks (tests inject them). */
  local?: { wall: () => number; mono: () => number };
}

/**
 * The process clock corrected by the last good sample of the server's. Sampling starts on the first
 * `ready()` or `now()`; until a sample succeeded `now()` is the process's own clock (the worker
 * waits for `ready()` before its first claim, `openRuntime` before it returns).
 */
export function databaseClock(o: DatabaseClockOptions): DatabaseClock {
  const wall = o.local?.wall ?? ((): number => Date.now());
  const mono = o.local?.mono ?? ((): number => performance.now());
  let current: ClockSample | null = null;
  let inFlight: Promise<void> | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let stopped = false;
  let lastWall: number | undefined;
  let lastMono = 0;
  /** Set when the wall clock stepped: the sample in use is replaced by the next one, whatever its bound. */
  let stale = false;
  /** Wall-clock steps seen: a sampling that a step overlapped is not used. */
  let steps = 0;
  const probes = Math.max(1, Math.floor(o.probes ?? CLOCK_PROBES));

  const schedule = (ms: number): void => {
    if (stopped || timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      void take().catch(() => undefined);
    }, ms);
    timer.unref?.();
  };

  /** The error bound of `s` at wall time `w`: half its round trip, plus the drift since it was taken. */
  const bound = (s: ClockSample, w: number): number => s.rttMs / 2 + Math.abs(w - s.at) * MAX_DRIFT;

  /** One read of the server's clock, timed from the moment its statement leaves. */
  const probe = async (): Promise<ClockSample> => {
    let w0 = wall();
    let m0 = mono();
    const server = await o.read(() => {
      w0 = wall();
      m0 = mono();
    });
    const rttMs = mono() - m0;
    if (!Number.isFinite(server)) throw new Error("the server's clock read as a non-number");
    if (!(rttMs >= 0)) throw new Error("the clock read's round trip came out negative (the monotonic clock went back)");
    // The server read its clock about halfway through the round trip.
    return { offsetMs: server - (w0 + rttMs / 2), rttMs, at: w0 };
  };

  /** The shortest of `probes` reads; a read that fails ends the sampling (with the earlier ones, if any). */
  const sampleBest = async (): Promise<ClockSample | null> => {
    let best: ClockSample | null = null;
    for (let i = 0; i < probes && !stopped; i++) {
      let s: ClockSample;
      try {
        s = await probe();
      } catch (e) {
        if (best === null) throw e;
        break;
      }
      if (best === null || s.rttMs < best.rttMs) best = s;
    }
    return best;
  };

  /**
   * Whether `s`, just taken, replaces the sample in use: when that one is stale (a step), when
   * `s`'s bound is no larger than its aged bound, or when the two disagree beyond both bounds (the
   * truth moved: the server's clock was stepped, or a failover reached a server with another clock).
   */
  const replaces = (s: ClockSample): boolean => {
    if (current === null || stale) return true;
    const aged = bound(current, s.at);
    const own = bound(s, s.at);
    return own <= aged || Math.abs(s.offsetMs - current.offsetMs) > aged + own;
  };

  const take = (): Promise<void> => {
    inFlight ??= (async () => {
      // Settles after `inFlight` holds this sampling, whatever happens below.
      await Promise.resolve();
      const stepsAtStart = steps;
      let overlapped = false;
      try {
        const best = await sampleBest();
        overlapped = steps !== stepsAtStart;
        // A sampling a step overlapped is taken only when there is none, and left stale.
        if (best !== null && (overlapped ? current === null : replaces(best))) {
          current = best;
          stale = overlapped;
        }
      } finally {
        inFlight = null;
        // After a sampling a step overlapped, the next at once; with no sample, a poor one or a
        // stale one, soon; otherwise after `everyMs`.
        if (overlapped && !stopped) void take().catch(() => undefined);
        else schedule(current === null || stale || current.rttMs > GOOD_SAMPLE_RTT_MS ? Math.min(1_000, o.everyMs) : o.everyMs);
      }
    })();
    return inFlight;
  };

  return {
    now() {
      const w = wall();
      const m = mono();
      // The wall clock stepped (an operator, NTP stepping, a suspended machine): the offset in use
      // is moved by the step at once (the server's clock did not step), and sampled again now.
      const jump = lastWall === undefined ? 0 : w - lastWall - (m - lastMono);
      if (Math.abs(jump) > STEP_MS && !stopped) {
        steps++;
        if (current !== null) {
          current = { ...current, offsetMs: current.offsetMs - jump, at: current.at + jump };
          stale = true;
        }
        if (inFlight === null) {
          if (timer !== null) clearTimeout(timer);
          timer = null;
          void take().catch(() => undefined);
        }
      }
      lastWall = w;
      lastMono = m;
      if (current === null && inFlight === null && timer === null && !stopped) void take().catch(() => undefined);
      return Math.round(w + (current?.offsetMs ?? 0));
    },
    setTimer: (ms, fn) => systemClock.setTimer(ms, fn),
    ready() {
      if (current !== null) return Promise.resolve();
      return inFlight ?? take();
    },
    sample: () => current,
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      timer = null;
    },
  };
}
