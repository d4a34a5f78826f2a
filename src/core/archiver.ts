/**
 * The journal archiver (docs/archives.md). For one scope: the sealed entries after the archive
 * watermark, through a signed checkpoint, form a segment; it is verified, written to the archive
 * target (atomically), read back and compared, and only then does the watermark move. Then the
 * database drops the archived entries in small batches, each its own short transaction, never the
 * sealed head and never what a notification subscription's cursor has not passed.
 *
 * Crash safety: a process killed after writing a segment and before moving the watermark leaves a
 * segment that starts right after the watermark; the next run adopts it once it matches the
 * database entry for entry. Killed mid-prune, it leaves a journal whose first live entries are
 * simply fewer; the next run prunes on.
 */
import { checkpointKeys, decodeSegment, encodeSegmentBytes, parseSegmentName, scopePrefix, segmentName, SEGMENT_FORMAT, type ArchiveTarget, type SegmentHeader } from "./archive-format.js";
import { WritError } from "./errors.js";
import { verifyJournal, writeCheckpoint } from "./journal.js";
import type { Keyring, SigningKey } from "./keyring.js";
import type { Clock, CryptoPort } from "./ports.js";
import { readCommitted, type Store } from "./store.js";
import type { JournalCheckpoint, JournalEntry, Scope } from "./types.js";

/** Most entries a segment holds unless one checkpoint lies further (docs/archives.md). */
export const DEFAULT_SEGMENT_ENTRIES = 10_000;
/** Entries one prune transaction deletes. */
export const DEFAULT_PRUNE_BATCH = 500;

export interface ArchiverOptions {
  target: ArchiveTarget;
  crypto: CryptoPort;
  /** The keys that verify the checkpoints (a segment carries the public half of each). */
  keyring: Keyring;
  /**
   * With a key (and `clock`), a run first signs a checkpoint of the sealed head when entries wait
   * past the last one, so everything sealed closes a segment. Without, only what lies below an
   * existing checkpoint is archived.
   */
  signingKey?: SigningKey;
  clock?: Clock;
  /** @defaultValue 10000 */
  segmentEntries?: number;
  /** Entries per prune transaction. @defaultValue 500 */
  pruneBatch?: number;
  /** Drop archived entries from the database. @defaultValue true */
  prune?: boolean;
  /**
   * Keep archived entries younger than this in the database (their `at` within `keepLiveMs` of
   * `clock.now()`): timelines and charts read them there. Needs `clock`. @defaultValue 0 (prune all archived)
   */
  keepLiveMs?: number;
  /**
   * Awaited between slices of the CPU-bound work on a segment (verifying, encoding and comparing it,
   * `SLICE_ENTRIES` entries at a time), so a host archiving beside its claim loop keeps serving in
   * between: the host passes a yield to its event loop. Without it the work runs in one go.
   */
  breathe?: () => Promise<void>;
  /** Asked before each segment and each prune batch: true ends the run there (a worker stopping); what is done stays done. */
  stopped?: () => boolean;
  /** Test hooks (kill points): after a segment is written, after the watermark moved, after a prune batch. */
  hooks?: { afterPut?(name: string): void | Promise<void>; afterWatermark?(seq: number): void | Promise<void>; afterPruneBatch?(deleted: number): void | Promise<void> };
}

export interface ArchivedSegmentReport {
  name: string;
  fromSeq: number;
  throughSeq: number;
  entries: number;
  bytes: number;
  /** Written by an earlier run that stopped before moving the watermark, and taken as is. */
  adopted: boolean;
}

/** What one run did for one scope. */
export interface ArchiveRun {
  scope: Scope;
  segments: ArchivedSegmentReport[];
  /** The watermark after the run. */
  archivedThrough: number;
  /** The sealed head. */
  headSeq: number;
  /** Entries the database dropped. */
  pruned: number;
  /** The first entry still in the database (null: none). */
  firstLiveSeq: number | null;
  /** What kept archived entries in the database: a subscription's cursor, the sealed head, or nothing. */
  heldBy: "notifications" | "head" | null;
}

function positive(name: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isSafeInteger(v) || v < 1) throw new WritError("INVALID_OPTION", `archiver: ${name} must be a positive integer`);
  return v;
}

/** Entries verified or encoded between two breaths (a few milliseconds of work). */
export const SLICE_ENTRIES = 500;
/** Bytes compared between two breaths. */
const SLICE_BYTES = 1 << 20;

async function sameBytes(a: Uint8Array, b: Uint8Array, breathe?: () => Promise<void>): Promise<boolean> {
  if (a.length !== b.length) return false;
  for (let from = 0; from < a.length; from += SLICE_BYTES) {
    if (from > 0) await breathe?.();
    const to = Math.min(a.length, from + SLICE_BYTES);
    for (let i = from; i < to; i++) if (a[i] !== b[i]) return false;
  }
  return true;
}

/**
 * `verifyJournal` over a segment's entries, a slice at a time: each slice starts from the hash of
 * the entry before it and is judged against the checkpoints that fall in it (the first slice also
 * against one at the entry before the segment), which is the whole range's verdict cut in parts.
 * Returns the first problem found, or null.
 */
async function verifySegment(opts: ArchiverOptions, sc: Scope, entries: readonly JournalEntry[], cps: readonly JournalCheckpoint[], fromSeq: number, prevHash: string | null): Promise<string | null> {
  let prev = prevHash;
  let first = fromSeq;
  for (let i = 0; i < entries.length; i += SLICE_ENTRIES) {
    if (i > 0) await opts.breathe?.();
    const slice = entries.slice(i, i + SLICE_ENTRIES);
    const last = slice[slice.length - 1]!.seq;
    const mine = cps.filter((cp) => cp.seq <= last && (cp.seq >= first || (i === 0 && cp.seq === fromSeq - 1)));
    const v = verifyJournal(opts.crypto, opts.keyring, sc, slice, mine, { seq: first, prevHash: prev });
    if (!v.ok) {
      const p = v.problems[0]!;
      return `${p.kind}: ${p.message}`;
    }
    prev = slice[slice.length - 1]!.hash;
    first = last + 1;
  }
  return null;
}

async function readRange(store: Store, scope: Scope, fromSeq: number, throughSeq: number): Promise<JournalEntry[]> {
  const out: JournalEntry[] = [];
  let from = fromSeq;
  while (from <= throughSeq) {
    const page = await readCommitted(store, (tx) => tx.readJournal(scope, { fromSeq: from, limit: Math.min(1000, throughSeq - from + 1) }));
    if (page.length === 0) break;
    out.push(...page);
    from = page[page.length - 1]!.seq + 1;
  }
  return out;
}

/**
 * Archives what is closed in `scope` (segment after segment up to the last signed checkpoint), then
 * prunes what is archived. Throws, archiving nothing more, when the database's chain does not
 * verify over a segment's range or a segment found in the target differs from the database.
 */
export async function archiveScope(store: Store, scope: Scope, opts: ArchiverOptions): Promise<ArchiveRun> {
  const segmentEntries = positive("segmentEntries", opts.segmentEntries, DEFAULT_SEGMENT_ENTRIES);
  const pruneBatch = positive("pruneBatch", opts.pruneBatch, DEFAULT_PRUNE_BATCH);
  const sc: Scope = { tenantId: scope.tenantId, spaceId: scope.spaceId };
  const where = `${sc.tenantId}/${sc.spaceId}`;
  if (opts.signingKey !== undefined) {
    if (opts.clock === undefined) throw new WritError("INVALID_OPTION", "archiver: signingKey needs a clock");
    const key = opts.signingKey;
    const clock = opts.clock;
    await store.transact(async (tx) => {
      const head = await tx.journalHead(sc);
      if (head === null || head.seq <= (await tx.journalArchivedThrough(sc))) return;
      const cps = await tx.listCheckpoints(sc);
      if (!cps.some((cp) => cp.seq === head.seq)) await writeCheckpoint(tx, opts.crypto, sc, key, clock.now());
    });
  }
  // Segments already in the target, by first seq (one that starts right after the watermark was
  // written by a run that stopped before moving it).
  const existing = new Map<number, { name: string; throughSeq: number }>();
  for (const name of await opts.target.list(scopePrefix(sc))) {
    const r = parseSegmentName(name);
    // Of segments from one seq (archivers that raced), the longest is taken.
    if (r !== null && r.throughSeq > (existing.get(r.fromSeq)?.throughSeq ?? 0)) existing.set(r.fromSeq, { name, throughSeq: r.throughSeq });
  }
  const segments: ArchivedSegmentReport[] = [];
  // The hash of the last archived entry: the next segment's first entry links to it.
  let lastHash: string | null | undefined;
  for (;;) {
    if (opts.stopped?.() === true) break;
    const [watermark, checkpoints] = await readCommitted(store, async (tx) => [await tx.journalArchivedThrough(sc), await tx.listCheckpoints(sc)] as const);
    const ahead = checkpoints.filter((cp) => cp.seq > watermark);
    if (ahead.length === 0) break;
    const within = ahead.filter((cp) => cp.seq <= watermark + segmentEntries);
    const found = existing.get(watermark + 1);
    const through = found?.throughSeq ?? (within.length > 0 ? Math.max(...within.map((cp) => cp.seq)) : Math.min(...ahead.map((cp) => cp.seq)));
    const entries = await readRange(store, sc, watermark + 1, through);
    if (entries.length === 0 || entries[0]!.seq !== watermark + 1 || entries[entries.length - 1]!.seq !== through) {
      throw new WritError("CONFLICT", `the journal of ${where} does not hold seqs ${watermark + 1}..${through} to archive`);
    }
    if (lastHash === undefined) lastHash = watermark === 0 ? null : await hashAt(store, opts.target, sc, watermark, existing);
    const cps = checkpoints.filter((cp) => cp.seq >= watermark && cp.seq <= through);
    const problem = await verifySegment(opts, sc, entries, cps, watermark + 1, lastHash);
    if (problem !== null) throw new WritError("CONFLICT", `the journal of ${where} does not verify over seqs ${watermark + 1}..${through} (${problem}); nothing was archived`);
    const keys = checkpointKeys(cps, opts.keyring);
    const header: SegmentHeader = {
      format: SEGMENT_FORMAT,
      kind: "segment",
      tenantId: sc.tenantId,
      spaceId: sc.spaceId,
      fromSeq: watermark + 1,
      throughSeq: through,
      prevHash: lastHash,
      headHash: entries[entries.length - 1]!.hash,
      entries: entries.length,
      checkpoints: cps,
      keys,
    };
    const data = await encodeSegmentBytes(header, entries, SLICE_ENTRIES, opts.breathe);
    const name = found?.name ?? segmentName(sc, watermark + 1, through);
    let adopted = false;
    let bytes = data.length;
    if (found !== undefined) {
      // Left by a run that stopped before moving the watermark: take it only if it holds exactly these entries.
      const back = await opts.target.get(found.name);
      const seg = back === null ? null : decodeSegment(back, found.name);
      if (seg === null || seg.entries.length !== entries.length || seg.entries.some((e, i) => e.hash !== entries[i]!.hash || e.seq !== entries[i]!.seq)) {
        throw new WritError("CONFLICT", `archive segment ${found.name} differs from the journal of ${where}: move it aside and run again`);
      }
      adopted = true;
      bytes = back!.length;
    } else {
      await opts.target.put(name, data);
      await opts.hooks?.afterPut?.(name);
      const back = await opts.target.get(name);
      // Byte for byte what was encoded (and what was encoded decodes: tests/journal hold the format to that).
      if (back === null || !(await sameBytes(back, data, opts.breathe))) throw new WritError("STORE_ERROR", `archive segment ${name} did not read back as written; the watermark stays at ${watermark}`);
    }
    await store.transact((tx) => tx.setJournalArchivedThrough(sc, through));
    await opts.hooks?.afterWatermark?.(through);
    existing.delete(watermark + 1);
    segments.push({ name, fromSeq: watermark + 1, throughSeq: through, entries: entries.length, bytes, adopted });
    lastHash = header.headHash;
  }
  const hooks = opts.hooks;
  const afterBatch = hooks?.afterPruneBatch === undefined ? undefined : (n: number) => hooks.afterPruneBatch!(n);
  const keep = opts.keepLiveMs ?? 0;
  if (!Number.isSafeInteger(keep) || keep < 0) throw new WritError("INVALID_OPTION", "archiver: keepLiveMs must be a non-negative integer");
  if (keep > 0 && opts.clock === undefined) throw new WritError("INVALID_OPTION", "archiver: keepLiveMs needs a clock");
  const before = keep > 0 ? opts.clock!.now() - keep : undefined;
  return { ...(await pruneArchived(store, sc, opts.prune === false ? 0 : pruneBatch, afterBatch, before, opts.stopped)), segments };
}

/** The hash of entry `seq`: from the database while it holds it, else from the segment ending there. */
async function hashAt(store: Store, target: ArchiveTarget, scope: Scope, seq: number, existing: ReadonlyMap<number, { name: string; throughSeq: number }>): Promise<string> {
  const [e] = await readCommitted(store, (tx) => tx.readJournal(scope, { fromSeq: seq, limit: 1 }));
  if (e !== undefined && e.seq === seq) return e.hash;
  for (const s of existing.values()) {
    if (s.throughSeq !== seq) continue;
    const data = await target.get(s.name);
    if (data !== null) {
      const h = decodeSegment(data, s.name).header.headHash;
      if (h !== null) return h;
    }
  }
  throw new WritError("CONFLICT", `entry ${seq} of ${scope.tenantId}/${scope.spaceId} is neither in the database nor at the end of an archive segment: the chain cannot be continued`);
}

/**
 * Drops archived entries of `scope` from the database, `batch` per transaction (0: none), up to
 * the lowest of the watermark, the entry before the sealed head and the lowest cursor of the
 * tenant's enabled notification subscriptions in this space.
 */
export async function pruneArchived(store: Store, scope: Scope, batch: number, afterBatch?: (deleted: number) => void | Promise<void>, before?: number, stopped?: () => boolean): Promise<Omit<ArchiveRun, "segments">> {
  const { watermark, head, cursor } = await readCommitted(store, async (tx) => {
    let low = Infinity;
    for (const sub of await tx.listSubscriptions(scope.tenantId)) {
      if (!sub.enabled) continue;
      low = Math.min(low, (await tx.notifyCursors(sub.subscriptionId)).get(scope.spaceId) ?? 0);
    }
    return { watermark: await tx.journalArchivedThrough(scope), head: (await tx.journalHead(scope))?.seq ?? 0, cursor: low };
  });
  const through = Math.min(watermark, head - 1, cursor);
  const heldBy = through >= watermark ? null : cursor < Math.min(watermark, head - 1) ? "notifications" : "head";
  let pruned = 0;
  if (batch > 0 && through > 0) {
    while (stopped?.() !== true) {
      // With `before`, only the leading entries written before it (the store applies it in its delete).
      const n = await store.transact((tx) => tx.pruneJournal(scope, through, batch, before));
      pruned += n;
      if (n > 0) await afterBatch?.(n);
      if (n < batch) break;
    }
  }
  const [first] = await readCommitted(store, (tx) => tx.readJournal(scope, { limit: 1 }));
  return { scope, archivedThrough: watermark, headSeq: head, pruned, firstLiveSeq: first?.seq ?? null, heldBy };
}
