/**
 * Journal and checkpoint statements. The store keeps the chain's shape (seq contiguous from 1 per
 * scope, ids unique per scope); hashes are the core's business.
 *
 * Storage (migration 11, docs/journal.md "Storage on PostgreSQL"): an entry's document is written
 * once, unsealed, into `writ_journal` and never updated; a trigger queues it in
 * `writ_journal_pending`. Sealing deletes it from there and adds its link (seq, prev_hash, hash) to
 * `writ_journal_chain`. A sealed entry is its document with its link's fields; rows sealed before
 * migration 11 carry those fields in their documents too, and the document's own fields win, so an
 * edit of a document is seen by verification as it always was.
 */
import { WritError } from "../../core/errors.js";
import { journalRowOf } from "../../core/journal.js";
import { checkArchiveMove, checkPrune, type JournalScopeState, type ListOptions } from "../../core/store.js";
import type { JournalCheckpoint, JournalEntry, Scope, UnsealedEntry } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, numOrNull, type DocRow } from "./postgres-rows.js";

export const HEAD = statement("journal_head", "SELECT seq, hash FROM writ_journal_chain WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1");
const IDS_PRESENT = statement("journal_ids_present", "SELECT id FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($3::text[])");
/**
 * Appends a batch of sealed entries in one statement (their documents, sealed, and their links),
 * only if it starts right after the head ($8 = first seq) and none of its ids is in the journal
 * yet; otherwise it writes no row (CONFLICT, transaction still usable). A concurrent append of the
 * same seq fails on the chain's primary key instead.
 */
const APPEND = statement(
  "insert_journal",
  `WITH batch AS (
     SELECT e.* FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[], $9::json[], $10::text[]) AS e(seq, id, type, at, hash, doc, prev_hash)
      WHERE coalesce((SELECT seq FROM writ_journal_chain WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1), 0) = $8::bigint - 1
        AND NOT EXISTS (SELECT 1 FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($4::text[]))
   ), docs AS (
     INSERT INTO writ_journal (tenant_id, space_id, seq, id, type, at, hash, doc)
     SELECT $1, $2, seq, id, type, at, hash, doc FROM batch
   )
   INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
   SELECT $1, $2, seq, id, prev_hash, hash FROM batch`,
);
/**
 * A transition's entries, unsealed, in one statement: no lock, no head read. `pos` is taken in
 * batch order; an id already in the scope (sealed or unsealed, committed or being written by a
 * transaction that then commits) is skipped by ON CONFLICT, so it is never written twice.
 */
const INSERT_UNSEALED = statement(
  "insert_unsealed",
  `INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc)
   SELECT $1, $2, e.id, e.type, e.at, e.doc
     FROM unnest($3::text[], $4::text[], $5::bigint[], $6::json[]) WITH ORDINALITY AS e(id, type, at, doc, n)
    ORDER BY e.n
   ON CONFLICT (tenant_id, space_id, id) DO NOTHING
   RETURNING id`,
);
/**
 * What is unsealed and visible to this statement (committed, or written by this transaction), in
 * the order written. A lower pos can commit after a higher one: it is simply found by a later run.
 */
export const LIST_UNSEALED = statement("list_unsealed", "SELECT doc FROM writ_unsealed($1, $2, $3) ORDER BY pos");
/**
 * Seals a batch in one statement, only if it starts right after the sealed head ($7 = first seq)
 * and every id is unsealed; otherwise it writes no row and the caller gets CONFLICT.
 */
const SEAL = statement(
  "seal_journal",
  `WITH batch AS (
     SELECT u.id, u.seq, u.hash, u.prev_hash FROM unnest($3::text[], $4::bigint[], $5::text[], $6::text[]) AS u(id, seq, hash, prev_hash)
   ), ok AS (
     SELECT coalesce((SELECT seq FROM writ_journal_chain WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1), 0) = $7::bigint - 1
        AND (SELECT count(*) FROM writ_journal_pending p JOIN batch b ON p.id = b.id WHERE p.tenant_id = $1 AND p.space_id = $2) = $8::bigint AS go
   ), unqueued AS (
     DELETE FROM writ_journal_pending p USING batch b, ok
      WHERE ok.go AND p.tenant_id = $1 AND p.space_id = $2 AND p.id = b.id
   )
   INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
   SELECT $1, $2, b.seq, b.id, b.prev_hash, b.hash FROM batch b, ok WHERE ok.go`,
);
/** The sequencer's cross-scope look-up, on the queue of unsealed entries (as small as the backlog). */
const UNSEALED_SCOPES = statement(
  "unsealed_scopes",
  `SELECT tenant_id AS "tenantId", space_id AS "spaceId", oldest_at AS "oldestAt" FROM writ_unsealed_scopes($1)`,
);
/** Sealed entries by seq: each link and its document (NULL if the document's row is gone: reported corrupt). */
const READ = statement(
  "read_journal",
  `SELECT c.seq, c.prev_hash AS "prevHash", c.hash, j.doc FROM writ_journal_chain c
     LEFT JOIN writ_journal j ON j.tenant_id = c.tenant_id AND j.space_id = c.space_id AND j.id = c.id
    WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq >= $3 ORDER BY c.seq LIMIT $4`,
);
const INSERT_CHECKPOINT = statement(
  "insert_checkpoint",
  "INSERT INTO writ_journal_checkpoints (tenant_id, space_id, seq, head_hash, doc) VALUES ($1, $2, $3, $4, $5)",
);
const ARCHIVED_THROUGH = statement("archived_through", "SELECT archived_through FROM writ_journal_archive_state WHERE tenant_id = $1 AND space_id = $2");
// The row is created, then locked: two archivers moving one scope's watermark take turns.
const ARCHIVE_ROW = statement(
  "archive_row",
  "INSERT INTO writ_journal_archive_state (tenant_id, space_id, archived_through) VALUES ($1, $2, 0) ON CONFLICT (tenant_id, space_id) DO NOTHING",
);
const ARCHIVE_LOCK = statement("archive_lock", "SELECT archived_through FROM writ_journal_archive_state WHERE tenant_id = $1 AND space_id = $2 FOR UPDATE");
const SET_ARCHIVED_THROUGH = statement("set_archived_through", "UPDATE writ_journal_archive_state SET archived_through = $3 WHERE tenant_id = $1 AND space_id = $2");
/**
 * Deletes the live sealed entries up to the seq `upto` (a scalar subquery over the lowest $4 at or
 * below $3): their links, one range scan of the chain's primary key instead of a probe per seq,
 * and their documents by id, in one statement (the caller checked the watermark and the head in
 * the same transaction).
 */
// The documents go by their ids as an array (an index probe per id): joined `USING gone`, the
// planner cannot see that `gone` holds one batch and hashes the whole journal table for each batch,
// a cost that grew with the history (77 ms a batch at 300,000 entries, against 3 ms this way).
const pruneThrough = (upto: string): string =>
  `WITH gone AS (
     DELETE FROM writ_journal_chain c WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq <= (${upto}) RETURNING c.id
   ), docs AS (
     DELETE FROM writ_journal j WHERE j.tenant_id = $1 AND j.space_id = $2 AND j.id = ANY (ARRAY(SELECT id FROM gone)) RETURNING 1
   )
   SELECT count(*)::int AS n FROM gone`;
/** The lowest `$4` sealed entries at or below seq `$3` (an index-only scan of the chain). */
export const PRUNE = statement(
  "prune_journal",
  pruneThrough("SELECT max(seq) FROM (SELECT seq FROM writ_journal_chain WHERE tenant_id = $1 AND space_id = $2 AND seq <= $3 ORDER BY seq LIMIT $4) p"),
);
/**
 * Of those, the leading ones written before `$5`: the first written at or after it stays, and all
 * after it. Each entry's time is one probe of its document by id (as a join, the planner hashed the
 * whole journal, or walked the scope's index with the id as a filter, for every batch).
 */
export const PRUNE_BEFORE = statement(
  "prune_journal_before",
  pruneThrough(`SELECT coalesce(min(seq) FILTER (WHERE at >= $5) - 1, max(seq)) FROM (
     SELECT c.seq, (SELECT j.at FROM writ_journal j WHERE j.tenant_id = $1 AND j.space_id = $2 AND j.id = c.id) AS at FROM writ_journal_chain c
      WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq <= $3 ORDER BY c.seq LIMIT $4) p`),
);
/**
 * Scopes with a sealed journal after ($1, $2), at most $3: a skip scan of the chain's primary key
 * (one index probe per scope, not a scan of the entries), then each scope's head, first live entry
 * and archive watermark.
 */
const JOURNAL_SCOPES = statement(
  "journal_scopes",
  `WITH RECURSIVE s AS (
     (SELECT tenant_id, space_id FROM writ_journal_chain WHERE (tenant_id, space_id) > ($1, $2) ORDER BY tenant_id, space_id LIMIT 1)
     UNION ALL
     SELECT n.tenant_id, n.space_id FROM s CROSS JOIN LATERAL (
       SELECT c.tenant_id, c.space_id FROM writ_journal_chain c WHERE (c.tenant_id, c.space_id) > (s.tenant_id, s.space_id) ORDER BY c.tenant_id, c.space_id LIMIT 1
     ) n
   )
   SELECT s.tenant_id AS "tenantId", s.space_id AS "spaceId", h.seq AS "headSeq", f.seq AS "firstSeq", coalesce(j.at, 0) AS "firstAt", coalesce(a.archived_through, 0) AS "archivedThrough"
     FROM (SELECT * FROM s LIMIT $3) s
     CROSS JOIN LATERAL (SELECT seq FROM writ_journal_chain c WHERE c.tenant_id = s.tenant_id AND c.space_id = s.space_id ORDER BY seq DESC LIMIT 1) h
     CROSS JOIN LATERAL (SELECT seq, id FROM writ_journal_chain c WHERE c.tenant_id = s.tenant_id AND c.space_id = s.space_id ORDER BY seq LIMIT 1) f
     LEFT JOIN writ_journal j ON j.tenant_id = s.tenant_id AND j.space_id = s.space_id AND j.id = f.id
     LEFT JOIN writ_journal_archive_state a ON a.tenant_id = s.tenant_id AND a.space_id = s.space_id
    ORDER BY s.tenant_id, s.space_id`,
);
const LIST_CHECKPOINTS = statement("list_checkpoints", "SELECT doc FROM writ_journal_checkpoints WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq, id");

export async function journalHead(x: Exec, scope: Scope): Promise<{ seq: number; hash: string } | null> {
  const [row] = await x.rows<{ seq: string; hash: string }>(HEAD, [scope.tenantId, scope.spaceId]);
  return row === undefined ? null : { seq: Number(row.seq), hash: row.hash };
}

export async function journalIdsPresent(x: Exec, scope: Scope, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await x.rows<{ id: string }>(IDS_PRESENT, [scope.tenantId, scope.spaceId, ids]);
  return new Set(rows.map((r) => r.id));
}

/** The batch's first entry (undefined: nothing to write); CONFLICT when seqs are not consecutive or an id repeats. */
function checkBatch(entries: JournalEntry[]): JournalEntry | undefined {
  const first = entries[0];
  if (first === undefined) return undefined;
  const ids = new Set<string>();
  for (const [i, e] of entries.entries()) {
    if (e.seq !== first.seq + i) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the batch (expected ${first.seq + i})`);
    if (ids.has(e.id)) throw new WritError("CONFLICT", `journal entry id ${e.id} appears twice in the batch`);
    ids.add(e.id);
  }
  return first;
}

/** Appends sealed entries continuing the chain; CONFLICT on a gap, a seq clash or an id clash. */
export async function insertJournal(x: Exec, scope: Scope, entries: JournalEntry[]): Promise<void> {
  const first = checkBatch(entries);
  if (first === undefined) return;
  const n = await x.count(APPEND, [
    scope.tenantId,
    scope.spaceId,
    entries.map((e) => e.seq),
    entries.map((e) => e.id),
    entries.map((e) => e.type),
    entries.map((e) => e.at),
    entries.map((e) => e.hash),
    first.seq,
    entries.map(docOf),
    entries.map((e) => e.prevHash),
  ]);
  if (n !== entries.length) {
    throw new WritError("CONFLICT", `journal append at seq ${first.seq} does not continue the head, or reuses an entry id`);
  }
}

/** Writes entries unsealed, skipping ids already present; returns the ids written. */
export async function insertUnsealed(x: Exec, scope: Scope, entries: UnsealedEntry[]): Promise<string[]> {
  if (entries.length === 0) return [];
  const rows = await x.rows<{ id: string }>(INSERT_UNSEALED, [
    scope.tenantId,
    scope.spaceId,
    entries.map((e) => e.id),
    entries.map((e) => e.type),
    entries.map((e) => e.at),
    entries.map(docOf),
  ]);
  return rows.map((r) => r.id);
}

export async function listUnsealed(x: Exec, scope: Scope, opts: ListOptions = {}): Promise<UnsealedEntry[]> {
  const rows = await x.rows<DocRow<UnsealedEntry>>(LIST_UNSEALED, [scope.tenantId, scope.spaceId, limitParam(opts.limit)]);
  return rows.map((r) => r.doc);
}

/** Seals unsealed entries continuing the sealed head; CONFLICT (nothing written) otherwise. */
export async function sealJournal(x: Exec, scope: Scope, entries: JournalEntry[]): Promise<void> {
  const first = checkBatch(entries);
  if (first === undefined) return;
  const n = await x.count(SEAL, [
    scope.tenantId,
    scope.spaceId,
    entries.map((e) => e.id),
    entries.map((e) => e.seq),
    entries.map((e) => e.hash),
    entries.map((e) => e.prevHash),
    first.seq,
    entries.length,
  ]);
  if (n !== entries.length) throw new WritError("CONFLICT", `journal seal at seq ${first.seq} does not continue the sealed head, or names an entry that is not unsealed`);
}

export async function unsealedScopes(x: Exec, limit: number): Promise<Array<Scope & { oldestAt: number }>> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "unsealedScopes: limit must be a non-negative integer");
  const rows = await x.rows<{ tenantId: string; spaceId: string; oldestAt: string }>(UNSEALED_SCOPES, [limit]);
  return rows.map((r) => ({ tenantId: r.tenantId, spaceId: r.spaceId, oldestAt: Number(r.oldestAt) }));
}

export async function readJournal(x: Exec, scope: Scope, opts: ListOptions & { fromSeq?: number } = {}): Promise<JournalEntry[]> {
  const from = numOrNull(opts.fromSeq) ?? 0;
  if (!Number.isFinite(from)) throw new WritError("INVALID_ARGUMENT", "fromSeq must be a number");
  const rows = await x.rows<SealedRow>(READ, [scope.tenantId, scope.spaceId, Math.ceil(from), limitParam(opts.limit)]);
  // A row whose doc is not an entry is returned as a placeholder naming it (verification reports it).
  return rows.map((r) => sealedEntryOf(scope, r));
}

export async function insertCheckpoint(x: Exec, scope: Scope, cp: JournalCheckpoint): Promise<void> {
  await x.count(INSERT_CHECKPOINT, [scope.tenantId, scope.spaceId, cp.seq, cp.headHash, docOf(cp)]);
}

export async function listCheckpoints(x: Exec, scope: Scope): Promise<JournalCheckpoint[]> {
  return (await x.rows<DocRow<JournalCheckpoint>>(LIST_CHECKPOINTS, [scope.tenantId, scope.spaceId])).map((r) => r.doc);
}

/** A sealed entry as read: its link in the chain and its document. */
export interface SealedRow {
  seq: string | number;
  prevHash: string | null;
  hash: string;
  doc: unknown;
}

/** The fields of a sealed entry, in the order the core writes them. */
const ENTRY_FIELDS = ["tenantId", "spaceId", "seq", "id", "at", "type", "refs", "data", "prevHash", "hash"] as const;

/**
 * The sealed entry of a chain row: its document with the link's `seq`, `prevHash` and `hash` where
 * the document has none (entries sealed since migration 11 are stored unsealed; older ones carry
 * them, and their own values stand, so an edited older document still fails verification). A
 * document that is not an object is returned as the core's placeholder naming what is wrong.
 */
export function sealedEntryOf(scope: Scope, r: SealedRow): JournalEntry {
  const seq = Number(r.seq);
  let doc = r.doc;
  if (typeof doc === "string") {
    try {
      doc = JSON.parse(doc);
    } catch {
      return journalRowOf(scope, seq, r.doc);
    }
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return journalRowOf(scope, seq, doc);
  const d = doc as Record<string, unknown>;
  const link: Record<string, unknown> = { seq, prevHash: r.prevHash, hash: r.hash };
  const out: Record<string, unknown> = {};
  for (const k of ENTRY_FIELDS) {
    if (k in d) out[k] = d[k];
    else if (k in link) out[k] = link[k];
  }
  for (const [k, v] of Object.entries(d)) if (!(k in out)) out[k] = v;
  return journalRowOf(scope, seq, out);
}

export async function journalArchivedThrough(x: Exec, scope: Scope): Promise<number> {
  const [row] = await x.rows<{ archived_through: string }>(ARCHIVED_THROUGH, [scope.tenantId, scope.spaceId]);
  return row === undefined ? 0 : Number(row.archived_through);
}

export async function setJournalArchivedThrough(x: Exec, scope: Scope, seq: number): Promise<void> {
  const sp = [scope.tenantId, scope.spaceId];
  await x.count(ARCHIVE_ROW, sp);
  const [row] = await x.rows<{ archived_through: string }>(ARCHIVE_LOCK, sp);
  const current = Number(row?.archived_through ?? 0);
  checkArchiveMove(current, (await journalHead(x, scope))?.seq ?? 0, seq);
  if (seq !== current) await x.count(SET_ARCHIVED_THROUGH, [...sp, seq]);
}

export async function pruneJournal(x: Exec, scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): Promise<number> {
  checkPrune(await journalArchivedThrough(x, scope), (await journalHead(x, scope))?.seq ?? 0, throughSeq);
  const sp = [scope.tenantId, scope.spaceId, throughSeq, limit];
  const [row] = writtenBefore === undefined ? await x.rows<{ n: number }>(PRUNE, sp) : await x.rows<{ n: number }>(PRUNE_BEFORE, [...sp, writtenBefore]);
  return row?.n ?? 0;
}

export async function journalScopes(x: Exec, limit: number, after?: Scope): Promise<JournalScopeState[]> {
  const rows = await x.rows<{ tenantId: string; spaceId: string; headSeq: string; firstSeq: string; firstAt: string; archivedThrough: string }>(JOURNAL_SCOPES, [after?.tenantId ?? "", after?.spaceId ?? "", limit]);
  return rows.map((r) => ({ tenantId: r.tenantId, spaceId: r.spaceId, headSeq: Number(r.headSeq), firstSeq: Number(r.firstSeq), firstAt: Number(r.firstAt), archivedThrough: Number(r.archivedThrough) }));
}
