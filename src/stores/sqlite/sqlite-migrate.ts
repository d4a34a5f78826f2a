/**
 * Applies the numbered migrations of `sqlite-migrations.ts`, clash-tolerant across processes.
 */
import type Database from "better-sqlite3";
import { WritError } from "../../core/errors.js";
import { SQLITE_MIGRATIONS, type SqliteMigration } from "./sqlite-migrations.js";

const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS writ_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at INTEGER NOT NULL
)`;

/**
 * Brings the schema to the newest version in one `BEGIN IMMEDIATE` transaction. The write lock is
 * taken before the applied version is read, so when several processes migrate at once the first
 * applies everything and the others, waiting on the lock (busy timeout), find nothing to do.
 * Idempotent. Refuses (`INVALID_STATE`) a database whose schema is newer than this build or
 * whose applied migrations differ from this build's. Returns the schema version.
 * Must run while no other transaction is open on `db`.
 */
export function migrateSqlite(db: Database.Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number {
  db.exec("BEGIN IMMEDIATE");
  try {
    db.exec(CREATE_MIGRATIONS_TABLE);
    const applied = db.prepare("SELECT version, name FROM writ_migrations ORDER BY version").all() as { version: number; name: string }[];
    for (const row of applied) {
      const known = migrations.find((m) => m.version === row.version);
      if (known === undefined) {
        throw new WritError("INVALID_STATE", `database schema has migration ${row.version} (${row.name}), unknown to this build (newest ${migrations.length})`);
      }
      if (known.name !== row.name) {
        throw new WritError("INVALID_STATE", `database migration ${row.version} is "${row.name}", this build's is "${known.name}"`);
      }
    }
    const current = applied.length === 0 ? 0 : Math.max(...applied.map((r) => r.version));
    const record = db.prepare("INSERT INTO writ_migrations (version, name, applied_at) VALUES (?, ?, ?)");
    for (const m of migrations) {
      if (m.version <= current) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    }
    db.exec("COMMIT");
    return Math.max(current, ...migrations.map((m) => m.version));
  } catch (e) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw e;
  }
}

/** The applied schema version (0 when none, or when the migrations table is missing). */
export function sqliteSchemaVersion(db: Database.Database): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'writ_migrations'").get();
  if (table === undefined) return 0;
  const v = db.prepare("SELECT MAX(version) FROM writ_migrations").pluck().get() as number | null;
  return v ?? 0;
}
