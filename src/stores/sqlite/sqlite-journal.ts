/**
 * Journal statements: the sealed head, unsealed entries and their sealing, reads and checkpoints
 * (docs/journal.md).
 */
import type Database from "better-sqlite3";
import { SCOPE, type Prepare } from "./sqlite-sql.js";

/** The journal statements, by name. */
export interface SqliteJournalStatements {
  journalHead: Database.Statement;
  journalIdsPresent: Database.Statement;
  insertJournal: Database.Statement;
  insertUnsealed: Database.Statement;
  listUnsealed: Database.Statement;
  journalSeqOf: Database.Statement;
  sealJournal: Database.Statement;
  unsealedScopes: Database.Statement;
  readJournal: Database.Statement;
  insertCheckpoint: Database.Statement;
  listCheckpoints: Database.Statement;
  archivedThrough: Database.Statement;
  setArchivedThrough: Database.Statement;
  pruneJournal: Database.Statement;
  pruneJournalBefore: Database.Statement;
  journalScopes: Database.Statement;
}

/** Prepares the journal statements; the schema must be migrated first. */
export function prepareJournalStatements(p: Prepare): SqliteJournalStatements {
  return {
    journalHead: p(`SELECT seq, hash FROM journal WHERE ${SCOPE} AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1`),
    journalIdsPresent: p(`SELECT id FROM journal WHERE ${SCOPE} AND id IN (SELECT value FROM json_each(@ids))`).pluck(),
    insertJournal: p("INSERT INTO journal (tenant_id, space_id, seq, id, type, at, hash, doc) VALUES (@t, @s, @seq, @id, @type, @at, @hash, @doc)"),
    insertUnsealed: p(
      "INSERT INTO journal (tenant_id, space_id, seq, id, type, at, hash, doc) VALUES (@t, @s, NULL, @id, @type, @at, NULL, @doc) ON CONFLICT (tenant_id, space_id, id) DO NOTHING",
    ),
    // rowid is the order entries were written in; SQLite transactions are serial, so it is commit order.
    listUnsealed: p(`SELECT doc FROM journal WHERE ${SCOPE} AND seq IS NULL ORDER BY rowid LIMIT @limit`).pluck(),
    journalSeqOf: p(`SELECT seq FROM journal WHERE ${SCOPE} AND id = @id`),
    sealJournal: p(`UPDATE journal SET seq = @seq, hash = @hash, doc = @doc WHERE ${SCOPE} AND id = @id AND seq IS NULL`),
    // The sequencer's cross-scope look-up: which scopes hold unsealed entries.
    unsealedScopes: p("SELECT tenant_id AS tenantId, space_id AS spaceId, MIN(at) AS oldestAt FROM journal WHERE seq IS NULL GROUP BY tenant_id, space_id LIMIT @limit"),
    readJournal: p(`SELECT seq, doc FROM journal WHERE ${SCOPE} AND seq >= @fromSeq ORDER BY seq LIMIT @limit`),
    insertCheckpoint: p("INSERT INTO journal_checkpoints (tenant_id, space_id, seq, head_hash, doc) VALUES (@t, @s, @seq, @headHash, @doc)"),
    listCheckpoints: p(`SELECT doc FROM journal_checkpoints WHERE ${SCOPE} ORDER BY seq, rowid`).pluck(),
    // The lowest live sealed entries at or below @through (docs/archives.md); unsealed ones have no seq.
    pruneJournal: p(`DELETE FROM journal WHERE rowid IN (SELECT rowid FROM journal WHERE ${SCOPE} AND seq IS NOT NULL AND seq <= @through ORDER BY seq LIMIT @limit)`),
    // Of those, the leading ones written before @before (the first written at or after it stays, and all after it).
    pruneJournalBefore: p(
      `DELETE FROM journal WHERE rowid IN (SELECT rowid FROM journal WHERE ${SCOPE} AND seq IS NOT NULL AND seq <= @through AND seq < coalesce(` +
        `(SELECT min(seq) FROM (SELECT seq, at FROM journal WHERE ${SCOPE} AND seq IS NOT NULL AND seq <= @through ORDER BY seq LIMIT @limit) WHERE at >= @before), @through + 1) ` +
        "ORDER BY seq LIMIT @limit)",
    ),
    journalScopes: p(
      `SELECT j.tenant_id AS tenantId, j.space_id AS spaceId, MAX(j.seq) AS headSeq, MIN(j.seq) AS firstSeq,
         (SELECT f.at FROM journal f WHERE f.tenant_id = j.tenant_id AND f.space_id = j.space_id AND f.seq IS NOT NULL ORDER BY f.seq LIMIT 1) AS firstAt,
         COALESCE((SELECT a.archived_through FROM journal_archive_state a WHERE a.tenant_id = j.tenant_id AND a.space_id = j.space_id), 0) AS archivedThrough
       FROM journal j WHERE j.seq IS NOT NULL AND (j.tenant_id, j.space_id) > (@t, @s)
       GROUP BY j.tenant_id, j.space_id ORDER BY j.tenant_id, j.space_id LIMIT @limit`,
    ),
    archivedThrough: p(`SELECT archived_through FROM journal_archive_state WHERE ${SCOPE}`).pluck(),
    setArchivedThrough: p(
      "INSERT INTO journal_archive_state (tenant_id, space_id, archived_through) VALUES (@t, @s, @seq) ON CONFLICT (tenant_id, space_id) DO UPDATE SET archived_through = excluded.archived_through",
    ),
  };
}
