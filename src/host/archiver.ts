/**
 * The host's journal archiver (docs/archives.md): `host.archive.runOnce()` archives and prunes what
 * is closed in every scope with a sealed journal; a started worker runs it every `everyMs` beside
 * its claim loop, pruning at a bounded pace. Each pass publishes the checkpoints it signed to the
 * configured witnesses (a witness that fails is counted, logged once per outage and retried at the
 * next pass; archiving goes on). It keeps this process's counts for the metrics.
 */
import type { ArchiveTarget } from "../core/archive-format.js";
import { archiveScope, type ArchiveRun } from "../core/archiver.js";
import { WritError, errorMessage, isWritError } from "../core/errors.js";
import type { ResolvedArchiveOptions } from "../core/archive-options.js";
import { innerStore } from "../core/sealing.js";
import { readCommitted, type JournalScopeState } from "../core/store.js";
import type { Keyring } from "../core/keyring.js";
import type { Scope } from "../core/types.js";
import { witnessPublisher, type WitnessPass } from "../core/witness.js";
import type { HostContext } from "./context.js";
import { outageLog } from "./outage.js";
import type { WorkerCompanion } from "./worker.js";

/** This process's archiving, for the metrics. */
export interface ArchiveStats {
  bytesArchived: number;
  entriesArchived: number;
  segmentsWritten: number;
  entriesPruned: number;
  /** Checkpoints this process published to a configured witness (each witness counted). */
  witnessPublished: number;
  /** Times a configured witness could not be read or did not take a checkpoint (once per witness and scope in a pass). */
  witnessFailures: number;
  /** As of the last pass over every scope (null before one): the sum over scopes of head − watermark. */
  lag: number | null;
  /** As of the last pass: the `at` of the oldest entry still in the database (null: none). */
  oldestLiveAt: number | null;
}

/** What one run did for one scope; `witnesses` when witnesses are configured. */
export interface HostArchiveRun extends ArchiveRun {
  witnesses?: WitnessPass;
}

export interface HostArchive {
  /** The target, or null when archiving is off. */
  readonly target: ArchiveTarget | null;
  /**
   * Archives what is closed (signing a checkpoint of each head first) and prunes what is archived,
   * in `scopes` or every scope with a sealed journal. Resolves with one run per scope archived;
   * `NOT_FOUND`-free: a scope with nothing to do reports empty segments.
   */
  runOnce(scopes?: readonly Scope[], options?: { keepLiveMs?: number }): Promise<HostArchiveRun[]>;
  /** Every scope's sealed head, first live entry and watermark (paged through the store). */
  status(): Promise<JournalScopeState[]>;
  stats(): ArchiveStats;
}

const SCOPES_PAGE = 200;

/** One turn of the event loop: what is waiting on I/O or timers runs before the archiver goes on. */
const breathe = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The host's archive API, and the paced run a started worker makes. */
export function createHostArchive(ctx: HostContext, keyring: Keyring, opts: ResolvedArchiveOptions): { api: HostArchive; runPaced: (stopped: () => boolean) => Promise<HostArchiveRun[]> } {
  const { o } = ctx;
  const store = innerStore(o.store);
  const stats: ArchiveStats = { bytesArchived: 0, entriesArchived: 0, segmentsWritten: 0, entriesPruned: 0, witnessPublished: 0, witnessFailures: 0, lag: null, oldestLiveAt: null };
  const publisher = opts.witnesses.length > 0 ? witnessPublisher(opts.witnesses) : null;
  // One log line per witness outage (its name has no credentials; the error names no secret).
  const trouble = new Map(opts.witnesses.map((w) => [w.name, outageLog(ctx.log, "publishing journal checkpoints to a witness", { witness: w.name }, () => o.clock.now())]));
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => o.clock.setTimer(ms, resolve));

  async function status(): Promise<JournalScopeState[]> {
    const out: JournalScopeState[] = [];
    let after: Scope | undefined;
    for (;;) {
      const page = await readCommitted(store, (tx) => tx.journalScopes(SCOPES_PAGE, after));
      out.push(...page);
      if (page.length < SCOPES_PAGE) return out;
      const last = page[page.length - 1]!;
      after = { tenantId: last.tenantId, spaceId: last.spaceId };
    }
  }

  async function run(scopes: readonly Scope[] | undefined, pauseMs: number, keepLiveMs = opts.keepLiveMs, stopped?: () => boolean): Promise<HostArchiveRun[]> {
    const target = opts.target;
    if (target === null) throw new WritError("INVALID_OPTION", "journal archiving is off: no archive target is configured (docs/archives.md)");
    const all = scopes === undefined;
    const list = scopes ?? (await status());
    const runs: HostArchiveRun[] = [];
    const failedWitnesses = new Map<string, string>();
    // One scope's failure (another archiver won the race, a segment that needs an operator, a
    // target down for a moment) must not hold the others back: each scope is tried, and the run
    // fails afterwards naming every scope that did not archive.
    const failedScopes: Array<{ scope: Scope; error: unknown }> = [];
    for (const sc of list) {
      if (stopped?.() === true) break;
      let r: ArchiveRun;
      try {
        r = await archiveScope(store, sc, {
          target,
          crypto: o.crypto,
          keyring,
          signingKey: o.signingKey,
          clock: o.clock,
          segmentEntries: opts.segmentEntries,
          pruneBatch: opts.pruneBatch,
          keepLiveMs,
          hooks: pauseMs > 0 ? { afterPruneBatch: () => sleep(pauseMs) } : {},
          // Verifying and encoding a segment of many thousand entries takes seconds of CPU: the
          // worker's claims and settlements run between its slices.
          breathe,
          ...(stopped ? { stopped } : {}),
        });
      } catch (error) {
        failedScopes.push({ scope: sc, error });
        continue;
      }
      for (const s of r.segments) {
        if (s.adopted) continue;
        stats.bytesArchived += s.bytes;
        stats.entriesArchived += s.entries;
        stats.segmentsWritten += 1;
      }
      stats.entriesPruned += r.pruned;
      if (publisher === null) {
        runs.push(r);
        continue;
      }
      const checkpoints = await readCommitted(store, (tx) => tx.listCheckpoints(r.scope));
      const pass = await publisher.publish(r.scope, checkpoints);
      stats.witnessPublished += pass.published;
      stats.witnessFailures += pass.failed.length;
      for (const f of pass.failed) if (!failedWitnesses.has(f.witness)) failedWitnesses.set(f.witness, `${r.scope.tenantId}/${r.scope.spaceId}: ${f.error}`);
      runs.push({ ...r, witnesses: pass });
    }
    if (publisher !== null && list.length > 0) {
      for (const [name, log] of trouble) {
        const why = failedWitnesses.get(name);
        if (why !== undefined) log.failed(new Error(why));
        else log.ok();
      }
    }
    if (all) {
      const after = await status();
      stats.lag = after.reduce((n, s) => n + (s.headSeq - s.archivedThrough), 0);
      stats.oldestLiveAt = after.length > 0 ? after.reduce((m, s) => Math.min(m, s.firstAt), Number.POSITIVE_INFINITY) : null;
    }
    if (failedScopes.length > 0) {
      const first = failedScopes[0]!.error;
      const named = failedScopes.map((f) => `${f.scope.tenantId}/${f.scope.spaceId}: ${errorMessage(f.error)}`).join("; ");
      throw new WritError(isWritError(first) ? first.code : "STORE_ERROR", `journal archiving failed for ${failedScopes.length} of ${list.length} scope(s), the others archived: ${named}`);
    }
    return runs;
  }

  return {
    api: { target: opts.target, runOnce: (scopes, ro) => run(scopes, 0, ro?.keepLiveMs), status, stats: () => ({ ...stats }) },
    runPaced: (stopped: () => boolean) => run(undefined, opts.prunePauseMs, opts.keepLiveMs, stopped),
  };
}

/** The archiver a started worker runs every `everyMs` (none when archiving is off). */
export function archiveCompanion(ctx: HostContext, opts: ResolvedArchiveOptions, runPaced: (stopped: () => boolean) => Promise<unknown>): WorkerCompanion | undefined {
  if (opts.target === null) return undefined;
  const trouble = outageLog(ctx.log, "journal archiving", {}, () => ctx.o.clock.now());
  let cancel: (() => void) | null = null;
  let current: Promise<void> | null = null;
  let stopped = true;
  const schedule = (): void => {
    cancel = ctx.o.clock.setTimer(opts.everyMs, () => {
      cancel = null;
      // A stop ends a long pass between segments and prune batches, not after the backlog.
      current = runPaced(() => stopped)
        .then(
          () => trouble.ok(),
          (e: unknown) => trouble.failed(e),
        )
        .finally(() => {
          current = null;
          if (!stopped) schedule();
        });
    });
  };
  return {
    start() {
      if (!stopped) return;
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      cancel?.();
      cancel = null;
      await current;
    },
  };
}
