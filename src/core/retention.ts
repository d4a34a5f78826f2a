/**
 * Retention (docs/retention.md): which ended work may leave the database, and the pruner that
 * removes it in small batches. Pure: everything goes through the Store port.
 *
 * An ended invocation (succeeded, failed, denied, cancelled) is pruned, with its steps, attempts,
 * consumed decisions, idempotency record, resolved reconciliations, closed approval and matched
 * completions, once it ended longer ago than the retention period AND every journal entry naming
 * it is sealed at or below its scope's archive watermark. It is held (never pruned) while a journal
 * entry naming it is not archived, while a reconciliation of it is open, or while its approval is
 * pending. Open invocations are never candidates. Journal entries and checkpoints are never
 * deleted here (the archiver's business).
 *
 * Each batch is one short transaction: the candidates, their holds, and the deletes of whole
 * invocations (children first, the row last). A crash between batches leaves whole invocations
 * either present or gone; a crash inside a batch rolls the batch back.
 */
import { WritError } from "./errors.js";
import { AGED_RECORD_KINDS, readCommitted, type AgedRecordKind, type EndedCursor, type PrunedInvocationRows, type Store, type StoreTx } from "./store.js";
import type { Invocation, Scope } from "./types.js";

/** Why an ended invocation old enough to go is kept. */
export const HOLD_REASONS = ["not_archived", "open_reconciliation", "pending_approval"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** Row kinds a prune removes (an invocation's rows, then the age-only records). */
export type PrunedKind = keyof PrunedInvocationRows | AgedRecordKind;

/** How long each kind of ended record stays, and how the pruner paces itself (resolved, in ms). */
export interface RetentionSettings {
  /** Ended invocations, with everything that belongs to them. */
  invocationsMs: number;
  /** How long an idempotency key answers DUPLICATE (or a conflict) after its invocation ended. */
  replayWindowMs: number;
  /** Expired early completions, after they expired. */
  completionsMs: number;
  /** Delivered and dead notification deliveries, and remembered webhook delivery ids. */
  deliveriesMs: number;
  /** Rows examined per batch (one short transaction each). */
  batchSize: number;
  /** Pause between batches: the pace bound (at most batchSize invocations per pause). */
  pauseMs: number;
  /** How often a started worker runs the pruner. */
  everyMs: number;
  /** Whether started workers run the pruner. */
  enabled: boolean;
}

/** What one run (or a dry run) found and did. */
export interface RetentionReport {
  /** When the run looked: cut-offs are computed from it. */
  now: number;
  dryRun: boolean;
  /** Rows deleted (dry run: rows that a run would delete, counted for invocations as invocations only). */
  pruned: Record<PrunedKind, number>;
  /** Ended invocations old enough to go that were kept, by reason. */
  held: Record<HoldReason, number>;
  /** The oldest ended invocation still in the database after the run (its updatedAt), or null. */
  oldestEndedAt: number | null;
  /** A few held invocations with their reason (the first 20), for operators. */
  heldSample: Array<{ tenantId: string; spaceId: string; invocationId: string; endedAt: number; reason: HoldReason }>;
  batches: number;
  /** False when the run stopped early (its batch budget or the caller's stop). */
  complete: boolean;
}

const DAY = 86_400_000;

/** Every retention period's default (30 days) and the pacing defaults. */
export const RETENTION_DEFAULTS: Readonly<Omit<RetentionSettings, "replayWindowMs">> = {
  invocationsMs: 30 * DAY,
  completionsMs: 30 * DAY,
  deliveriesMs: 30 * DAY,
  batchSize: 100,
  pauseMs: 100,
  everyMs: 60_000,
  enabled: true,
};

/** Retention options as written in `writ.config.ts` or passed to `createHost` (docs/retention.md). */
export interface RetentionOptions {
  /** How long ended invocations stay: an integer number of ms. @defaultValue 2592000000 (30 days) */
  invocationsMs?: number;
  /**
   * How long an idempotency key answers DUPLICATE (or a conflict) after its invocation ended; after
   * the key's invocation is pruned the same key is a new request. At least the retry and approval
   * horizons, at most `invocationsMs` (the key lives with its invocation). @defaultValue invocationsMs
   */
  replayWindowMs?: number;
  /** How long expired early completions stay after they expired. @defaultValue 2592000000 (30 days) */
  completionsMs?: number;
  /** How long delivered and dead notification deliveries and webhook delivery ids stay. @defaultValue 2592000000 (30 days) */
  deliveriesMs?: number;
  /** Ended invocations examined per batch (one short transaction): 1 to 10000. @defaultValue 100 */
  batchSize?: number;
  /** Pause between two batches, in ms (the pace bound). @defaultValue 100 */
  pauseMs?: number;
  /** How often a started worker runs the pruner, in ms. @defaultValue 60000 */
  everyMs?: number;
  /** Whether started workers prune in the background (`writ retention prune` works either way). @defaultValue true */
  enabled?: boolean;
}

/** The horizons the replay window may not undercut (a client may still retry, an approver still act). */
export interface ReplayHorizons {
  /** How long an approval request stays open. */
  approvalTtlMs: number;
  /** The longest a host keeps retrying one invocation (attempts × the longest backoff). */
  retryHorizonMs: number;
}

/**
 * Resolves and checks retention options; `where` prefixes every error (`createHost: retention.`).
 * Refuses a replay window shorter than the retry or approval horizon, or longer than `invocationsMs`.
 */
export function resolveRetention(o: RetentionOptions | undefined, horizons: ReplayHorizons, where: string): RetentionSettings {
  if (o !== undefined && (typeof o !== "object" || o === null)) throw new WritError("INVALID_OPTION", `${where}retention must be an object`);
  const v = o ?? {};
  const known = new Set(["invocationsMs", "replayWindowMs", "completionsMs", "deliveriesMs", "batchSize", "pauseMs", "everyMs", "enabled"]);
  for (const k of Object.keys(v)) if (!known.has(k)) throw new WritError("INVALID_OPTION", `${where}retention.${k} is not an option (known: ${[...known].join(", ")})`);
  const ms = (name: keyof RetentionOptions, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const x = v[name];
    if (x === undefined) return dflt;
    if (typeof x !== "number" || !Number.isSafeInteger(x) || x < min || x > max) {
      throw new WritError("INVALID_OPTION", `${where}retention.${name} must be a whole number from ${min} to ${max} (got ${JSON.stringify(x)})`);
    }
    return x;
  };
  const invocationsMs = ms("invocationsMs", RETENTION_DEFAULTS.invocationsMs, 1);
  const replayWindowMs = ms("replayWindowMs", invocationsMs, 1);
  if (replayWindowMs > invocationsMs) {
    throw new WritError("INVALID_OPTION", `${where}retention.replayWindowMs (${replayWindowMs}) is longer than retention.invocationsMs (${invocationsMs}): an idempotency key lives with its invocation`);
  }
  const floor = Math.max(horizons.approvalTtlMs, horizons.retryHorizonMs);
  if (replayWindowMs < floor) {
    const which = horizons.approvalTtlMs >= horizons.retryHorizonMs ? `the approval horizon (approvalTtlMs ${horizons.approvalTtlMs})` : `the retry horizon (retry.maxAttempts × retry.maxDelayMs = ${horizons.retryHorizonMs})`;
    throw new WritError(
      "INVALID_OPTION",
      `${where}retention.${v.replayWindowMs === undefined ? "invocationsMs (the replay window by default)" : "replayWindowMs"} (${replayWindowMs}) is shorter than ${which}: a client retrying within it would start the action twice`,
    );
  }
  const enabled = v.enabled ?? RETENTION_DEFAULTS.enabled;
  if (typeof enabled !== "boolean") throw new WritError("INVALID_OPTION", `${where}retention.enabled must be true or false`);
  return {
    invocationsMs,
    replayWindowMs,
    completionsMs: ms("completionsMs", RETENTION_DEFAULTS.completionsMs, 1),
    deliveriesMs: ms("deliveriesMs", RETENTION_DEFAULTS.deliveriesMs, 1),
    batchSize: ms("batchSize", RETENTION_DEFAULTS.batchSize, 1, 10_000),
    pauseMs: ms("pauseMs", RETENTION_DEFAULTS.pauseMs, 0, 2_147_483_647),
    everyMs: ms("everyMs", RETENTION_DEFAULTS.everyMs, 1, 2_147_483_647),
    enabled,
  };
}

/** An ended invocation is kept until this long after it ended: the longer of retention and the replay window. */
export function endedCutoff(s: RetentionSettings, now: number): number {
  return now - Math.max(s.invocationsMs, s.replayWindowMs);
}

/** Why `inv` must stay (it is ended and old enough), or null when it may go. Reads only. */
async function holdOf(tx: StoreTx, scope: Scope, inv: Invocation, unarchived: Set<string>): Promise<HoldReason | null> {
  if (unarchived.has(inv.invocationId)) return "not_archived";
  if ((await tx.listReconciliations(scope, { invocationId: inv.invocationId, status: "open", limit: 1 })).length > 0) return "open_reconciliation";
  if (inv.approvalId !== undefined && (await tx.getApproval(scope, inv.approvalId))?.status === "pending") return "pending_approval";
  return null;
}

function emptyCounts(): Record<PrunedKind, number> {
  const out = { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 } as Record<PrunedKind, number>;
  for (const k of AGED_RECORD_KINDS) out[k] = 0;
  return out;
}

/** One batch's outcome. */
interface Batch {
  seen: number;
  last: EndedCursor | undefined;
  pruned: Partial<PrunedInvocationRows>[];
  held: Array<{ inv: Invocation; reason: HoldReason }>;
}

/** One batch in one transaction: candidates, holds, and (unless `dryRun`) the deletes. */
async function invocationBatch(tx: StoreTx, endedBefore: number, limit: number, after: EndedCursor | undefined, dryRun: boolean): Promise<Batch> {
  const ended = await tx.listEndedInvocations({ endedBefore, limit, ...(after ? { after } : {}) });
  const out: Batch = { seen: ended.length, last: undefined, pruned: [], held: [] };
  const byScope = new Map<string, { scope: Scope; invs: Invocation[] }>();
  for (const inv of ended) {
    const k = JSON.stringify([inv.tenantId, inv.spaceId]);
    let g = byScope.get(k);
    if (!g) byScope.set(k, (g = { scope: { tenantId: inv.tenantId, spaceId: inv.spaceId }, invs: [] }));
    g.invs.push(inv);
  }
  for (const { scope, invs } of byScope.values()) {
    const through = await tx.journalArchivedThrough(scope);
    // Nothing archived: every invocation's admission entry lies above the watermark, so all are
    // held without reading the scope's whole journal (a deployment without an archiver).
    const ids = invs.map((i) => i.invocationId);
    const unarchived = through === 0 ? new Set(ids) : await tx.journalNamesAbove(scope, through, ids);
    for (const inv of invs) {
      const reason = await holdOf(tx, scope, inv, unarchived);
      if (reason !== null) out.held.push({ inv, reason });
      else out.pruned.push(dryRun ? { invocations: 1 } : await tx.deleteInvocation(scope, inv.invocationId));
    }
  }
  const last = ended[ended.length - 1];
  if (last) out.last = { updatedAt: last.updatedAt, tenantId: last.tenantId, spaceId: last.spaceId, invocationId: last.invocationId };
  return out;
}

/** Options of one pruner run. */
export interface PruneRunOptions {
  now: number;
  dryRun?: boolean;
  /** Stop after this many batches (a later run goes on). @defaultValue no bound */
  maxBatches?: number;
  /** Waits `ms` between batches (the pace); a clock's sleep. */
  pause?: (ms: number) => Promise<void>;
  /** Asked before each batch: true stops the run (a worker stopping). */
  stopped?: () => boolean;
  /** Called after each committed batch with the rows it deleted (metrics). */
  onBatch?: (pruned: Partial<Record<PrunedKind, number>>) => void;
}

/**
 * Runs the pruner once over every scope: ended invocations first, then the age-only records, each
 * in batches of `settings.batchSize`, one short transaction each, pausing `pauseMs` between them.
 * With `dryRun` nothing is deleted and the report says what a run would prune and hold.
 */
export async function runRetention(store: Store, settings: RetentionSettings, opts: PruneRunOptions): Promise<RetentionReport> {
  const dryRun = opts.dryRun === true;
  const report: RetentionReport = { now: opts.now, dryRun, pruned: emptyCounts(), held: { not_archived: 0, open_reconciliation: 0, pending_approval: 0 }, oldestEndedAt: null, heldSample: [], batches: 0, complete: true };
  const budgetLeft = (): boolean => {
    if (opts.stopped?.() === true || (opts.maxBatches !== undefined && report.batches >= opts.maxBatches)) {
      report.complete = false;
      return false;
    }
    return true;
  };
  // A pause follows a batch that found work (more may follow), never an empty one.
  let busy = false;
  const paced = async (): Promise<void> => {
    if (busy && settings.pauseMs > 0 && opts.pause) await opts.pause(settings.pauseMs);
  };
  const endedBefore = endedCutoff(settings, opts.now);
  let after: EndedCursor | undefined;
  for (;;) {
    if (endedBefore <= 0 || !budgetLeft()) break;
    await paced();
    if (!budgetLeft()) break;
    const cursor = after;
    const batch = dryRun
      ? await readCommitted(store, (tx) => invocationBatch(tx, endedBefore, settings.batchSize, cursor, true))
      : await store.transact((tx) => invocationBatch(tx, endedBefore, settings.batchSize, cursor, false));
    report.batches += 1;
    busy = batch.seen > 0;
    const sums: Partial<Record<PrunedKind, number>> = {};
    for (const p of batch.pruned) {
      for (const [k, n] of Object.entries(p) as Array<[PrunedKind, number]>) {
        report.pruned[k] += n;
        sums[k] = (sums[k] ?? 0) + n;
      }
    }
    for (const h of batch.held) {
      report.held[h.reason] += 1;
      if (report.heldSample.length < 20) report.heldSample.push({ tenantId: h.inv.tenantId, spaceId: h.inv.spaceId, invocationId: h.inv.invocationId, endedAt: h.inv.updatedAt, reason: h.reason });
    }
    if (!dryRun) opts.onBatch?.(sums);
    if (batch.last === undefined || batch.seen < settings.batchSize) break;
    after = batch.last;
  }
  const aged: Array<[AgedRecordKind, number]> = [
    ["notify_deliveries", opts.now - settings.deliveriesMs],
    ["webhook_deliveries", opts.now - settings.deliveriesMs],
    ["expired_completions", opts.now - settings.completionsMs],
  ];
  for (const [kind, before] of aged) {
    if (before <= 0) continue;
    if (dryRun) {
      report.pruned[kind] = await readCommitted(store, (tx) => tx.countAgedRecords(kind, before));
      continue;
    }
    for (;;) {
      if (!budgetLeft()) break;
      await paced();
      if (!budgetLeft()) break;
      const n = await store.transact((tx) => tx.deleteAgedRecords(kind, before, settings.batchSize));
      report.batches += 1;
      busy = n > 0;
      report.pruned[kind] += n;
      if (n > 0) opts.onBatch?.({ [kind]: n });
      if (n < settings.batchSize) break;
    }
  }
  const [oldest] = await readCommitted(store, (tx) => tx.listEndedInvocations({ endedBefore: Number.MAX_SAFE_INTEGER, limit: 1 }));
  report.oldestEndedAt = oldest?.updatedAt ?? null;
  return report;
}
