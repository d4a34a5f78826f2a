/**
 * The worker pool (docs/host.md, Workers, leases, fencing): claims runnable invocations in batches, heartbeats per worker (not
 * per invocation), processes up to `concurrency` at once, and stops gracefully (drains in-flight
 * work) or at once. Polling always continues; the store's wake-up hint only shortens the wait.
 */
import { MAX_TIMER_MS } from "../core/validate.js";
import { base64url } from "../core/encoding.js";
import { WritError, errorMessage, isWritError } from "../core/errors.js";
import { transitionsOf } from "../core/transitions.js";
import { innerStore } from "../core/sealing.js";
import { sequencerFor } from "../core/sequencer.js";
import { readCommitted, type StoreTx } from "../core/store.js";
import type { Fence, Invocation } from "../core/types.js";
import { scopeOf, type HandoffSource, type HandoffTicket, type HostContext } from "./context.js";
import { outageLog } from "./outage.js";
import { hostBreakerTargets, processInvocation, type Prepped, type ProcessResult } from "./process.js";

/** The first pause after a failed claim; it doubles with each further failure in a row, up to pollMs. */
const CLAIM_RETRY_MS = 25;

/** A claimed invocation, with its prepare read when the claim made it. */
interface Claimed {
  inv: Invocation;
  given?: Prepped;
}

export interface WorkerOptions {
  /**
   * Invocations processed at once. An invocation whose final settlement is on its way to the store
   * (its connector calls over) no longer takes a slot, so connector calls in flight never exceed
   * this, while `inFlight()` may exceed it by the invocations still settling (at most twice this).
   * @defaultValue 4
   */
  concurrency?: number;
  /** Most invocations claimed per claim. @defaultValue concurrency */
  batchSize?: number;
  /** @defaultValue 30000 */
  leaseMs?: number;
  /** @defaultValue leaseMs / 3 */
  heartbeatMs?: number;
  /** Longest sleep between polls when idle. @defaultValue 1000 */
  pollMs?: number;
  /** Lease owner name. @defaultValue a random id */
  id?: string;
  /**
   * Whether this worker, while it waits for work with a slot free, takes an admission of its own
   * host in the admission's commit (docs/host.md, "Hand-off to an idle worker"). Off: every
   * admission waits for a wake-up and a claim. @defaultValue true
   */
  handoff?: boolean;
}

export interface Worker {
  readonly id: string;
  /** Starts the claim loop and the heartbeat. */
  start(): void;
  /** Stops claiming; with `drain` (default) waits for in-flight invocations, else aborts them. */
  stop(options?: { drain?: boolean }): Promise<void>;
  /** Claims one batch and processes it to the end (tests and scripts). Returns what each ended as. */
  runOnce(): Promise<ProcessResult[]>;
  /** Invocations in flight right now, those still settling included. */
  inFlight(): number;
}

/** A background part a started worker runs beside its claim loop (the notification dispatcher, the journal archiver). */
export interface WorkerCompanion {
  start(): void;
  stop(): Promise<void>;
}

/** Several companions as one: started in order, stopped together. */
export function companions(parts: ReadonlyArray<WorkerCompanion | undefined>): WorkerCompanion | undefined {
  const all = parts.filter((p): p is WorkerCompanion => p !== undefined);
  if (all.length <= 1) return all[0];
  return {
    start: () => all.forEach((p) => p.start()),
    stop: async () => {
      await Promise.all(all.map((p) => p.stop()));
    },
  };
}

export function createWorker(ctx: HostContext, options: WorkerOptions = {}, sweep?: () => Promise<unknown>, companion?: WorkerCompanion): Worker {
  const { o } = ctx;
  const int = (name: string, v: unknown, dflt: number, max = Number.MAX_SAFE_INTEGER): number => {
    if (v === undefined) return dflt;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) {
      throw new WritError("INVALID_OPTION", `worker: ${name} must be a positive integer${max < Number.MAX_SAFE_INTEGER ? ` of at most ${max} ms (what a timer can hold)` : ""}`);
    }
    return v;
  };
  const concurrency = int("concurrency", options.concurrency, 4);
  const batchSize = int("batchSize", options.batchSize, concurrency);
  const leaseMs = int("leaseMs", options.leaseMs, 30_000, MAX_TIMER_MS);
  const heartbeatMs = int("heartbeatMs", options.heartbeatMs, Math.max(1, Math.floor(leaseMs / 3)), MAX_TIMER_MS);
  const pollMs = int("pollMs", options.pollMs, 1000, MAX_TIMER_MS);
  const id = options.id ?? `worker-${base64url(o.random.bytes(6))}`;
  if (options.handoff !== undefined && typeof options.handoff !== "boolean") throw new WritError("INVALID_OPTION", "worker: handoff must be a boolean");
  const takesHandoffs = options.handoff ?? true;
  /**
   * One abort controller per invocation in flight (aborted together by `stop({ drain: false })`):
   * the boundary listens on its invocation's signal, so a worker signal shared by every invocation
   * would carry one listener per invocation in flight (Node warns of a leak past ten).
   */
  const aborts = new Set<AbortController>();
  let aborted = false;
  const inflight = new Set<Promise<ProcessResult>>();
  /**
   * In-flight invocations whose final settlement is on its way to the store (no connector call
   * left): they do not count against `concurrency`, so the claim that refills their slot joins the
   * settlement's batch instead of waiting one round trip for its answer (docs/host.md).
   */
  let settlingCount = 0;
  /** Wakes the claim loop waiting for a slot when an invocation starts settling. */
  let slotFreed: (() => void) | null = null;
  let running = false;
  let loop: Promise<void> | null = null;
  let cancelHeartbeat: (() => void) | null = null;
  let wake: (() => void) | null = null;
  /** Ends the pause after a failed claim (only `stop` calls it: wake-ups do not cut the pause short). */
  let halt: (() => void) | null = null;
  /**
   * A wake-up that arrived while the loop was not asleep (claiming, or reading the next run time):
   * the next sleep returns at once instead of waiting for the poll (a lone invocation admitted
   * during that read would otherwise wait up to pollMs).
   */
  let woken = false;
  const onWake = (): void => {
    if (wake !== null) wake();
    else woken = true;
  };
  /**
   * Set while the loop sleeps: an invocation of this worker ended queued (a retry after a backoff,
   * a breaker's or a hand-back's requeue), so the next run time may have moved: the loop reads it
   * again and sleeps on, or claims if work is due. An ended invocation is not a sign of new work,
   * so it costs no claim that finds nothing; and one that ended in any other state queued nothing,
   * so it costs no read either.
   */
  let recheck: (() => void) | null = null;
  /** An invocation ended queued while the loop was not asleep: a read of the next run time under way may predate it. */
  let endedAwake = false;
  /**
   * Set while the loop waits for work (its last claim found less than it asked for): only then
   * does the worker take admissions in their own commit (docs/host.md, "Hand-off to an idle
   * worker"). A busy loop claims them with everything else.
   */
  let waiting = false;
  /** Hand-off tickets given and not yet taken or failed: each holds a slot. */
  let handing = 0;
  /** Resolves when the last open ticket closes (`stop` waits for it). */
  let handedOff: { promise: Promise<void>; resolve: () => void } | null = null;
  let unsubscribe: (() => void) | null = null;
  let stopSealing: (() => Promise<void>) | null = null;
  const sequencer = sequencerFor(o.store, o.crypto);
  /** Invocations this worker abandoned while holding their lease, by id. */
  const abandoned = new Map<string, Invocation>();
  /**
   * The lease-owner name claims are made under. A claim that fails may still have committed (its
   * acknowledgement lost), leaving leases this worker does not know it holds; the heartbeat extends
   * every lease of an owner name, so after a failed claim the worker claims under a new name and
   * heartbeats an old one only while invocations it claimed under it are in flight (docs/host.md,
   * Workers, leases, fencing). The unknown leases then lapse and recovery claims them.
   */
  let owner = id;
  let generation = 0;
  /** In-flight invocations per owner name they were claimed under. */
  const inFlightBy = new Map<string, number>();
  const now = (): number => o.clock.now();
  const claimTrouble = outageLog(ctx.log, "claim", { worker: id }, now, "error");
  const pollTrouble = outageLog(ctx.log, "nextRunAt", { worker: id }, now);
  const sweepTrouble = outageLog(ctx.log, "recovery sweep", { worker: id }, now);
  const heartbeatTrouble = outageLog(ctx.log, "heartbeat", { worker: id }, now);
  const sealTrouble = outageLog(ctx.log, "journal sealing", { worker: id }, now);

  // Every (connector, operation) this host's actions call: the breakers a claim reads along.
  const targets = hostBreakerTargets(ctx);

  /**
   * Claims up to `limit`; where the store can, with each invocation's prepare read in the same
   * statement, and the next run time when it claimed fewer (see `ClaimedBatch`).
   */
  async function claim(limit: number): Promise<{ claimed: Claimed[]; nextRunAt: number | null | undefined }> {
    // A clock read from elsewhere (the database server's) is set before the first lease is stamped.
    if (o.clock.ready !== undefined) await o.clock.ready();
    const now = o.clock.now();
    const tokens = Array.from({ length: limit }, () => base64url(o.random.bytes(16)));
    const t = transitionsOf(o.store);
    try {
      if (t.claimPrepared !== undefined) {
        const out = await t.claimPrepared({ owner, tokens, now, leaseMs, limit }, targets);
        return { claimed: out.claimed.map(({ invocation, prepared }) => ({ inv: invocation, given: { prepared, targets } })), nextRunAt: out.nextRunAt };
      }
      return { claimed: (await t.claim({ owner, tokens, now, leaseMs, limit })).map((inv) => ({ inv })), nextRunAt: undefined };
    } catch (e) {
      owner = `${id}.${++generation}`;
      throw e;
    }
  }

  function launch({ inv, given }: Claimed): Promise<ProcessResult> {
    const by = inv.leaseOwner ?? owner;
    ctx.emit({ type: "invocation.claimed", scope: scopeOf(inv), invocationId: inv.invocationId, at: o.clock.now(), status: "running", data: { owner: by, attemptCount: inv.attemptCount } });
    const abort = new AbortController();
    if (aborted) abort.abort();
    aborts.add(abort);
    // Set once the invocation's final settlement is planned: its connector calls are over, so its
    // slot counts as free and the next claim can travel with that settlement.
    let releasing = false;
    const settling = (): void => {
      if (releasing) return;
      releasing = true;
      settlingCount++;
      slotFreed?.();
    };
    /** How the run ended; undefined while it runs, and if it threw. */
    let outcome: ProcessResult | undefined;
    const p = processInvocation(ctx, inv, abort.signal, given, settling)
      .then((r) => {
        if (r === "abandoned") abandoned.set(inv.invocationId, inv);
        outcome = r;
        return r;
      })
      .finally(() => {
        aborts.delete(abort);
        inflight.delete(p);
        if (releasing) settlingCount--;
        const left = (inFlightBy.get(by) ?? 0) - 1;
        if (left > 0) inFlightBy.set(by, left);
        else inFlightBy.delete(by);
        // Only a run that left the invocation queued (a retry, a breaker's or a hand-back's
        // requeue) can have moved the next run time; one that ended otherwise queued nothing, and
        // costs the sleeping loop no read (an unknown end is taken as a requeue).
        if (outcome === undefined || outcome === "queued") {
          if (recheck !== null) recheck();
          else endedAwake = true;
        }
        // A loop waiting for a slot may be waiting on a race that does not hold this invocation
        // (launched from a hand-off after the race began).
        slotFreed?.();
      });
    inflight.add(p);
    inFlightBy.set(by, (inFlightBy.get(by) ?? 0) + 1);
    return p;
  }

  /** Slots free for a claim: settling invocations free theirs (see `runLoop`), open tickets hold theirs. */
  const freeSlots = (): number => concurrency - inflight.size + Math.min(settlingCount, concurrency) - handing;

  /**
   * A ticket for an admission to claim in its own commit, while the loop waits for work with a
   * slot free. The ticket's owner name counts as in flight until it closes, so the heartbeat
   * extends the lease it may be given.
   */
  function offer(): HandoffTicket | undefined {
    if (!running || !waiting || freeSlots() <= 0) return undefined;
    handing++;
    handedOff ??= (() => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    })();
    const by = owner;
    inFlightBy.set(by, (inFlightBy.get(by) ?? 0) + 1);
    let open = true;
    const close = (): boolean => {
      if (!open) return false;
      open = false;
      handing--;
      const left = (inFlightBy.get(by) ?? 0) - 1;
      if (left > 0) inFlightBy.set(by, left);
      else inFlightBy.delete(by);
      if (handing === 0) {
        handedOff?.resolve();
        handedOff = null;
      }
      // The slot this ticket held is free (or taken by what it launched): a loop waiting for a
      // slot counts again.
      slotFreed?.();
      return true;
    };
    return {
      claim: { owner: by, tokens: [base64url(o.random.bytes(16))], now: o.clock.now(), leaseMs, limit: 1 },
      breakers: targets,
      taken(claimed) {
        if (!close() || claimed === undefined) return;
        void launch({ inv: claimed.invocation, given: { prepared: claimed.prepared, targets } });
      },
      failed() {
        // As after a failed claim: the admission may have committed with a lease this worker
        // does not know it holds; that lease lapses and recovery claims the invocation.
        if (close() && owner === by) owner = `${id}.${++generation}`;
      },
    };
  }
  const source: HandoffSource = { offer };

  /** The owner names to heartbeat: the current one and those with invocations still in flight. */
  function owners(): string[] {
    return [owner, ...[...inFlightBy.keys()].filter((n) => n !== owner)];
  }

  /**
   * One heartbeat: extends this worker's leases, except those of invocations it abandoned (after a
   * store error), which keep their current expiry so that recovery can claim them when it passes.
   * Heartbeats are per worker; without this, a live worker would hold an abandoned lease forever.
   */
  async function beat(tx: StoreTx): Promise<void> {
    const now = o.clock.now();
    const lapsing: Array<{ inv: Invocation; fence: Fence }> = [];
    for (const [invocationId, was] of abandoned) {
      const fence: Fence = { invocationId, owner: was.leaseOwner!, token: was.leaseToken! };
      // assertLease holds the row for this transaction (PostgreSQL), so nothing changes it before the write below.
      const held = await tx.assertLease(scopeOf(was), fence).then(
        () => true,
        (e: unknown) => {
          if (isWritError(e, "LEASE_LOST")) return false;
          throw e;
        },
      );
      const cur = held ? await tx.getInvocation(scopeOf(was), invocationId) : null;
      if (cur && (cur.leaseExpiresAt ?? 0) > now) lapsing.push({ inv: cur, fence });
      else abandoned.delete(invocationId); // lapsed, or no longer ours
    }
    for (const name of owners()) await tx.heartbeat(name, now, leaseMs);
    for (const { inv, fence } of lapsing) await tx.updateInvocation(scopeOf(inv), inv, fence);
  }

  function heartbeat(): void {
    cancelHeartbeat = o.clock.setTimer(heartbeatMs, () => {
      if (!running && inflight.size === 0 && handing === 0) return;
      // Beneath the sealing layer: a heartbeat needs no value opened, and an abandoned invocation
      // holding one this process cannot open must not fail every lease's extension.
      innerStore(o.store)
        .transact(beat)
        .then(
          () => heartbeatTrouble.ok(),
          (e: unknown) => heartbeatTrouble.failed(e),
        )
        .finally(() => {
          if (running || inflight.size > 0 || handing > 0) heartbeat();
        });
    });
  }

  /** `known`: the next run time as the claim read it (undefined: the loop reads it itself). */
  async function sleep(known: number | null | undefined): Promise<void> {
    waiting = true;
    try {
      await sleepUntilWork(known);
    } finally {
      waiting = false;
    }
  }

  async function sleepUntilWork(known: number | null | undefined): Promise<void> {
    for (;;) {
      // A wake-up that came while the loop claimed needs no read: the loop claims again at once.
      if (woken || !running) return;
      let ms = pollMs;
      // The claim's own read of the next run time serves the first turn: what committed after it
      // is a wake-up (`woken`) or an ended invocation (`endedAwake`, reset before the claim).
      let next: number | null | undefined = known;
      known = undefined;
      if (next === undefined) {
        endedAwake = false;
        try {
          next = await readCommitted(o.store, (tx) => tx.nextRunAt());
          pollTrouble.ok();
        } catch (e) {
          pollTrouble.failed(e);
        }
      }
      if (next !== null && next !== undefined) ms = Math.max(0, Math.min(pollMs, next - o.clock.now()));
      // `stop()` may have come while the loop was claiming or reading (it wakes only a sleep
      // already begun): a stopped worker never starts one, or a stop would wait out the poll.
      if (ms === 0 || woken || !running) return;
      // An invocation that ended during the read may have queued a retry the read did not see.
      if (endedAwake) continue;
      const ended = await new Promise<boolean>((resolve) => {
        const cancel = o.clock.setTimer(ms, () => done(false));
        const done = (invocationEnded: boolean): void => {
          cancel();
          wake = null;
          recheck = null;
          resolve(invocationEnded);
        };
        wake = () => done(false);
        recheck = () => done(true);
      });
      if (!ended) return;
    }
  }

  /**
   * The pause after `failures` claims in a row failed: 25 ms, doubling with each further failure, at
   * most pollMs. A claim that keeps failing while work is due (the store refuses writes but answers
   * reads, or a claim that errors every time) would otherwise be retried at once, each failure
   * followed by a read that finds the work due: a hot loop of round trips and error logs. Wake-ups
   * do not shorten the pause (each admission would end it); none is lost by it either, since the
   * loop claims as soon as the pause ends, whatever came meanwhile.
   */
  async function pauseAfterFailedClaims(failures: number): Promise<void> {
    const ms = Math.min(pollMs, CLAIM_RETRY_MS * 2 ** Math.min(failures - 1, 30));
    if (!running) return;
    await new Promise<void>((resolve) => {
      const cancel = o.clock.setTimer(ms, () => done());
      const done = (): void => {
        cancel();
        halt = null;
        resolve();
      };
      halt = done;
    });
  }

  let lastSweep = 0;
  async function maybeSweep(): Promise<void> {
    if (!sweep || o.clock.now() - lastSweep < ctx.r.sweepMs) return;
    lastSweep = o.clock.now();
    try {
      await sweep();
      sweepTrouble.ok();
    } catch (e) {
      sweepTrouble.failed(e);
    }
  }

  async function runLoop(): Promise<void> {
    let failedClaims = 0;
    while (running) {
      await maybeSweep();
      // Settling invocations free their slots up to `concurrency` of them: should settlements stall
      // (a lock, a slow store), claims stop at twice `concurrency` in flight instead of piling up.
      const free = freeSlots();
      if (free <= 0) {
        await Promise.race([...inflight, new Promise<void>((r) => (slotFreed = r))]);
        slotFreed = null;
        continue;
      }
      let claimed: Claimed[] = [];
      let known: number | null | undefined;
      const asked = Math.min(free, batchSize);
      // The claim sees everything committed before it starts: earlier wake-ups and requeues by
      // ended invocations are answered (a next run time it reads covers them too).
      woken = false;
      endedAwake = false;
      try {
        ({ claimed, nextRunAt: known } = await claim(asked));
        claimTrouble.ok();
        failedClaims = 0;
      } catch (e) {
        claimTrouble.failed(e);
        failedClaims++;
      }
      for (const c of claimed) void launch(c);
      if (failedClaims > 0) {
        await pauseAfterFailedClaims(failedClaims);
        continue;
      }
      // A claim that found fewer than it asked for left nothing claimable as of its snapshot: the
      // loop waits as after an empty one (a wake-up that came meanwhile, or a next run time
      // already due, ends the wait at once) rather than claim again to find nothing.
      if (claimed.length < asked) await sleep(known);
    }
  }

  return {
    id,
    start() {
      if (running) return;
      running = true;
      unsubscribe = o.store.onWake?.(onWake) ?? null;
      if (takesHandoffs) ctx.handoffs.add(source);
      // The journal sequencer's bounded poll: seals what other processes committed (or left
      // unsealed when they died) within sealWithinMs; this process's commits wake it at once.
      stopSealing = sequencer.start({
        clock: o.clock,
        sealWithinMs: ctx.r.sealWithinMs,
        onError: (e) => sealTrouble.failed(e),
        onOk: () => sealTrouble.ok(),
      });
      heartbeat();
      loop = runLoop().catch((e: unknown) => ctx.log.error({ worker: id, err: errorMessage(e) }, "worker loop crashed"));
      companion?.start();
    },
    async stop(opts = {}) {
      running = false;
      ctx.handoffs.delete(source);
      wake?.();
      halt?.();
      if (opts.drain === false) {
        aborted = true;
        for (const a of aborts) a.abort();
      }
      await loop;
      // Admissions under way with this worker's ticket: what they claimed is launched first.
      await handedOff?.promise;
      await Promise.allSettled([...inflight]);
      await companion?.stop();
      cancelHeartbeat?.();
      unsubscribe?.();
      await stopSealing?.();
      stopSealing = null;
      await sequencer.idle();
    },
    async runOnce() {
      const { claimed } = await claim(batchSize);
      if (claimed.length === 0) return [];
      const stopBeat = claimed.length > 0 && !running;
      if (stopBeat) heartbeat();
      try {
        return await Promise.all(claimed.map(launch));
      } finally {
        if (stopBeat) cancelHeartbeat?.();
        // Seals started by this batch's commits end before runOnce resolves.
        await sequencer.idle();
      }
    },
    inFlight: () => inflight.size,
  };
}
