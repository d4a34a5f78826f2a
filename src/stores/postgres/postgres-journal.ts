/**
 * Journal and checkpoint statements. The store keeps the chain's shape (seq contiguous from 1 per
 * scope, ids unique per scope); hashes are the core's business.
 */
import { WritError } from "../../core/errors.js";
import { journalRowOf } from "../../core/journal.js";
import type { ListOptions } from "../../core/store.js";
import type { JournalCheckpoint, JournalEntry, Scope, UnsealedEntry } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, numOrNull, type DocRow } from "./postgres-rows.js";

export const HEAD = statement("journal_head", "SELECT seq, hash FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1");
const IDS_PRESENT = statement("journal_ids_present", "SELECT id FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($3::text[])");
/**
 * Appends a batch in one statement, only if it starts right after the head ($8 = first seq) and
 * none of its ids is in the journal yet; otherwise it writes no row (CONFLICT, transaction still
 * usable). A concurrent append of the same seq fails on the unique index of sealed seqs instead.
 */
const APPEND = statement(
  "insert_journal",
  `INSERT INTO writ_journal (tenant_id, space_id, seq, id, type, at, hash, doc)
   SELECT $1, $2, e.seq, e.id, e.type, e.at, e.hash, e.doc
     FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[], $9::json[]) AS e(seq, id, type, at, hash, doc)
    WHERE (SELECT coalesce(max(seq), 0) FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NOT NULL) = $8::bigint - 1
      AND NOT EXISTS (SELECT 1 FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($4::text[]))`,
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
export const LIST_UNSEALED = statement("list_unsealed", "SELECT doc FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NULL ORDER BY pos LIMIT $3");
/**
 * Seals a batch in one statement, only if it starts right after the sealed head ($7 = first seq)
 * and every id is unsealed; otherwise it writes no row and the caller gets CONFLICT.
 */
const SEAL = statement(
  "seal_journal",
  `WITH batch AS (
     SELECT u.id, u.seq, u.hash, u.doc FROM unnest($3::text[], $4::bigint[], $5::text[], $6::json[]) AS u(id, seq, hash, doc)
   ), ok AS (
     SELECT (SELECT coalesce(max(seq), 0) FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NOT NULL) = $7::bigint - 1
        AND (SELECT count(*) FROM writ_journal j JOIN batch b ON j.id = b.id WHERE j.tenant_id = $1 AND j.space_id = $2 AND j.seq IS NULL) = $8::bigint AS go
   )
   UPDATE writ_journal j SET seq = b.seq, hash = b.hash, doc = b.doc
     FROM batch b, ok
    WHERE ok.go AND j.tenant_id = $1 AND j.space_id = $2 AND j.id = b.id AND j.seq IS NULL`,
);
/** The sequencer's cross-scope look-up, on the partial index of unsealed rows. */
const UNSEALED_SCOPES = statement(
  "unsealed_scopes",
  `SELECT tenant_id AS "tenantId", space_id AS "spaceId", min(at) AS "oldestAt" FROM writ_journal WHERE seq IS NULL GROUP BY tenant_id, space_id LIMIT $1`,
);
const READ = statement("read_journal", "SELECT seq, doc FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq >= $3 ORDER BY seq LIMIT $4");
const INSERT_CHECKPOINT = statement(
  "insert_checkpoint",
  "INSERT INTO writ_journal_checkpoints (tenant_id, space_id, seq, head_hash, doc) VALUES ($1, $2, $3, $4, $5)",
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
    entries.map(docOf),
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
  const rows = await x.rows<{ seq: string | number; doc: unknown }>(READ, [scope.tenantId, scope.spaceId, Math.ceil(from), limitParam(opts.limit)]);
  // A row whose doc is not an entry is returned as a placeholder naming it (verification reports it).
  return rows.map((r) => journalRowOf(scope, Number(r.seq), r.doc));
}

export async function insertCheckpoint(x: Exec, scope: Scope, cp: JournalCheckpoint): Promise<void> {
  await x.count(INSERT_CHECKPOINT, [scope.tenantId, scope.spaceId, cp.seq, cp.headHash, docOf(cp)]);
}

export async function listCheckpoints(x: Exec, scope: Scope): Promise<JournalCheckpoint[]> {
  return (await x.rows<DocRow<JournalCheckpoint>>(LIST_CHECKPOINTS, [scope.tenantId, scope.spaceId])).map((r) => r.doc);
}
