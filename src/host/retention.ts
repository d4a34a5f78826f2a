/**
 * The host's retention (docs/retention.md): the status an operator reads (a dry run), a prune run
 * on demand (`writ retention prune`, cron), and the background pruner a started worker runs beside
 * its claim loop, paced by the clock (one batch, one short transaction, then a pause).
 */
import { holdMemo, runRetention, type PrunedKind, type RetentionReport, type RetentionSettings } from "../core/retention.js";
import { innerStore } from "../core/sealing.js";
import type { HostContext } from "./context.js";
import { outageLog } from "./outage.js";
import type { WorkerCompanion } from "./worker.js";

/** What a run of the pruner reports to listeners: rows deleted by one batch, or a finished run. */
export type RetentionSignal = { kind: "batch"; pruned: Partial<Record<PrunedKind, number>> } | { kind: "run"; report: RetentionReport };

export interface RetentionApi {
  /** The resolved settings (periods, replay window, pace). */
  readonly settings: RetentionSettings;
  /** A dry run: what a prune would delete now, what it would hold and why, the oldest ended invocation. */
  status(): Promise<RetentionReport>;
  /** One prune run now (every batch, paced), as `writ retention prune` does; `dryRun` deletes nothing. */
  prune(opts?: { dryRun?: boolean; maxBatches?: number }): Promise<RetentionReport>;
  /** `cb` hears every committed batch and every finished run (metrics). Returns an unsubscribe. */
  onSignal(cb: (s: RetentionSignal) => void): () => void;
}

export function createRetention(ctx: HostContext): RetentionApi & { companion(): WorkerCompanion } {
  const { o } = ctx;
  const settings = ctx.r.retention;
  const store = innerStore(o.store);
  const listeners = new Set<(s: RetentionSignal) => void>();
  const emit = (s: RetentionSignal): void => {
    for (const cb of listeners) {
      try {
        cb(s);
      } catch {
        // A listener's failure is its own.
      }
    }
  };
  const pause = (ms: number): Promise<void> => new Promise((resolve) => o.clock.setTimer(ms, resolve));
  // What the journal held in earlier runs of this host (valid per scope while its watermark stays).
  const memo = holdMemo();

  async function run(opts: { dryRun?: boolean; maxBatches?: number; stopped?: () => boolean; pause?: (ms: number) => Promise<void> }): Promise<RetentionReport> {
    const report = await runRetention(store, settings, {
      now: o.clock.now(),
      pause: opts.pause ?? pause,
      ...(opts.dryRun !== undefined ? { dryRun: opts.dryRun } : {}),
      ...(opts.maxBatches !== undefined ? { maxBatches: opts.maxBatches } : {}),
      ...(opts.stopped ? { stopped: opts.stopped } : {}),
      onBatch: (pruned) => emit({ kind: "batch", pruned }),
      memo,
    });
    emit({ kind: "run", report });
    return report;
  }

  /**
   * A run on demand (`writ retention status|prune`): the clock's timers do not keep a process
   * alive, and such a process must not end in a pause between two batches.
   */
  async function onDemand(opts: { dryRun?: boolean; maxBatches?: number }): Promise<RetentionReport> {
    const alive = setInterval(() => undefined, 60_000);
    try {
      return await run(opts);
    } finally {
      clearInterval(alive);
    }
  }

  /** The background pruner: a run every `everyMs` while the worker runs; a stop ends it between batches. */
  function companion(): WorkerCompanion {
    let running = false;
    let loop: Promise<void> | null = null;
    let cancel: (() => void) | null = null;
    let wake: (() => void) | null = null;
    const trouble = outageLog(ctx.log, "retention pruning", {}, () => o.clock.now());
    const sleep = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        cancel = o.clock.setTimer(ms, () => {
          wake = null;
          resolve();
        });
        wake = () => {
          cancel?.();
          wake = null;
          resolve();
        };
      });
    async function cycle(): Promise<void> {
      while (running) {
        try {
          // A stop cuts a pause short and ends the run before its next batch.
          await run({ stopped: () => !running, pause: sleep });
          trouble.ok();
        } catch (e) {
          trouble.failed(e);
        }
        if (running) await sleep(settings.everyMs);
      }
    }
    return {
      start() {
        if (running || !settings.enabled) return;
        running = true;
        loop = cycle();
      },
      async stop() {
        running = false;
        wake?.();
        await loop;
        loop = null;
      },
    };
  }

  return {
    settings,
    status: () => onDemand({ dryRun: true }),
    prune: (opts = {}) => onDemand(opts),
    onSignal(cb) {
      listeners.add(cb);
      return () => listeners.delete(cb);
    },
    companion,
  };
}
