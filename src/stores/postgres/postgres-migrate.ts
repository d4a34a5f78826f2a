/**
 * Applies the numbered migrations of `postgres-migrations.ts`, safe when several processes start
 * at once: everything happens under one session-level advisory lock, taken before the
 * `writ_migrations` table is even created, so the first process applies the pending versions
 * while the others wait on the lock and then find nothing to do.
 */
import { createHash } from "node:crypto";
import { WritError } from "../../core/errors.js";
import { NO_DEADLINE_MS } from "./postgres-options.js";
import { ConnectionExec, statement } from "./postgres-exec.js";
import type { PgConnection } from "./postgres-driver.js";
import { POSTGRES_MIGRATIONS, type PostgresMigration } from "./postgres-migrations.js";

/** The advisory lock key migrations hold (first 8 bytes of sha256("writ.migrate")). */
export const MIGRATION_LOCK_KEY: bigint = createHash("sha256").update("writ.migrate").digest().readBigInt64BE(0);

const LOCK = statement("migrate_lock", "SELECT pg_advisory_lock($1::bigint)");
const UNLOCK = statement("migrate_unlock", "SELECT pg_advisory_unlock($1::bigint)");
const CREATE_TABLE =
  "CREATE TABLE IF NOT EXISTS writ_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())";
const APPLIED = statement("migrations_applied", "SELECT version, name FROM writ_migrations ORDER BY version");
const RECORD = statement("migration_record", "INSERT INTO writ_migrations (version, name) VALUES ($1, $2)");
const HAS_TABLE = statement("migrations_table", "SELECT to_regclass('writ_migrations') IS NOT NULL AS present");
const VERSION = statement("schema_version", "SELECT coalesce(max(version), 0) AS version FROM writ_migrations");

/** Refuses a database that holds migrations this build does not know, or knows by another name. */
function checkApplied(applied: { version: number; name: string }[], migrations: readonly PostgresMigration[]): void {
  for (const row of applied) {
    const known = migrations.find((m) => m.version === row.version);
    if (known === undefined) {
      throw new WritError("INVALID_STATE", `database schema has migration ${row.version} (${row.name}), unknown to this build (newest ${migrations.length})`);
    }
    if (known.name !== row.name) throw new WritError("INVALID_STATE", `database migration ${row.version} is "${row.name}", this build's is "${known.name}"`);
  }
}

/**
 * Brings the schema to the newest version, each migration in its own transaction together with
 * its `writ_migrations` row. Idempotent. Returns the schema version. `conn` must be a connection
 * of its own (no transaction open); the lock is released before returning.
 */
export async function migratePostgres(conn: PgConnection, secrets: readonly string[] = [], migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS): Promise<number> {
  // A migration may rewrite a large table: no statement deadline.
  const x = new ConnectionExec(conn, false, secrets, NO_DEADLINE_MS);
  const key = String(MIGRATION_LOCK_KEY);
  await x.count(LOCK, [key]);
  try {
    await x.command(CREATE_TABLE);
    const applied = await x.rows<{ version: number; name: string }>(APPLIED, []);
    checkApplied(applied, migrations);
    const current = applied.reduce((v, r) => Math.max(v, r.version), 0);
    for (const m of migrations) {
      if (m.version <= current) continue;
      await x.command("BEGIN");
      try {
        await x.command(m.sql);
        await x.count(RECORD, [m.version, m.name]);
        await x.command("COMMIT");
      } catch (e) {
        x.failure = undefined;
        await x.command("ROLLBACK").catch(() => undefined);
        throw e;
      }
    }
    return migrations.reduce((v, m) => Math.max(v, m.version), current);
  } finally {
    x.failure = undefined;
    await x.count(UNLOCK, [key]).catch(() => undefined);
  }
}

/** The applied schema version (0 when none, or when the migrations table is missing). */
export async function postgresSchemaVersion(conn: PgConnection, secrets: readonly string[] = []): Promise<number> {
  const x = new ConnectionExec(conn, false, secrets);
  const [table] = await x.rows<{ present: boolean }>(HAS_TABLE, []);
  if (table?.present !== true) return 0;
  const [row] = await x.rows<{ version: number }>(VERSION, []);
  return row?.version ?? 0;
}
