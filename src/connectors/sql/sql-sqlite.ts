/**
 * The SQLite dialect of the SQL connector, on better-sqlite3 (a file it opens, or your Database).
 * A step's transaction runs synchronously from BEGIN IMMEDIATE to COMMIT: it never holds the
 * write lock across an event-loop turn, so calls on one connection cannot interleave, and another
 * connection in the same process never waits (blocking the thread) on a lock this one holds.
 */
import { defaultSqliteDriver, sqliteCodeOf } from "../../stores/sqlite/sqlite-driver.js";
import { errorMessage } from "../../core/errors.js";
import type { DedupeRow, SqlDialect, SqlFailure, StepOutcome, StepPlan } from "./sql-dialect.js";
import { toRow } from "./sql-json.js";
import type { ResolvedSqlTarget, SqlParams, SqlResult, SqliteDatabaseLike, SqliteStatementLike } from "./sql-options.js";

/** Result codes (prefixes of extended codes) where running again may succeed. */
const TRANSIENT_CODES = ["SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_FULL", "SQLITE_CANTOPEN", "SQLITE_PROTOCOL", "SQLITE_NOMEM", "SQLITE_INTERRUPT"];

/** A database the connector opened itself (and so closes). */
type OwnedDatabase = SqliteDatabaseLike & { pragma(source: string): unknown; close(): unknown };

/** Arguments of run/all: positional values spread, named ones as one object. */
function bind(params: SqlParams): unknown[] {
  return Array.isArray(params) ? params : [params];
}

type Prepare = (sql: string) => SqliteStatementLike;

/** From the claim to the recorded result (between BEGIN IMMEDIATE and COMMIT). Synchronous. */
function transaction(stmt: Prepare, table: string, plan: StepPlan): StepOutcome {
  const claimed = stmt(`INSERT INTO ${table} (step_key, connector, operation, at) VALUES (?, ?, ?, ?) ON CONFLICT (step_key) DO NOTHING`).run(plan.stepKey, plan.connector, plan.op.name, plan.at);
  if (claimed.changes !== 1) {
    const r = stmt(`SELECT connector, operation, external_ref, result FROM ${table} WHERE step_key = ?`).get(plan.stepKey) as
      | { connector: string; operation: string; external_ref: string | null; result: string | null }
      | undefined;
    const row: DedupeRow | undefined = r && { connector: r.connector, operation: r.operation, externalRef: r.external_ref, result: r.result };
    return { kind: "recorded", row };
  }
  const s = stmt(plan.op.sql);
  let result: SqlResult;
  if (s.reader) {
    const rows = s.all(...bind(plan.params)).map((row) => toRow(row as Record<string, unknown>));
    result = { rows, rowCount: rows.length };
  } else {
    result = { rows: [], rowCount: s.run(...bind(plan.params)).changes };
  }
  const externalRef = plan.settle(result);
  stmt(`UPDATE ${table} SET external_ref = ?, result = ? WHERE step_key = ?`).run(externalRef, JSON.stringify(result), plan.stepKey);
  plan.beforeCommit();
  return { kind: "committed", externalRef, result };
}

/** The SQLite dialect on `target`. */
export function sqliteDialect(target: Extract<ResolvedSqlTarget, { kind: "sqlite" }>, table: string): SqlDialect {
  let opened: OwnedDatabase | undefined;
  const db = (): SqliteDatabaseLike => {
    if ("database" in target) return target.database;
    if (opened === undefined) {
      // better-sqlite3 is loaded on the first step, not when the connector module is imported.
      const Driver = defaultSqliteDriver();
      opened = new Driver(target.path) as unknown as OwnedDatabase;
      opened.pragma(`busy_timeout = ${target.busyTimeoutMs}`);
    }
    return opened;
  };
  // Prepared statements, per database (a closed and reopened file gets new ones).
  let cache = new WeakMap<SqliteDatabaseLike, Map<string, SqliteStatementLike>>();
  const prepare = (d: SqliteDatabaseLike): Prepare => {
    let m = cache.get(d);
    if (m === undefined) cache.set(d, (m = new Map()));
    const statements = m;
    return (sql) => {
      let s = statements.get(sql);
      if (s === undefined) statements.set(sql, (s = d.prepare(sql)));
      return s;
    };
  };
  return {
    name: "sqlite",
    async ensureTable() {
      prepare(db())(`CREATE TABLE IF NOT EXISTS ${table} (step_key TEXT PRIMARY KEY, connector TEXT NOT NULL, operation TEXT NOT NULL, external_ref TEXT, result TEXT, at INTEGER NOT NULL)`).run();
    },
    async runStep(plan) {
      let d: SqliteDatabaseLike;
      try {
        d = db();
      } catch (error) {
        return { kind: "not_started", error };
      }
      const stmt = prepare(d);
      let began = false;
      let committing = false;
      try {
        stmt("BEGIN IMMEDIATE").run();
        began = true;
        const done = transaction(stmt, table, plan);
        if (done.kind !== "committed") {
          stmt("ROLLBACK").run();
          return done;
        }
        committing = true;
        stmt("COMMIT").run();
        return done;
      } catch (error) {
        // A COMMIT that failed with the transaction still open (SQLITE_BUSY) committed nothing;
        // one that left no transaction behind may have committed.
        if (committing && !d.inTransaction) return { kind: "commit_unknown", error };
        // Roll back only our own transaction (never one the application had open when BEGIN failed).
        if (began && d.inTransaction) {
          try {
            stmt("ROLLBACK").run();
          } catch {
            /* SQLite rolls back on its own after the errors that make ROLLBACK fail */
          }
        }
        return { kind: "rolled_back", error, during: committing ? "commit" : "transaction" };
      }
    },
    classify(e: unknown): SqlFailure {
      const code = sqliteCodeOf(e);
      const text = `sqlite${code === undefined ? "" : ` ${code}`}: ${errorMessage(e)}`;
      // Anything that is not an SQLite result code (a bad parameter binding) is the caller's mistake.
      return { kind: code !== undefined && TRANSIENT_CODES.some((t) => code.startsWith(t)) ? "transient" : "permanent", text };
    },
    async close() {
      const d = opened;
      opened = undefined;
      cache = new WeakMap();
      d?.close();
    },
  };
}
