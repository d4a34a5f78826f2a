/**
 * Every fixed SQL statement of the SQLite store, prepared once per connection, assembled from the
 * domain files (sqlite-invocations.ts, sqlite-claims.ts, sqlite-execution.ts, sqlite-records.ts,
 * sqlite-journal.ts, sqlite-notifications.ts, sqlite-retention.ts; docs/stores.md, "Layout"), and the list statements whose WHERE depends on
 * their filters.
 */
import type Database from "better-sqlite3";
import { prepareClaimStatements, type SqliteClaimStatements } from "./sqlite-claims.js";
import { attemptListSql, prepareExecutionStatements, type SqliteExecutionStatements } from "./sqlite-execution.js";
import { invocationListSql, prepareInvocationStatements, type SqliteInvocationStatements } from "./sqlite-invocations.js";
import { prepareJournalStatements, type SqliteJournalStatements } from "./sqlite-journal.js";
import { prepareNotificationStatements, type SqliteNotificationStatements } from "./sqlite-notifications.js";
import { prepareRetentionStatements, type SqliteRetentionStatements } from "./sqlite-retention.js";
import { approvalListSql, prepareRecordStatements, reconciliationListSql, type SqliteRecordStatements } from "./sqlite-records.js";

/** The fixed statements, by name. */
export type SqliteStatements = SqliteInvocationStatements & SqliteClaimStatements & SqliteExecutionStatements & SqliteRecordStatements & SqliteJournalStatements & SqliteNotificationStatements & SqliteRetentionStatements;

/** Prepares the fixed statements; the schema must be migrated first. */
export function prepareStatements(db: Database.Database): SqliteStatements {
  const p = (sql: string): Database.Statement => db.prepare(sql);
  return {
    ...prepareExecutionStatements(p),
    ...prepareJournalStatements(p),
    ...prepareInvocationStatements(p),
    ...prepareClaimStatements(p),
    ...prepareRecordStatements(p),
    ...prepareNotificationStatements(p),
    ...prepareRetentionStatements(p),
  };
}

/**
 * Statements whose WHERE clause depends on which optional filters a list call uses, prepared on
 * first use per combination and cached (a handful of variants each).
 */
export class ListStatements {
  readonly #db: Database.Database;
  readonly #cache = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  /**
   * Newest first: (createdAt, invocationId) descending. `after` is a page cursor: only rows that
   * come after it in this order (older ones); an unknown cursor yields nothing.
   */
  invocations(status: boolean, after: boolean): Database.Statement {
    return this.#get(`inv:${status}:${after}`, () => invocationListSql(status, after));
  }

  /** In scope order (seq). */
  attempts(invocation: boolean): Database.Statement {
    return this.#get(`att:${invocation}`, () => attemptListSql(invocation), false);
  }

  /** In insertion order. */
  reconciliations(status: boolean, invocation: boolean): Database.Statement {
    return this.#get(`rec:${status}:${invocation}`, () => reconciliationListSql(status, invocation));
  }

  /** In insertion order. */
  approvals(status: boolean): Database.Statement {
    return this.#get(`apr:${status}`, () => approvalListSql(status));
  }

  #get(key: string, sql: () => string, pluck = true): Database.Statement {
    let stmt = this.#cache.get(key);
    if (stmt === undefined) {
      stmt = this.#db.prepare(sql()).pluck(pluck);
      this.#cache.set(key, stmt);
    }
    return stmt;
  }
}
