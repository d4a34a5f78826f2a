/**
 * Options of `sqliteStore`, their defaults (in one place) and their validation.
 */
import { WritError } from "../../core/errors.js";
import type { SqliteDriver } from "./sqlite-driver.js";

/** SQLite `synchronous` levels the store accepts (docs/stores.md: FULL by default). */
export const SYNCHRONOUS_MODES = ["NORMAL", "FULL", "EXTRA"] as const;
export type SynchronousMode = (typeof SYNCHRONOUS_MODES)[number];

/** Tuning of group commit: when a batch of logical transactions is committed. */
export interface GroupCommitOptions {
  /**
   * Most logical transactions one physical transaction carries before it commits.
   * @defaultValue 64
   */
  maxBatch?: number;
  /**
   * Longest time (ms) a physical transaction stays open for more logical transactions once one
   * has finished; checked between logical transactions.
   * @defaultValue 10
   */
  maxBatchMs?: number;
}

/** Options of {@link sqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * Database file. Its directory is created when missing. `:memory:` gives a private in-memory
   * database (tests).
   * @defaultValue ".writ/writ.db"
   */
  path?: string;
  /**
   * `PRAGMA synchronous`. `FULL` makes every commit durable across power loss in WAL mode;
   * `NORMAL` may lose the last commits on power loss (never corrupts); `EXTRA` also syncs the directory.
   * @defaultValue "FULL"
   */
  synchronous?: SynchronousMode;
  /**
   * Group commit: several logical transactions share one physical commit (one fsync). No
   * transaction is acknowledged before the commit that includes it. `false` commits each one alone.
   * @defaultValue true (maxBatch 64, maxBatchMs 10)
   */
  groupCommit?: boolean | GroupCommitOptions;
  /**
   * How long (ms) to wait for another process's write lock before failing with `STORE_ERROR`.
   * @defaultValue 5000
   */
  busyTimeoutMs?: number;
  /**
   * The SQLite driver: a constructor with the calls of {@link SqliteDriver} (better-sqlite3's
   * default export fits: `sqliteStore({ driver: Database })`).
   * @defaultValue better-sqlite3, loaded when the store opens
   */
  driver?: SqliteDriver;
}

/** Options after defaults; `maxBatch` 1 means no group commit. */
export interface ResolvedSqliteOptions {
  path: string;
  synchronous: SynchronousMode;
  maxBatch: number;
  maxBatchMs: number;
  busyTimeoutMs: number;
}

/** The defaults, in one place. */
export const SQLITE_DEFAULTS = {
  path: ".writ/writ.db",
  synchronous: "FULL",
  maxBatch: 64,
  maxBatchMs: 10,
  busyTimeoutMs: 5000,
} as const satisfies ResolvedSqliteOptions;

function invalid(option: string, message: string): WritError {
  return new WritError("INVALID_OPTION", `sqliteStore option \`${option}\` ${message}`, { details: { option } });
}

function intOption(option: string, v: unknown, fallback: number, min: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) throw invalid(option, `must be an integer >= ${min}`);
  return v;
}

/** Applies defaults and validates; throws `INVALID_OPTION` naming the bad option. */
export function resolveSqliteOptions(opts: SqliteStoreOptions = {}): ResolvedSqliteOptions {
  if (typeof opts !== "object" || opts === null) throw invalid("options", "must be an object");
  const path = opts.path ?? SQLITE_DEFAULTS.path;
  if (typeof path !== "string" || path.length === 0) throw invalid("path", "must be a non-empty string");
  const synchronous = opts.synchronous ?? SQLITE_DEFAULTS.synchronous;
  if (!(SYNCHRONOUS_MODES as readonly unknown[]).includes(synchronous)) {
    throw invalid("synchronous", `must be one of ${SYNCHRONOUS_MODES.join(", ")}`);
  }
  const gc = opts.groupCommit ?? true;
  let maxBatch: number = SQLITE_DEFAULTS.maxBatch;
  let maxBatchMs: number = SQLITE_DEFAULTS.maxBatchMs;
  if (gc === false) {
    maxBatch = 1;
  } else if (typeof gc === "object" && gc !== null) {
    maxBatch = intOption("groupCommit.maxBatch", gc.maxBatch, maxBatch, 1);
    maxBatchMs = intOption("groupCommit.maxBatchMs", gc.maxBatchMs, maxBatchMs, 0);
  } else if (gc !== true) {
    throw invalid("groupCommit", "must be a boolean or { maxBatch?, maxBatchMs? }");
  }
  const busyTimeoutMs = intOption("busyTimeoutMs", opts.busyTimeoutMs, SQLITE_DEFAULTS.busyTimeoutMs, 0);
  if (opts.driver !== undefined && typeof opts.driver !== "function") throw invalid("driver", "must be a database constructor (better-sqlite3's default export fits)");
  return { path, synchronous, maxBatch, maxBatchMs, busyTimeoutMs };
}
