/**
 * `postgresStore`: the production Store (docs/stores.md) on PostgreSQL through node-postgres: a pool,
 * one real transaction per `transact`, advisory locks, fenced single-statement writes,
 * `FOR UPDATE SKIP LOCKED` claims and a LISTEN/NOTIFY wake-up hint.
 */
import { guardStore } from "../../core/store-guard.js";
import { WritError } from "../../core/errors.js";
import type { Store, StoreTx } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import { clientClass, connectGuarded, createConnection, createPool, defaultPgDriver, type OwnedPgPool, type PgPool, type PgPooledConnection } from "./postgres-driver.js";
import { onReadOnlyServer, passwordOf, toWritError } from "./postgres-errors.js";
import { ConnectionExec, type Exec } from "./postgres-exec.js";
import { postgresTransitions } from "./postgres-transitions.js";
import { genericTransitions } from "../../core/transitions.js";
import { WakeListener, type ListenConnection } from "./postgres-listener.js";
import { CLAIM_DEADLINE_MS, pgSealers } from "./postgres-sealers.js";
import { migratePostgres, postgresSchemaVersion } from "./postgres-migrate.js";
import { parsePgUrl } from "./postgres-url.js";
import { checkConnection, NO_DEADLINE_MS, resolvePostgresOptions, type PostgresConnection, type PostgresStoreOptions, type ResolvedPostgresOptions } from "./postgres-options.js";
import { analyzeStale, QUEUE_TABLES, queueVacuumer, statsKeeper } from "./postgres-stats.js";
import { PostgresTx } from "./postgres-tx.js";
import { CLOCK_SQL, databaseClock, type DatabaseClock } from "./postgres-clock.js";

/** The PostgreSQL store: the Store port plus a few PostgreSQL facts. */
export interface PostgresStore extends Store {
  readonly kind: "postgres";
  /** The applied schema version (0 before the first migration). */
  schemaVersion(): Promise<number>;
  /**
   * Runs `cb` when an invocation becomes runnable (LISTEN/NOTIFY on a dedicated connection). A
   * hint only: keep polling. Returns the unsubscribe function.
   */
  onWake(cb: () => void): () => void;
  /**
   * Runs `cb` with a key id after any process commits a write of that API key's record (LISTEN/NOTIFY
   * on the wake-up listener's connection), and with `null` after the listener reconnected (changes
   * may have been missed). Returns the unsubscribe function.
   */
  onApiKeyChange(cb: (keyId: string | null) => void): () => void;
  /** `cb` runs after each commit that wrote unsealed journal entries, per scope; never awaited. */
  onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void;
  /** Resolves once the wake-up listener's LISTEN is in effect (after a first `onWake`). */
  listening(): Promise<void>;
  /** The database server's clock, sampled (postgres-clock.ts): hosts on this store run on it. */
  readonly clock: DatabaseClock;
}

/**
 * Resolves once `pending` is empty (what joins it meanwhile is waited for too), or after `ms`. Its
 * timer keeps the process alive on purpose: the seals it waits for run on timers that do not (a
 * sequencer's hint window on the system clock), so a script whose last act is `await
 * store.close()` would otherwise leave Node's loop empty and exit with close() never settled and
 * its entries unsealed.
 */
async function drainWithin(pending: Set<Promise<unknown>>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), ms)));
  try {
    while (pending.size > 0) {
      const late = await Promise.race([Promise.allSettled([...pending]).then(() => false), deadline]);
      if (late) return;
    }
  } finally {
    clearTimeout(timer);
  }
}

function closedError(): WritError {
  return new WritError("STORE_CLOSED", "the postgres store is closed");
}

/** The pool and how to end it: the store ends only a pool it created. */
interface Pooling {
  pool: PgPool;
  end: () => Promise<void>;
  listenConnection: () => Promise<ListenConnection>;
}

function pooling(conn: PostgresConnection, opts: ResolvedPostgresOptions): Pooling {
  if (conn.pool !== undefined) {
    const pool = conn.pool;
    // A pool emits `error` when one of its idle connections breaks (the server restarted or ended
    // it); unheard, that event kills the process. The store listens while it uses the pool, as it
    // does on a pool of its own, and stops listening when it closes (the caller's own listeners
    // are left as they are).
    const events = pool as Partial<{ on: (ev: "error", l: (e: Error) => void) => unknown; off: (ev: "error", l: (e: Error) => void) => unknown }>;
    const absorb = (): void => undefined;
    const listening = typeof events.on === "function" && typeof events.off === "function";
    if (listening) events.on!("error", absorb);
    return {
      pool,
      end: async () => {
        if (listening) events.off!("error", absorb);
      },
      listenConnection: async () => {
        const c = await connectGuarded(pool);
        return { conn: c, done: async () => c.release(true) };
      },
    };
  }
  const target = parsePgUrl(conn.url);
  const driver = conn.pg ?? defaultPgDriver();
  const Client = clientClass(target, opts, driver);
  const pool: OwnedPgPool = createPool(target, opts, driver, Client);
  return {
    pool,
    end: () => pool.end(),
    listenConnection: async () => {
      const c = createConnection(target, opts, Client);
      if (c === null) {
        // A driver without `Client`: the listener holds a pooled connection while someone listens.
        const pooled = await connectGuarded(pool);
        return { conn: pooled, done: async () => pooled.release(true) };
      }
      c.on("error", () => undefined);
      try {
        await c.connect();
      } catch (e) {
        await c.end().catch(() => undefined);
        throw e;
      }
      return { conn: c, done: () => c.end().catch(() => undefined) };
    },
  };
}

/**
 * Opens a PostgreSQL store over a URL (the store owns a pool of `max` connections) or over a pool
 * you own. Nothing connects until the first call. The schema is migrated by `migrate()`, or
 * before the first transaction unless `autoMigrate` is off.
 *
 * `transact(fn)` runs `fn` in one `BEGIN … COMMIT` on one pooled connection and rolls back if
 * `fn` throws or any statement failed (even one `fn` caught). It is never retried: `fn` may have
 * effects outside the database. Serialisation is by locks instead: `tx.lock` (advisory locks),
 * row locks of fenced writes and `assertLease`.
 *
 * @example
 * const store = postgresStore({ url: process.env.DATABASE_URL! }, { max: 20 });
 * await store.migrate();
 * const inv = await store.transact((tx) => tx.getInvocation(scope, id));
 * await store.close();
 */
export function postgresStore(connection: PostgresConnection, options: PostgresStoreOptions = {}): PostgresStore {
  checkConnection(connection);
  const opts = resolvePostgresOptions(options);
  const secrets = passwordOf(connection.url);
  const { pool, end, listenConnection } = pooling(connection, opts);
  const listener = new WakeListener({ connect: listenConnection, reconnectMs: opts.listenReconnectMs });
  const active = new Set<Promise<unknown>>();
  const journalListeners = new Set<(scope: Scope) => void | Promise<void>>();
  /**
   * The listeners' answers to hints not yet settled: a sequencer's seal, which may wait for
   * `journalHintDelayMs` first. close() lets them finish (for a bounded time) before it refuses
   * statements, so that a script's last entries are sealed.
   */
  const hinting = new Set<Promise<unknown>>();
  /** The commit hint for the sequencer: not awaited, so an action's commit never waits for the chain. */
  const hintJournal = (scopes: Scope[]): void => {
    for (const sc of scopes) {
      for (const cb of journalListeners) {
        try {
          const p = Promise.resolve(cb(sc)).catch(() => undefined);
          hinting.add(p);
          void p.finally(() => hinting.delete(p));
        } catch {
          // a hint; a failing listener must not affect the commit that is already done
        }
      }
    }
  };
  let migrated: Promise<void> | undefined;
  let closed: Promise<void> | undefined;
  /** Set by close() while it waits for `hinting` (the store still takes calls meanwhile). */
  let closing: Promise<void> | undefined;

  const checkout = async (): Promise<PgPooledConnection> => {
    try {
      return await connectGuarded(pool);
    } catch (e) {
      throw toWritError(e, secrets);
    }
  };

  /** Runs `fn` with a connection of its own, discarding the connection if it failed. */
  const withConnection = async <T>(fn: (c: PgPooledConnection) => Promise<T>): Promise<T> => {
    const c = await checkout();
    try {
      const out = await fn(c);
      c.release();
      return out;
    } catch (e) {
      c.release(true);
      throw toWritError(e, secrets);
    }
  };

  const stats = statsKeeper(opts.analyzeEveryMs, () =>
    withConnection((c) => {
      // ANALYZE and VACUUM of a large table may rightly run long: no statement deadline.
      const x = new ConnectionExec(c, opts.preparedStatements, secrets, NO_DEADLINE_MS);
      return analyzeStale(x, (text) => x.command(text));
    }),
  );

  const queueVacuum = queueVacuumer(opts.queueVacuumRows, () =>
    withConnection((c) => new ConnectionExec(c, false, secrets, NO_DEADLINE_MS).command(`VACUUM (SKIP_LOCKED, TRUNCATE false) ${QUEUE_TABLES.join(", ")}`)),
  );

  // Sealer claims (docs/journal.md, "One sealer per scope"): held on a connection of their own; the
  // probe of another store's claim runs on a pooled one.
  const sealers = pgSealers(listenConnection, (text, values) => withConnection(async (c) => (await c.query<{ held: boolean }>({ text, values, query_timeout: CLAIM_DEADLINE_MS })).rows));

  /** Keeps `p` in `active` until it settles, so close() can wait for it. */
  const track = <T>(p: Promise<T>): Promise<T> => {
    active.add(p);
    const forget = (): void => void active.delete(p);
    p.then(forget, forget);
    return p;
  };

  const migrate = (): Promise<void> => {
    if (closed !== undefined) return Promise.reject(closedError());
    migrated ??= track(withConnection((c) => migratePostgres(c, secrets).then(() => undefined))).catch((e: unknown) => {
      migrated = undefined;
      throw e;
    });
    return migrated;
  };

  const runTransaction = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    const c = await checkout();
    const x = new ConnectionExec(c, opts.preparedStatements, secrets);
    const tx = new PostgresTx(x);
    let healthy = true;
    try {
      await x.command("BEGIN");
      const out = await fn(tx);
      // A statement failed (and fn swallowed the error): PostgreSQL has aborted the transaction.
      if (x.failure !== undefined) throw x.failure;
      tx.end();
      let tag: string;
      try {
        tag = await x.command("COMMIT");
      } catch (e) {
        healthy = false;
        // The connection broke during COMMIT: the outcome is unknown to us.
        throw new WritError("STORE_ERROR", `commit outcome unknown: ${toWritError(e, secrets).message}`, { details: { commitUnknown: true } });
      }
      if (tag !== "COMMIT") throw new WritError("STORE_ERROR", "postgres rolled the transaction back at commit");
      if (journalListeners.size > 0) hintJournal(tx.journaled);
      return out;
    } catch (e) {
      tx.end();
      // Statements fn left waiting never follow the ROLLBACK (they would run in autocommit).
      await x.end();
      // On a server that no longer takes writes (a failover): discard, so the pool reconnects. So
      // is a connection whose statement failed without the server's word (a broken connection, a
      // statement past its deadline): a ROLLBACK on it would only wait again.
      if (onReadOnlyServer(e) || onReadOnlyServer(x.failure)) healthy = false;
      if (x.failure !== undefined && typeof (x.failure.details as { sqlState?: unknown } | undefined)?.sqlState !== "string") healthy = false;
      if (healthy) {
        try {
          await c.query({ text: "ROLLBACK" });
        } catch {
          healthy = false;
        }
      }
      throw e;
    } finally {
      c.release(healthy ? undefined : true);
    }
  };

  /**
   * What every store call waits for first: an open store, migrated when it migrates itself. A write
   * of any kind (a transaction, or a transition's one statement) starts the statistics keeper: a
   * store used only by a bare boundary writes through transitions alone.
   */
  const ready = async (write: boolean): Promise<void> => {
    if (closed !== undefined) throw closedError();
    if (opts.autoMigrate && migrated === undefined) await migrate();
    else if (migrated !== undefined) await migrated;
    if (closed !== undefined) throw closedError();
    if (write) stats.start();
  };

  const transact = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    await ready(true);
    return track(runTransaction(fn));
  };

  /** The read path: statements on a pooled connection in autocommit, no BEGIN / COMMIT round trips. */
  const runRead = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    const c = await checkout();
    const x = new ConnectionExec(c, opts.preparedStatements, secrets);
    const tx = new PostgresTx(x);
    let healthy = true;
    try {
      const out = await fn(tx);
      if (x.failure !== undefined) throw x.failure;
      return out;
    } catch (e) {
      // A failed statement may mean a broken connection; fn's own errors leave it usable.
      if (x.failure !== undefined) healthy = false;
      throw e;
    } finally {
      tx.end();
      // Nothing of this read may reach the connection once another caller has it.
      await x.end();
      c.release(healthy ? undefined : true);
    }
  };

  const read = async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
    await ready(false);
    return track(runRead(fn));
  };

  /** One statement on a pooled connection in autocommit: a native transition's one round trip. */
  const runStatement = async <T>(fn: (x: Exec) => Promise<T>): Promise<T> => {
    await ready(true);
    return track(
      (async () => {
        const c = await checkout();
        const x = new ConnectionExec(c, opts.preparedStatements, secrets);
        let healthy = true;
        try {
          return await fn(x);
        } catch (e) {
          // A server-raised error leaves the connection usable; a broken one is discarded, and so
          // is one the server is terminating (class 57: shutdown, crash; class 08: connection), and
          // one on a server that no longer takes writes (25006: it is a standby now).
          const state = (e as { details?: { sqlState?: unknown } }).details?.sqlState;
          if (typeof state !== "string" || state.startsWith("57") || state.startsWith("08") || onReadOnlyServer(e)) healthy = false;
          throw e;
        } finally {
          c.release(healthy ? undefined : true);
        }
      })(),
    );
  };
  const clock = databaseClock({
    everyMs: opts.clockSampleMs,
    read: (sent) =>
      track(
        withConnection(async (c) => {
          sent(); // connecting and waiting for the pool are not the round trip
          const { rows } = await c.query<{ ms: number }>({ text: CLOCK_SQL });
          return Number(rows[0]?.ms);
        }),
      ),
  });
  let guarded: PostgresStore | undefined;
  const base = postgresTransitions(runStatement, (scope) => hintJournal([scope]), () => genericTransitions(guarded!), { batchMax: opts.batchMax, batchLingerMs: opts.batchLingerMs, batchesInFlight: opts.batchesInFlight });
  // Every seal leaves dead rows in the pending queue: counted toward its next vacuum.
  const sealIfHead = base.sealIfHead?.bind(base);
  const sealIfHeadMany = base.sealIfHeadMany?.bind(base);
  const transitions: typeof base = {
    ...base,
    ...(sealIfHead && {
      async sealIfHead(scope: Scope, headSeq: number, entries: Parameters<typeof sealIfHead>[2]) {
        const ok = await sealIfHead(scope, headSeq, entries);
        if (ok) queueVacuum.sealed(entries.length);
        return ok;
      },
    }),
    ...(sealIfHeadMany && {
      async sealIfHeadMany(seals: Parameters<typeof sealIfHeadMany>[0]) {
        const out = await sealIfHeadMany(seals);
        queueVacuum.sealed(seals.reduce((n, x) => n + x.entries.length, 0));
        return out;
      },
    }),
  };

  /** Stops everything and ends the pool; from its first call on, the store refuses calls. */
  const shutdown = (): Promise<void> =>
    (closed ??= (async () => {
      clock.stop();
      await listener.stop();
      await sealers.close();
      await stats.stop();
      await queueVacuum.stop();
      journalListeners.clear();
      // Transactions already running finish (commit or roll back) first.
      await Promise.allSettled([...active]);
      await end();
    })());

  // Every transaction and read runs behind the shared input rules and the lock order (docs/stores.md).
  return (guarded = guardStore<PostgresStore>({
    kind: "postgres",
    migrate,
    transact,
    read,
    close(): Promise<void> {
      if (closed !== undefined) return closed;
      if (hinting.size === 0) return shutdown();
      // Seals that commit hints still wait for run first (and those of commits made while they
      // do), for at most a second past their delay.
      return (closing ??= drainWithin(hinting, opts.journalHintDelayMs + 1_000).then(shutdown));
    },
    schemaVersion(): Promise<number> {
      if (closed !== undefined) return Promise.reject(closedError());
      return track(withConnection((c) => postgresSchemaVersion(c, secrets)));
    },
    onWake(cb: () => void): () => void {
      if (closed !== undefined) throw closedError();
      return listener.subscribe(cb);
    },
    onApiKeyChange(cb: (keyId: string | null) => void): () => void {
      if (closed !== undefined) throw closedError();
      return listener.subscribeKeys(cb);
    },
    onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void {
      const own = (scope: Scope): void | Promise<void> => cb(scope);
      journalListeners.add(own);
      return () => void journalListeners.delete(own);
    },
    listening: () => listener.listening(),
    journalHintDelayMs: opts.journalHintDelayMs,
    journalSealers: {
      claim: (scopes) => (closed !== undefined ? Promise.reject(closedError()) : track(sealers.claim(scopes))),
      held: (scopes) => (closed !== undefined ? Promise.reject(closedError()) : track(sealers.held(scopes))),
      release: (scopes) => sealers.release(scopes),
      holds: (scope) => sealers.holds(scope),
      count: () => sealers.count(),
    },
    clock,
    transitions,
  }));
}
