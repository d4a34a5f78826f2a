/**
 * The slice of better-sqlite3 the SQLite store calls, and the driver loaded when none is given.
 * better-sqlite3's default export fits `SqliteDriver`; so does anything with the same calls
 * (docs/stores.md, Drivers). The default is loaded on the store's first open, not when this module
 * is imported, so importing `writ` or `writ/sqlite` loads no native module.
 */
import { createRequire } from "node:module";

/** A prepared statement: the calls the store makes on one. */
export interface SqliteDriverStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /** Makes `get`/`all` answer the first column only (better-sqlite3's `pluck`). */
  pluck(toggle?: boolean): this;
}

/** An open database connection: the calls the store makes on one. */
export interface SqliteDriverDatabase {
  prepare(sql: string): SqliteDriverStatement;
  exec(sql: string): unknown;
  /** `PRAGMA source`; with `{ simple: true }` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
  readonly inTransaction: boolean;
}

/** Opens a connection (better-sqlite3's `Database` constructor fits). */
export type SqliteDriver = new (path: string, options?: { readonly?: boolean; fileMustExist?: boolean }) => SqliteDriverDatabase;

let loaded: SqliteDriver | undefined;

/** better-sqlite3, required on first use (a CommonJS package with a native addon). */
export function defaultSqliteDriver(): SqliteDriver {
  return (loaded ??= createRequire(import.meta.url)("better-sqlite3") as SqliteDriver);
}

/** A driver error with a SQLite result code (better-sqlite3's `SqliteError` has `code: "SQLITE_…"`). */
export function sqliteCodeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_") ? code : undefined;
}
