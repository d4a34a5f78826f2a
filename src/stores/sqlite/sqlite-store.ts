/**
 * `sqliteStore`: the embedded default Store (docs/stores.md) on better-sqlite3: one file under `.writ/`,
 * WAL, `synchronous=FULL`, one connection, group commit.
 */
import { guardStore } from "../../core/store-guard.js";
import type Database from "better-sqlite3";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, realpathSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { WritError } from "../../core/errors.js";
import type { Store, StoreTx } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import { defaultSqliteDriver, sqliteCodeOf, type SqliteDriver } from "./sqlite-driver.js";
import { closeFileLock, openFileLock } from "./sqlite-file-lock.js";
import { GroupCommitter, type GroupCommitStats } from "./sqlite-group-commit.js";
import { migrateSqlite, sqliteSchemaVersion } from "./sqlite-migrate.js";
import { resolveSqliteOptions, type SqliteStoreOptions } from "./sqlite-options.js";
import { ListStatements, prepareStatements } from "./sqlite-statements.js";
import { SqliteTx, type SqliteTxContext } from "./sqlite-tx.js";

/** The SQLite store: the Store port plus a few SQLite facts. */
export interface SqliteStore extends Store {
  readonly kind: "sqlite";
  /** The database file (or `:memory:`). */
  readonly path: string;
  /** Commit counters: physical commits versus logical transactions. */
  stats(): GroupCommitStats;
  /** The applied schema version. */
  schemaVersion(): Promise<number>;
  /** The read path (see `Store.read`): a second, read-only connection on a file database. */
  read<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T>;
  onWake(cb: () => void): () => void;
  /**
   * `cb` runs (and is awaited) for each transaction that wrote unsealed journal entries, per scope:
   * when its batch is about to commit with nothing else queued (so that the seal run `cb` queues
   * joins that COMMIT), else after the COMMIT. `transact` resolves after both.
   */
  onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void;
}

function isMemoryPath(path: string): boolean {
  return path === ":memory:" || path.startsWith("file::memory:");
}

function closedError(): WritError {
  return new WritError("STORE_CLOSED", "the sqlite store is closed");
}

/** Maps driver errors to `STORE_ERROR`; Writ's own errors and the caller's pass through. */
function mapError(e: unknown): unknown {
  const sqliteCode = sqliteCodeOf(e);
  if (sqliteCode !== undefined) return new WritError("STORE_ERROR", `sqlite: ${(e as Error).message}`, { cause: e, details: { sqliteCode } });
  return e;
}

/** Blocks the thread for `ms` (only while opening, when a racing process holds the file). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Switches a file database to WAL. When several processes open a new file at once, SQLite may
 * answer SQLITE_BUSY at once, without its busy handler (both hold a shared lock and want an
 * exclusive one); retry until the busy timeout is spent.
 */
function enableWal(db: Database.Database, path: string, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    try {
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (mode !== "wal" && !isMemoryPath(path)) throw new Error(`journal_mode is ${String(mode)}, WAL is required`);
      return;
    } catch (e) {
      if (sqliteCodeOf(e) !== "SQLITE_BUSY" || Date.now() >= deadline) throw e;
      sleepSync(delay);
    }
  }
}

/**
 * Data at rest (docs/security.md): a state directory this store creates is 0700, and a database
 * file it creates is 0600 before SQLite writes a byte; SQLite gives its -wal and -shm files the
 * database file's mode. Whatever command opens the store first (`writ migrate`, `serve`, a test).
 */
function createPrivately(path: string): void {
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    try {
      closeSync(openSync(path, "wx", 0o600));
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
    }
  }
}

/** -wal and -shm files that exist are made owner-only too (created before this version, or by hand). */
function tightenSidecars(path: string): void {
  for (const f of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
    } catch {
      /* missing, or not ours to change: SQLite still works */
    }
  }
}

/**
 * The internals are typed with better-sqlite3's declarations; an injected driver offers the
 * calls of `SqliteDriverDatabase`, which are all the store makes.
 */
function openWith(driver: SqliteDriver, path: string, options?: { readonly?: boolean; fileMustExist?: boolean }): Database.Database {
  return new driver(path, options) as unknown as Database.Database;
}

function openDatabase(driver: SqliteDriver, path: string, synchronous: string, busyTimeoutMs: number): Database.Database {
  if (!isMemoryPath(path)) createPrivately(path);
  const db = openWith(driver, path);
  try {
    // busy_timeout first: the migration lock may wait for other processes.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    enableWal(db, path, busyTimeoutMs);
    if (!isMemoryPath(path)) tightenSidecars(path);
    db.pragma(`synchronous = ${synchronous}`);
    db.pragma("foreign_keys = ON");
    // Every logical transaction of the group commit is a SAVEPOINT inside the batch's physical
    // transaction, so SQLite keeps a sub-journal of the pages each one touches (to roll back to the
    // savepoint). With temporary files on disk that sub-journal spills to a temp file past 64 KiB
    // and then stays a file for the whole batch: a pwrite of every page each logical transaction
    // first touches (about a sixth of the thread's CPU in the durable bench). In memory it is a
    // memcpy. It holds the pages of one logical transaction at most (truncated at each RELEASE) and
    // never matters for recovery: a crash discards the uncommitted batch (WAL).
    db.pragma("temp_store = MEMORY");
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** One scope's owed journal hint: `fire` calls the listeners once; `settled` resolves when they have. */
interface JournalHint {
  fire: () => void;
  settled: Promise<void>;
}

function journalHint(scope: Scope, listeners: ReadonlySet<(scope: Scope) => void | Promise<void>>): JournalHint {
  let done!: (p: Promise<unknown>) => void;
  const settled = new Promise<unknown>((resolve) => (done = resolve)).then(() => undefined);
  const own = { tenantId: scope.tenantId, spaceId: scope.spaceId };
  return { fire: () => done(Promise.allSettled([...listeners].map(async (cb) => cb(own)))), settled };
}

/**
 * Opens (creating when missing) a SQLite store. The schema is migrated by `migrate()`, or
 * automatically before the first transaction. Transactions run one at a time on one connection;
 * with group commit (default) several share one physical commit, and each promise resolves only
 * after the commit that includes it.
 *
 * @example
 * const store = sqliteStore();                     // .writ/writ.db, WAL, synchronous=FULL
 * await store.migrate();
 * const inv = await store.transact((tx) => tx.getInvocation(scope, id));
 * await store.close();
 */
export function sqliteStore(options: SqliteStoreOptions = {}): SqliteStore {
  const opts = resolveSqliteOptions(options);
  let db: Database.Database;
  let driver: SqliteDriver;
  try {
    driver = options.driver ?? defaultSqliteDriver();
    db = openDatabase(driver, opts.path, opts.synchronous, opts.busyTimeoutMs);
  } catch (e) {
    throw new WritError("STORE_ERROR", `cannot open sqlite database ${opts.path}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const lockKey = isMemoryPath(opts.path) ? undefined : realpathSync(opts.path);
  const fileLock = openFileLock(lockKey);
  const wakeListeners = new Set<() => void>();
  const journalListeners = new Set<(scope: Scope) => void | Promise<void>>();
  let runnable = false;
  // Journal hints (`onJournalAppend`) owed for scopes that logical transactions of the open batch
  // wrote unsealed entries to, one per scope. They fire when the batch is about to commit with
  // nothing else queued, so that the sequencer's seal run queues behind them and joins the same
  // physical COMMIT (a caller then waits for one fsync, not two); or, when a limit or an exclusive
  // job ends the batch, after its COMMIT. Either way each caller's `transact` resolves only after
  // its own COMMIT and after the hint's listeners settled.
  let owed = new Map<string, JournalHint>();
  const fireOwed = (): boolean => {
    if (owed.size === 0) return false;
    const due = owed;
    owed = new Map();
    for (const h of due.values()) h.fire();
    return true;
  };
  const owe = (scope: Scope): Promise<void> => {
    const key = JSON.stringify([scope.tenantId, scope.spaceId]);
    let h = owed.get(key);
    if (h === undefined) {
      h = journalHint(scope, journalListeners);
      owed.set(key, h);
    }
    return h.settled;
  };
  const committer = new GroupCommitter(db, fileLock, {
    maxBatch: opts.maxBatch,
    maxBatchMs: opts.maxBatchMs,
    beforeCommit: fireOwed,
    afterCommit: () => {
      fireOwed();
      if (!runnable) return;
      runnable = false;
      for (const cb of wakeListeners) {
        try {
          cb();
        } catch {
          // A hint; a failing listener must not affect commits.
        }
      }
    },
  });
  let ctx: SqliteTxContext | undefined;
  // The read path: a second, read-only connection (file databases only), opened after migration.
  let reader: { db: Database.Database; ctx: SqliteTxContext } | undefined;
  let migrated: Promise<void> | undefined;
  let closed: Promise<void> | undefined;

  const migrate = (): Promise<void> => {
    if (closed !== undefined) return Promise.reject(closedError());
    migrated ??= committer
      .exclusive(() => {
        migrateSqlite(db);
        ctx ??= { stmts: prepareStatements(db), lists: new ListStatements(db), onRunnable: () => (runnable = true) };
      }, true)
      .catch((e: unknown) => {
        migrated = undefined;
        throw mapError(e);
      });
    return migrated;
  };

  const transact = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    if (closed !== undefined) throw closedError();
    if (ctx === undefined) {
      await migrate();
      if (closed !== undefined) throw closedError();
    }
    const c = ctx as SqliteTxContext;
    let hinted: Promise<void>[] = [];
    let out: T;
    try {
      out = await committer.run(async () => {
        const tx = new SqliteTx(c);
        try {
          const r = await fn(tx);
          if (journalListeners.size > 0) hinted = tx.journaled.map(owe);
          return r;
        } finally {
          tx.end();
        }
      });
    } catch (e) {
      throw mapError(e);
    }
    // Sealing is synchronous with the commit here: the sequencer's run for each scope this
    // transaction journaled to (in this transaction's batch, or right after it) ends before
    // `transact` resolves (it cannot fail the commit).
    if (hinted.length > 0) await Promise.all(hinted);
    return out;
  };

  const read = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    if (isMemoryPath(opts.path)) return transact(fn);
    if (closed !== undefined) throw closedError();
    if (ctx === undefined) {
      await migrate();
      if (closed !== undefined) throw closedError();
    }
    try {
      if (reader === undefined) {
        const rdb = openWith(driver, opts.path, { readonly: true, fileMustExist: true });
        rdb.pragma(`busy_timeout = ${opts.busyTimeoutMs}`);
        reader = { db: rdb, ctx: { stmts: prepareStatements(rdb), lists: new ListStatements(rdb), onRunnable: () => undefined } };
      }
      const tx = new SqliteTx(reader.ctx);
      try {
        return await fn(tx);
      } finally {
        tx.end();
      }
    } catch (e) {
      throw mapError(e);
    }
  };

  // Every transaction and read runs behind the shared input rules and the lock order (docs/stores.md).
  return guardStore({
    kind: "sqlite",
    path: opts.path,
    migrate,
    transact,
    read,
    close(): Promise<void> {
      // Transactions already queued finish (and commit) first; later calls are refused.
      closed ??= committer.exclusive(() => {
        reader?.db.close();
        db.close();
        closeFileLock(lockKey, fileLock);
        wakeListeners.clear();
        journalListeners.clear();
      });
      return closed;
    },
    stats: () => committer.stats(),
    schemaVersion(): Promise<number> {
      if (closed !== undefined) return Promise.reject(closedError());
      return committer.exclusive(() => sqliteSchemaVersion(db));
    },
    onWake(cb: () => void): () => void {
      wakeListeners.add(cb);
      return () => void wakeListeners.delete(cb);
    },
    onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void {
      const own = (scope: Scope): void | Promise<void> => cb(scope);
      journalListeners.add(own);
      return () => void journalListeners.delete(own);
    },
  });
}
