/**
 * The database server's clock, sampled: the clock that governs leases and deadlines on a
 * PostgreSQL store (docs/deploying-postgres.md, "Whose clock governs leases").
 *
 * Workers on several machines stamp leases (`now + leaseMs`), judge them lapsed (`expiry <= now`),
 * schedule retries and sweep deadlines with the `now` they pass to the store. Were that each
 * machine's own clock, a worker minutes ahead would take live leases from healthy workers and stamp
 * leases nobody else sees lapse; one behind would stamp leases that are dead at birth. So the
 * store measures the offset between this process's clock and the server's
 * (`clock_timestamp()`, one small statement off the hot path, every `clockSampleMs`) and the host
 * reads `process clock + offset`: every process sharing the database then runs on one clock, to
 * within half a sample's round trip. The hot path keeps its statements and the Store port keeps its
 * `now` arguments (memory and SQLite, one machine's clock, are unchanged).
 */
import { performance } from "node:perf_hooks";
import type { Clock } from "../../core/ports.js";
import { systemClock } from "../../node/clock.js";

/** The server's time in ms since the epoch, as a float (sub-ms precision). */
export const CLOCK_SQL = "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms";

/** A sample whose round trip is longer than this is kept only until a better one arrives. */
export const GOOD_SAMPLE_RTT_MS = 1_000;
/** A gap this large between the wall clock's and the monotonic clock's progress means the wall clock was stepped. */
const STEP_MS = 500;

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
  /** Reads the server's clock (ms since the epoch). */
  read: () => Promise<number>;
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

  const schedule = (ms: number): void => {
    if (stopped || timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      void take().catch(() => undefined);
    }, ms);
    timer.unref?.();
  };

  const take = (): Promise<void> => {
    inFlight ??= (async () => {
      const w0 = wall();
      const m0 = mono();
      try {
        const server = await o.read();
        const rttMs = mono() - m0;
        if (!Number.isFinite(server)) throw new Error("the server's clock read as a non-number");
        // The server read its clock about halfway through the round trip.
        const s: ClockSample = { offsetMs: server - (w0 + rttMs / 2), rttMs, at: w0 };
        if (current === null || rttMs <= GOOD_SAMPLE_RTT_MS || rttMs <= current.rttMs) current = s;
      } finally {
        inFlight = null;
        // A failed or poor sample is retried soon; a good one after `everyMs`.
        schedule(current === null || current.rttMs > GOOD_SAMPLE_RTT_MS ? Math.min(1_000, o.everyMs) : o.everyMs);
      }
    })();
    return inFlight;
  };

  return {
    now() {
      const w = wall();
      const m = mono();
      // The wall clock stepped (an operator, NTP stepping, a suspended machine): sample again now.
      if (lastWall !== undefined && Math.abs(w - lastWall - (m - lastMono)) > STEP_MS && inFlight === null) {
        if (timer !== null) clearTimeout(timer);
        timer = null;
        void take().catch(() => undefined);
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
