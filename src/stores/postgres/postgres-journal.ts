/**
 * Journal and checkpoint statements. The store keeps the chain's shape (seq contiguous from 1 per
 * scope, ids unique per scope); hashes are the core's business.
 */
import { WritError } from "../../core/errors.js";
import { journalRowOf } from "../../core/journal.js";
import type { ListOptions } from "../../core/store.js";
import type { JournalCheckpoint, JournalEntry, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, limitParam, numOrNull, type DocRow } from "./postgres-rows.js";

const HEAD = statement("journal_head", "SELECT seq, hash FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1");
const IDS_PRESENT = statement("journal_ids_present", "SELECT id FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($3::text[])");
/**
 * Appends a batch in one statement, only if it starts right after the head ($8 = first seq) and
 * none of its ids is in the journal yet; otherwise it writes no row (CONFLICT, transaction still
 * usable). A concurrent append of the same seq fails on the primary key instead.
 */
const APPEND = statement(
  "insert_journal",
  `INSERT INTO writ_journal (tenant_id, space_id, seq, id, type, at, hash, doc)
   SELECT $1, $2, e.seq, e.id, e.type, e.at, e.hash, e.doc
     FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[], $9::json[]) AS e(seq, id, type, at, hash, doc)
    WHERE (SELECT coalesce(max(seq), 0) FROM writ_journal WHERE tenant_id = $1 AND space_id = $2) = $8::bigint - 1
      AND NOT EXISTS (SELECT 1 FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($4::text[]))`,
);
/**
 * The head and the ids already present, in one round trip. It runs in its own statement AFTER the
 * lock statement: under READ COMMITTED a statement's snapshot is taken when it starts, so a read
 * in the statement that waited for the lock would miss the appends committed while it waited.
 */
const TAIL = statement(
  "journal_tail",
  `SELECT (SELECT seq FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1) AS seq,
          (SELECT hash FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1) AS hash,
          ARRAY(SELECT id FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND id = ANY($3::text[])) AS present`,
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

export async function journalTail(x: Exec, scope: Scope, ids: string[]): Promise<{ head: { seq: number; hash: string } | null; present: Set<string> }> {
  const [row] = await x.rows<{ seq: string | null; hash: string | null; present: string[] }>(TAIL, [scope.tenantId, scope.spaceId, ids]);
  const head = row && row.seq !== null && row.hash !== null ? { seq: Number(row.seq), hash: row.hash } : null;
  return { head, present: new Set(row?.present ?? []) };
}

export async function journalIdsPresent(x: Exec, scope: Scope, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await x.rows<{ id: string }>(IDS_PRESENT, [scope.tenantId, scope.spaceId, ids]);
  return new Set(rows.map((r) => r.id));
}

/** Appends entries continuing the chain; CONFLICT on a gap, a seq clash or an id clash. */
export async function insertJournal(x: Exec, scope: Scope, entries: JournalEntry[]): Promise<void> {
  const first = entries[0];
  if (first === undefined) return;
  const ids = new Set<string>();
  for (const [i, e] of entries.entries()) {
    if (e.seq !== first.seq + i) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the batch (expected ${first.seq + i})`);
    if (ids.has(e.id)) throw new WritError("CONFLICT", `journal entry id ${e.id} appears twice in the batch`);
    ids.add(e.id);
  }
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
