/**
 * Options of `sqlConnector`, their defaults (in one place) and their validation.
 */
import type { Clock } from "../../core/ports.js";
import type { Json } from "../../core/types.js";
import { systemClock } from "../../node/clock.js";
import type { PgPool } from "../../stores/postgres/postgres-driver.js";
import { checkConnectorBasics, clockOption, invalidOption, operationEntries, optionalMs } from "../connector-options.js";

const ENTRY = "sqlConnector";

/** Statement parameters: positional (`$1` on PostgreSQL, `?` on SQLite) or, on SQLite, named (`@name`, `:name`, `$name`). */
export type SqlParams = unknown[] | { [name: string]: unknown };

/** A row, its values made JSON (dates as ISO strings, bytes as base64, big integers beyond 2^53 as strings). */
export type SqlRow = { [column: string]: Json };

/** What a statement produced: the step's output. */
export interface SqlResult {
  /** Rows returned (a SELECT, or `RETURNING`); empty otherwise. */
  rows: SqlRow[];
  /** Rows returned, or rows changed by an INSERT, UPDATE or DELETE without `RETURNING`. */
  rowCount: number;
}

/** The slice of a better-sqlite3 statement the connector calls. */
export interface SqliteStatementLike {
  readonly reader: boolean;
  run(...params: unknown[]): { changes: number };
  all(...params: unknown[]): unknown[];
  get(...params: unknown[]): unknown;
}

/** The slice of a better-sqlite3 `Database` the connector calls. */
export interface SqliteDatabaseLike {
  prepare(sql: string): SqliteStatementLike;
  readonly inTransaction: boolean;
}

/** The database the statements run on. */
export type SqlTarget =
  | {
      kind: "postgres";
      /** `postgres://…`; the connector owns a pool (closed by `close()`); never echoed in errors. */
      url: string;
      pool?: never;
      /** Most connections of the owned pool. @defaultValue 4 */
      max?: number;
    }
  | {
      kind: "postgres";
      /** A `pg.Pool` you own (`close()` leaves it open). */
      pool: PgPool;
      url?: never;
    }
  | {
      kind: "sqlite";
      /** Database file; the connector opens it (and closes it in `close()`). */
      path: string;
      database?: never;
      /** How long to wait for another connection's write lock before `transient_failure`. @defaultValue 5000 */
      busyTimeoutMs?: number;
    }
  | {
      kind: "sqlite";
      /** A better-sqlite3 `Database` you own. Its pragmas are left alone. */
      database: SqliteDatabaseLike;
      path?: never;
    };

/** One operation: one statement. */
export interface SqlOperation {
  /**
   * One statement (no transaction control: the connector runs it inside its own transaction with
   * the dedupe row). Use `RETURNING` to get rows back from a write.
   */
  sql: string;
  /** Parameters from the step input. @defaultValue no parameters */
  params?: (input: Json) => SqlParams;
  /**
   * Names the effect from the result. Runs inside the transaction: if it throws, the statement is
   * rolled back (`permanent_failure`).
   * @defaultValue `sql:<connector id>:<step idempotency key>`
   */
  externalRef?: (result: SqlResult, stepKey: string) => string;
}

/** Options of {@link sqlConnector}. */
export interface SqlConnectorOptions {
  /** Registered connector id (actions name it in their steps). */
  id: string;
  target: SqlTarget;
  operations: { [operation: string]: SqlOperation };
  /**
   * Table recording each step key's result, created on first use (`CREATE TABLE IF NOT EXISTS`).
   * @defaultValue "writ_sql_dedupe"
   */
  dedupeTable?: string;
  /** Clock of the step deadline (the host's clock). @defaultValue the system clock */
  clock?: Clock;
}

/** The defaults, in one place. */
export const SQL_DEFAULTS = {
  dedupeTable: "writ_sql_dedupe",
  postgresMax: 4,
  busyTimeoutMs: 5000,
} as const;

export interface ResolvedSqlOperation {
  name: string;
  sql: string;
  params: ((input: Json) => SqlParams) | undefined;
  externalRef: ((result: SqlResult, stepKey: string) => string) | undefined;
}

export type ResolvedSqlTarget =
  | { kind: "postgres"; url: string; max: number }
  | { kind: "postgres"; pool: PgPool }
  | { kind: "sqlite"; path: string; busyTimeoutMs: number }
  | { kind: "sqlite"; database: SqliteDatabaseLike };

export interface ResolvedSqlOptions {
  id: string;
  target: ResolvedSqlTarget;
  operations: ResolvedSqlOperation[];
  dedupeTable: string;
  clock: Clock;
}

const IDENT = "[A-Za-z_][A-Za-z0-9_]{0,62}";
const TABLE_RE = new RegExp(`^${IDENT}(\\.${IDENT})?$`);
const TX_CONTROL_RE = /^\s*(BEGIN|COMMIT|ROLLBACK|END|START\s+TRANSACTION|SAVEPOINT|RELEASE|ABORT)\b/i;

function checkTarget(v: unknown): ResolvedSqlTarget {
  if (typeof v !== "object" || v === null) throw invalidOption(ENTRY, "target", "must be { kind: \"postgres\", url | pool } or { kind: \"sqlite\", path | database }");
  const t = v as Record<string, unknown>;
  if (t.kind === "postgres") {
    if ((t.url === undefined) === (t.pool === undefined)) throw invalidOption(ENTRY, "target", "takes either `url` or `pool` for postgres");
    if (t.pool !== undefined) {
      if (typeof t.pool !== "object" || t.pool === null || typeof (t.pool as { connect?: unknown }).connect !== "function") throw invalidOption(ENTRY, "target.pool", "must be a pg.Pool (an object with connect())");
      return { kind: "postgres", pool: t.pool as PgPool };
    }
    // The URL is never echoed: it may carry a password.
    if (typeof t.url !== "string" || !/^postgres(ql)?:\/\/./i.test(t.url) || !URL.canParse(t.url)) throw invalidOption(ENTRY, "target.url", "must be a postgres:// or postgresql:// URL");
    const max = t.max ?? SQL_DEFAULTS.postgresMax;
    if (typeof max !== "number" || !Number.isSafeInteger(max) || max < 1) throw invalidOption(ENTRY, "target.max", "must be a positive integer");
    return { kind: "postgres", url: t.url, max };
  }
  if (t.kind === "sqlite") {
    if ((t.path === undefined) === (t.database === undefined)) throw invalidOption(ENTRY, "target", "takes either `path` or `database` for sqlite");
    if (t.database !== undefined) {
      const db = t.database;
      if (typeof db !== "object" || db === null || typeof (db as { prepare?: unknown }).prepare !== "function") throw invalidOption(ENTRY, "target.database", "must be a better-sqlite3 Database");
      return { kind: "sqlite", database: db as SqliteDatabaseLike };
    }
    if (typeof t.path !== "string" || t.path.length === 0) throw invalidOption(ENTRY, "target.path", "must be a file path");
    return { kind: "sqlite", path: t.path, busyTimeoutMs: optionalMs(ENTRY, "target.busyTimeoutMs", t.busyTimeoutMs) ?? SQL_DEFAULTS.busyTimeoutMs };
  }
  throw invalidOption(ENTRY, "target.kind", "must be \"postgres\" or \"sqlite\"");
}

function checkOperation(name: string, op: Record<string, unknown>): ResolvedSqlOperation {
  const at = `operations.${name}`;
  if (typeof op.sql !== "string" || op.sql.trim().length === 0) throw invalidOption(ENTRY, `${at}.sql`, "must be a non-empty SQL statement");
  if (TX_CONTROL_RE.test(op.sql)) throw invalidOption(ENTRY, `${at}.sql`, "must not control the transaction (the connector runs it in its own)");
  if (op.params !== undefined && typeof op.params !== "function") throw invalidOption(ENTRY, `${at}.params`, "must be a function (input) => parameters");
  if (op.externalRef !== undefined && typeof op.externalRef !== "function") throw invalidOption(ENTRY, `${at}.externalRef`, "must be a function (result, stepKey) => string");
  return { name, sql: op.sql, params: op.params as ResolvedSqlOperation["params"], externalRef: op.externalRef as ResolvedSqlOperation["externalRef"] };
}

/** Applies defaults and validates; throws `INVALID_OPTION` naming the bad option (never echoing a URL). */
export function resolveSqlOptions(options: SqlConnectorOptions): ResolvedSqlOptions {
  const { id } = checkConnectorBasics(ENTRY, options);
  const dedupeTable = options.dedupeTable ?? SQL_DEFAULTS.dedupeTable;
  if (typeof dedupeTable !== "string" || !TABLE_RE.test(dedupeTable)) throw invalidOption(ENTRY, "dedupeTable", "must be a table name (letters, digits, _; optionally schema.table)");
  return {
    id,
    target: checkTarget(options.target),
    operations: operationEntries(ENTRY, options.operations).map(([name, op]) => checkOperation(name, op)),
    dedupeTable,
    clock: clockOption(ENTRY, options.clock, systemClock),
  };
}
