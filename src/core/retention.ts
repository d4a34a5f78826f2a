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
 * Candidates are read a window at a time (the ended invocations' ids, the journal's hold on them
 * per scope); each batch of them is then one short transaction: one store call that locks and
 * re-checks every member and deletes the others whole, one statement per table. A crash between
 * batches leaves whole invocations either present or gone; a crash inside a batch rolls the batch
 * back. Bare executions' idempotency records (no invocation holds them) go the same way after the
 * replay window.
 */
import { WritError } from "./errors.js";
import { AGED_RECORD_KINDS, readCommitted, type AgedRecordKind, type BareCursor, type EndedCursor, type PrunedInvocationRows, type Store, type StoreTx } from "./store.js";
import type { IdempotencyRecord, Scope } from "./types.js";

/** Why an ended invocation old enough to go is kept. */
export const HOLD_REASONS = ["not_archived", "open_reconciliation", "pending_approval"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** Row kinds a prune removes (an invocation's rows, bare executions' idempotency records, the age-only records). */
export type PrunedKind = keyof PrunedInvocationRows | "bare_idempotency" | AgedRecordKind;

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
  everyMs: 10_000,
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
  /** How often a started worker runs the pruner, in ms. @defaultValue 10000 */
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

function emptyCounts(): Record<PrunedKind, number> {
  const out = { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0, bare_idempotency: 0 } as Record<PrunedKind, number>;
  for (const k of AGED_RECORD_KINDS) out[k] = 0;
  return out;
}

/**
 * Candidates read per window (`batchSize` × this, at most 5000): the journal's hold on a window is
 * read once per scope (its cost is the archive lag), then the window is deleted `batchSize` at a time.
 */
export const WINDOW_BATCHES = 50;

/** A window's candidates of one scope that the journal does not hold. */
interface ScopeGroup<T> {
  scope: Scope;
  free: T[];
  /**
   * The sealed seq through which the journal has been read for this window (the scope's head at
   * the window's read, or its watermark when higher; then what each delete's re-read covered):
   * entries after it (newer sealed ones and unsealed ones) are read again in the next delete's
   * transaction.
   */
  readThrough: number;
  /** Of `free`, those an entry read since the window's read names: held for the rest of the window. */
  namedSince: Set<string>;
}

/** Thrown inside a delete's transaction to roll it back: an entry journaled since names a member it deleted. */
class NamedSince extends Error {
  readonly named: Set<string>;
  readonly through: number;
  constructor(named: Set<string>, through: number) {
    super("an entry journaled since the window's read names a deleted member");
    this.named = named;
    this.through = through;
  }
}

/**
 * Deletes `ids` of a scope group in one short transaction, less those an entry journaled since
 * the window's read names. `del` deletes (locking the members first, where the store locks) and
 * says which ids went; then the journal is read again above `g.readThrough`, after the locks, so a
 * writer that held a member's row (a late completion locks its invocation) has committed what it
 * journaled. An entry naming a deleted member rolls the transaction back and the batch goes again
 * without it; either way the group's `readThrough` moves to what the read covered, so each re-read
 * costs only what was journaled since the previous one, however long the window. Returns the
 * delete's result, or null when nothing was left to delete; `held` gets the ids named.
 */
async function deleteUnnamed<T extends Scope, R>(
  store: Store,
  g: ScopeGroup<T>,
  idOf: (x: T) => string,
  part: T[],
  del: (tx: StoreTx, members: T[]) => Promise<{ gone: string[]; result: R }>,
  held: (x: T) => void,
): Promise<R | null> {
  const window = new Set(g.free.map(idOf));
  const keep = (named: Set<string>): void => {
    for (const i of named) if (window.has(i)) g.namedSince.add(i);
  };
  for (;;) {
    const members = part.filter((x) => !g.namedSince.has(idOf(x)));
    if (members.length === 0) break;
    try {
      const r = await store.transact(async (tx) => {
        const done = await del(tx, members);
        const since = await tx.journalNamedSince(g.scope, g.readThrough);
        if (done.gone.some((i) => since.named.has(i))) throw new NamedSince(since.named, since.through);
        return { result: done.result, since };
      });
      keep(r.since.named);
      g.readThrough = r.since.through;
      for (const x of part) if (g.namedSince.has(idOf(x)) && !members.includes(x)) held(x);
      return r.result;
    } catch (e) {
      if (!(e instanceof NamedSince)) throw e;
      keep(e.named);
      g.readThrough = e.through;
    }
  }
  for (const x of part) held(x);
  return null;
}

/** Most ids a hold memo keeps per scope; past it the scope falls back to asking for each window's ids. */
const MEMO_IDS = 100_000;

/**
 * What earlier reads of the journal found, per scope: every invocation id named by an entry above
 * the archive watermark `through`, read up to `readSeq` (and the entries unsealed at each read).
 * Nothing above the watermark is ever deleted, so an id found there stays named while the watermark
 * stays; each window therefore reads only the entries sealed since the previous read, and the
 * unsealed ones, instead of the whole unarchived journal. Once the watermark moves the scope's
 * memo starts over (one read of what lies above the new watermark). Passed from run to run by the
 * host (a worker's background pruner). `named` is null once it grew past `maxIds`: that scope
 * then asks the store about each window's ids until its watermark moves.
 */
export interface HoldMemo {
  scopes: Map<string, { through: number; readSeq: number; named: Set<string> | null }>;
  /** Most ids kept per scope (`MEMO_IDS`). */
  maxIds: number;
}

export function holdMemo(maxIds = MEMO_IDS): HoldMemo {
  return { scopes: new Map(), maxIds };
}

/**
 * Groups `items` by scope and drops those an unarchived journal entry names (reported to `held`):
 * per scope, one read of the archive watermark and, when something is archived, one read of the
 * journal sealed since the memo's last read of that scope (and of the unsealed entries). A scope
 * with nothing archived holds everything without reading its journal.
 */
async function journalFree<T extends Scope>(tx: StoreTx, items: T[], idOf: (x: T) => string, held: (x: T) => void, memo: HoldMemo): Promise<Array<ScopeGroup<T>>> {
  const byScope = new Map<string, ScopeGroup<T>>();
  for (const x of items) {
    const k = JSON.stringify([x.tenantId, x.spaceId]);
    let g = byScope.get(k);
    if (!g) byScope.set(k, (g = { scope: { tenantId: x.tenantId, spaceId: x.spaceId }, free: [], readThrough: 0, namedSince: new Set() }));
    g.free.push(x);
  }
  for (const [k, g] of byScope) {
    const through = await tx.journalArchivedThrough(g.scope);
    const ids = [...new Set(g.free.map(idOf))];
    let found: Set<string>;
    if (through === 0) {
      found = new Set(ids);
      g.readThrough = (await tx.journalHead(g.scope))?.seq ?? 0;
    } else {
      let known = memo.scopes.get(k);
      if (known === undefined || known.through !== through) memo.scopes.set(k, (known = { through, readSeq: through, named: new Set() }));
      if (known.named !== null) {
        // One statement: the ids named above readSeq and unsealed, and the highest seq it read.
        const since = await tx.journalNamedSince(g.scope, known.readSeq);
        const named = known.named;
        for (const i of since.named) named.add(i);
        known.readSeq = since.through;
        found = new Set(ids.filter((i) => named.has(i)));
        g.readThrough = known.readSeq;
        // Complete for this window; past the bound, later windows ask for their own ids.
        if (named.size > memo.maxIds) known.named = null;
      } else {
        // The head first: an entry sealed between the two reads is read again by the delete.
        g.readThrough = Math.max(through, (await tx.journalHead(g.scope))?.seq ?? 0);
        found = await tx.journalNamesAbove(g.scope, through, ids);
      }
    }
    const all = g.free;
    g.free = [];
    for (const x of all) {
      if (found.has(idOf(x))) held(x);
      else g.free.push(x);
    }
  }
  return [...byScope.values()];
}

function chunks<T>(xs: T[], n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
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
  /** Holds found by earlier runs (`holdMemo()`): a caller that runs the pruner repeatedly passes the same one. @defaultValue a fresh one */
  memo?: HoldMemo;
}

/**
 * Runs the pruner once over every scope: ended invocations first, then bare executions'
 * idempotency records, then the age-only records, each in batches of `settings.batchSize`, one
 * short transaction each, pausing `pauseMs` after a batch that found work. Candidates are read a
 * window (`WINDOW_BATCHES` batches) at a time, with the journal's hold on them read once per scope
 * and window. With `dryRun` nothing is deleted and the report says what a run would prune and hold.
 */
export async function runRetention(store: Store, settings: RetentionSettings, opts: PruneRunOptions): Promise<RetentionReport> {
  const dryRun = opts.dryRun === true;
  const memo = opts.memo ?? holdMemo();
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
  const paced = async (): Promise<boolean> => {
    if (!budgetLeft()) return false;
    if (busy && settings.pauseMs > 0 && opts.pause) await opts.pause(settings.pauseMs);
    return budgetLeft();
  };
  const hold = (inv: EndedCursor, reason: HoldReason): void => {
    report.held[reason] += 1;
    if (report.heldSample.length < 20) report.heldSample.push({ tenantId: inv.tenantId, spaceId: inv.spaceId, invocationId: inv.invocationId, endedAt: inv.updatedAt, reason });
  };
  const counted = (rows: Partial<Record<PrunedKind, number>>): void => {
    const sums: Partial<Record<PrunedKind, number>> = {};
    for (const [k, n] of Object.entries(rows) as Array<[PrunedKind, number]>) {
      if (n === 0) continue;
      report.pruned[k] += n;
      sums[k] = n;
    }
    if (!dryRun) opts.onBatch?.(sums);
  };
  // Bounded: a window is read in one statement, its ids sent in one list.
  const window = Math.max(settings.batchSize, Math.min(settings.batchSize * WINDOW_BATCHES, 5_000));

  // Ended invocations.
  const endedBefore = endedCutoff(settings, opts.now);
  let after: EndedCursor | undefined;
  let more = endedBefore > 0;
  // Windows are paced like batches: a backlog that is all held (nothing archived yet) is read at
  // the pruner's pace, not back to back.
  let windows = 0;
  while (more && (windows++ === 0 ? budgetLeft() : await paced())) {
    const cursor = after;
    const { ended, groups } = await readCommitted(store, async (tx) => {
      const found = await tx.listEndedInvocations({ endedBefore, limit: window, ...(cursor ? { after: cursor } : {}) });
      return { ended: found, groups: await journalFree(tx, found, (i) => i.invocationId, (i) => hold(i, "not_archived"), memo) };
    });
    const last = ended[ended.length - 1];
    more = ended.length === window && last !== undefined;
    if (last) after = { updatedAt: last.updatedAt, tenantId: last.tenantId, spaceId: last.spaceId, invocationId: last.invocationId };
    busy = ended.length > 0 || busy;
    for (const g of groups) {
      for (const part of chunks(g.free, settings.batchSize)) {
        if (!(await paced())) break;
        const byId = new Map(part.map((i) => [i.invocationId, i]));
        const ids = [...byId.keys()];
        report.batches += 1;
        busy = true;
        if (dryRun) {
          const holds = await readCommitted(store, (tx) => tx.invocationHolds(g.scope, ids));
          for (const [id, reason] of holds) hold(byId.get(id)!, reason);
          report.pruned.invocations += ids.length - holds.size;
          continue;
        }
        // The window's journal read is older than this batch: an entry written since (a late
        // completion's evidence names an ended invocation) holds its invocation too.
        const deleted = await deleteUnnamed(
          store,
          g,
          (i) => i.invocationId,
          part,
          async (tx, members) => {
            const d = await tx.deleteEndedInvocations(g.scope, members.map((i) => i.invocationId));
            return { gone: d.deleted, result: d };
          },
          (i) => hold(i, "not_archived"),
        );
        if (deleted === null) continue;
        // A member no longer ended is live work again: neither pruned nor held.
        for (const s of deleted.skipped) if (s.reason !== "not_ended") hold(byId.get(s.invocationId)!, s.reason);
        counted(deleted.rows);
      }
    }
  }

  // Bare executions' idempotency records (no invocation holds them), after the replay window.
  const bareBefore = opts.now - settings.replayWindowMs;
  let bareAfter: BareCursor | undefined;
  more = bareBefore > 0;
  while (more && budgetLeft()) {
    const cursor = bareAfter;
    const { next, groups } = await readCommitted(store, async (tx) => {
      const found = await tx.listBareIdempotency({ before: bareBefore, limit: window, ...(cursor ? { after: cursor } : {}) });
      return { next: found.next, groups: await journalFree(tx, found.bare, (r) => r.invocationId, () => undefined, memo) };
    });
    more = next !== undefined;
    bareAfter = next;
    for (const g of groups) {
      for (const part of chunks(g.free, settings.batchSize)) {
        if (!(await paced())) break;
        report.batches += 1;
        busy = true;
        if (dryRun) {
          report.pruned.bare_idempotency += part.length;
          continue;
        }
        // As for invocations: what was journaled since the window's read holds its record (every
        // member of the delete counts as gone: the store's answer is a count).
        const deleted = await deleteUnnamed(
          store,
          g,
          (r) => r.invocationId,
          part,
          async (tx, members: IdempotencyRecord[]) => ({
            gone: members.map((r) => r.invocationId),
            result: await tx.deleteBareExecutions(g.scope, members.map((r) => ({ action: r.action, idempotencyKey: r.idempotencyKey })), bareBefore),
          }),
          () => undefined,
        );
        if (deleted === null) continue;
        const { idempotency, ...rest } = deleted;
        counted({ ...rest, bare_idempotency: idempotency });
      }
    }
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
      if (!(await paced())) break;
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
