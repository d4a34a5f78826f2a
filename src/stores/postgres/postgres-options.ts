/**
 * Options of `postgresStore`, their defaults (in one place) and their validation.
 */
import { WritError } from "../../core/errors.js";
import type { PgDriver, PgPool } from "./postgres-driver.js";
import { parsePgUrl, PgUrlError, readableUrl } from "./postgres-url.js";

/** Where the store's connections come from: a URL (the store owns its pool) or a pool you own. */
export type PostgresConnection =
  | {
      /**
       * `postgres://user:password@host:port/database?…`; never echoed in errors. Several hosts
       * (`@h1:5432,h2:5432/db`) and `target_session_attrs` (`any`, `read-write`, `read-only`,
       * `primary`, `standby`, `prefer-standby`) as in libpq: each new connection tries the hosts in
       * order (docs/deploying-postgres.md, "Failover and multi-host URLs").
       */
      url: string;
      /**
       * The driver the store builds its pool with: `Pool` (and `Client`, for the wake-up
       * listener) with the calls of {@link PgDriver}; `import pg from "pg"` fits.
       * @defaultValue `pg`, loaded on the store's first use
       */
      pg?: PgDriver;
      pool?: never;
    }
  | {
      /**
       * A `pg.Pool` (or anything with its `connect()`) that you own: `close()` leaves it open, and
       * the wake-up listener borrows one of its connections while someone listens.
       */
      pool: PgPool;
      url?: never;
      pg?: never;
    };

/** Options of {@link postgresStore}. */
export interface PostgresStoreOptions {
  /**
   * Most connections in the pool the store creates from `url` (ignored with `pool`). The
   * wake-up listener uses one more, outside the pool.
   * @defaultValue 10
   */
  max?: number;
  /**
   * How long (ms) to wait for a connection (a new one, or a free one from the pool) before
   * failing with `STORE_ERROR`.
   * @defaultValue 10000
   */
  connectionTimeoutMs?: number;
  /**
   * How long (ms) an unused pooled connection stays open (ignored with `pool`).
   * @defaultValue 30000
   */
  idleTimeoutMs?: number;
  /**
   * Apply pending migrations before the first transaction. Turn off where a deploy step runs
   * `writ migrate`; transactions then fail with `INVALID_STATE` until it has.
   * @defaultValue true
   */
  autoMigrate?: boolean;
  /**
   * Send statements as named prepared statements (parsed once per connection). Turn off behind a
   * transaction-mode connection pooler (PgBouncer before 1.21) that cannot keep them.
   * @defaultValue true
   */
  preparedStatements?: boolean;
  /**
   * How long (ms) the wake-up listener waits before reconnecting after it lost its connection.
   * @defaultValue 1000
   */
  listenReconnectMs?: number;
  /**
   * How long (ms) a started journal sequencer coalesces commit hints of one scope, so one seal chains the
   * entries of several commits of a scope (docs/journal.md). Must stay well under the
   * sequencer's `sealWithinMs`; 0 hints at once. @defaultValue 60
   */
  journalHintDelayMs?: number;
  /**
   * How often (ms) the store checks whether PostgreSQL's statistics of its busiest tables are
   * stale (more than 10% of their rows, and at least 500, changed since the last ANALYZE) and, if
   * so, runs `ANALYZE (SKIP_LOCKED)` on them. Plans chosen on an empty table's statistics (a fresh
   * database, a server running without autovacuum) read the whole history on every call; this keeps
   * them current whether or not autovacuum runs (docs/stores.md, "Hot statements and history").
   * Where autovacuum is off (for the server or a table), the same check vacuums the tables whose
   * dead rows passed 10% (`VACUUM (SKIP_LOCKED, ANALYZE)`). 0 turns it off. @defaultValue 5000
   */
  analyzeEveryMs?: number;
  /**
   * After this many journal entries sealed by this store, it vacuums the journal's pending queue
   * (`VACUUM (SKIP_LOCKED, TRUNCATE false) writ_journal_pending`, in the background, one at a
   * time): every sealed entry leaves a dead row there that the sequencer's next read walks until a
   * vacuum removes it, and autovacuum visits at most once a minute (docs/stores.md, "Hot statements
   * and history"). 0 leaves the queue to autovacuum and the statistics check. @defaultValue 1000
   */
  queueVacuumRows?: number;
  /**
   * Most write transitions (admissions, execution starts, settlements) carried by one statement
   * and one commit (docs/stores.md, "Batches"). Calls that arrive while a batch is on its way to
   * the server go together in the next one; each still succeeds or fails alone. 1 sends every
   * call on its own. At most 60 (each member is a subtransaction, and PostgreSQL caches 64 per
   * transaction). @defaultValue 32
   */
  batchMax?: number;
  /**
   * How long (ms) the first call of a batch waits for company when nothing is in flight. 0 (the
   * default) never waits: a lone call goes at once, and batches form from the calls that arrive
   * while one is in flight. @defaultValue 0
   */
  batchLingerMs?: number;
  /**
   * How many batch statements may be on their way to the server at once (each on a connection
   * of its own). Calls that queue while that many are in flight wait for the first to answer
   * and go together in the next. Members of two batches in flight never touch the same
   * invocation's transition in the wrong order (a call is queued only after the one before it
   * answered), and batches take their locks in one order (docs/stores.md, "Batches").
   * @defaultValue 1
   */
  batchesInFlight?: number;
  /**
   * How long (ms) a statement may go unanswered before it fails with `STORE_ERROR` and its
   * connection is discarded (node-postgres `query_timeout`, a client-side deadline). It is what
   * finds a server that vanished silently mid-statement (a network partition drops packets;
   * nothing is refused), which TCP alone notices only after many minutes. Migrations, ANALYZE and
   * VACUUM have none. Longer than any statement of yours should take; 0 waits forever.
   * @defaultValue 30000
   */
  queryTimeoutMs?: number;
  /**
   * TCP keepalive on the store's connections: after this long (ms) idle, the kernel probes the
   * peer, so an idle connection (a pooled one, the wake-up listener's) whose server vanished is
   * found dead instead of being handed out. 0 turns it off. @defaultValue 10000
   */
  keepAliveMs?: number;
  /**
   * How often (ms) the store samples the database server's clock (docs/deploying-postgres.md,
   * "Whose clock governs leases"): hosts on the store run on the server's clock, so workers on
   * machines whose clocks disagree still agree on leases and deadlines. A sample is the shortest
   * of three small statements; a stepped local clock is sampled again at once. @defaultValue 10000
   */
  clockSampleMs?: number;
  /**
   * `application_name` of the store's connections, shown in `pg_stat_activity` (ignored with `pool`).
   * @defaultValue "writ"
   */
  applicationName?: string;
}

/** Options after defaults. */
export interface ResolvedPostgresOptions {
  max: number;
  connectionTimeoutMs: number;
  idleTimeoutMs: number;
  autoMigrate: boolean;
  preparedStatements: boolean;
  listenReconnectMs: number;
  journalHintDelayMs: number;
  analyzeEveryMs: number;
  queueVacuumRows: number;
  batchMax: number;
  batchLingerMs: number;
  batchesInFlight: number;
  applicationName: string;
  clockSampleMs: number;
  queryTimeoutMs: number;
  keepAliveMs: number;
}

/** The defaults, in one place. */
export const POSTGRES_DEFAULTS = {
  max: 10,
  connectionTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
  autoMigrate: true,
  preparedStatements: true,
  listenReconnectMs: 1_000,
  journalHintDelayMs: 60,
  analyzeEveryMs: 5_000,
  queueVacuumRows: 1_000,
  batchMax: 32,
  batchLingerMs: 0,
  batchesInFlight: 1,
  applicationName: "writ",
  clockSampleMs: 10_000,
  queryTimeoutMs: 30_000,
  keepAliveMs: 10_000,
} as const satisfies ResolvedPostgresOptions;

/**
 * The per-query deadline of statements that may rightly run long (migrations, ANALYZE and VACUUM):
 * node-postgres takes a query's own `query_timeout` over the connection's when it is non-zero, so
 * "none" is the longest timer Node keeps (about 24 days). Also the largest deadline option.
 */
export const NO_DEADLINE_MS = 2_147_483_647;

function invalid(option: string, message: string): WritError {
  return new WritError("INVALID_OPTION", `postgresStore option \`${option}\` ${message}`, { details: { option } });
}

function intOption(option: string, v: unknown, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    throw invalid(option, max === Number.MAX_SAFE_INTEGER ? `must be an integer >= ${min}` : `must be an integer from ${min} to ${max}`);
  }
  return v;
}

function boolOption(option: string, v: unknown, fallback: boolean): boolean {
  if (v === undefined) return fallback;
  if (typeof v !== "boolean") throw invalid(option, "must be a boolean");
  return v;
}

/** Checks the connection argument; throws `INVALID_OPTION` (never echoing the URL). */
export function checkConnection(conn: PostgresConnection): void {
  if (typeof conn !== "object" || conn === null) throw invalid("connection", "must be { url } or { pool }");
  const { url, pool, pg } = conn as { url?: unknown; pool?: unknown; pg?: unknown };
  if (url !== undefined && pool !== undefined) throw invalid("connection", "takes either `url` or `pool`, not both");
  if (pool !== undefined && pg !== undefined) throw invalid("pg", "is for building a pool from `url`; with `pool` the store uses that pool");
  if (pg !== undefined) {
    const { Pool, Client } = (typeof pg === "object" && pg !== null ? pg : {}) as { Pool?: unknown; Client?: unknown };
    if (typeof Pool !== "function" || (Client !== undefined && typeof Client !== "function")) throw invalid("pg", "must be { Pool, Client? } with constructors (the pg module fits)");
  }
  if (pool !== undefined) {
    if (typeof pool !== "object" || pool === null || typeof (pool as { connect?: unknown }).connect !== "function") {
      throw invalid("pool", "must be a pg.Pool (an object with connect())");
    }
    return;
  }
  if (typeof url !== "string" || !/^postgres(ql)?:\/\/./i.test(url)) throw invalid("url", "must be a postgres:// or postgresql:// URL");
  let target;
  try {
    target = parsePgUrl(url);
  } catch (e) {
    if (e instanceof PgUrlError) throw invalid(e.option, e.message);
    throw e;
  }
  if (!readableUrl(target.url)) throw invalid("url", "is not a valid URL");
  // A multi-host URL needs the driver's Client: each connection chooses its host (postgres-multihost.ts).
  if (target.multi && pg !== undefined && (pg as { Client?: unknown }).Client === undefined) throw invalid("pg", "needs `Client` for a URL with several hosts or target_session_attrs");
}

/** Applies defaults and validates; throws `INVALID_OPTION` naming the bad option. */
export function resolvePostgresOptions(opts: PostgresStoreOptions = {}): ResolvedPostgresOptions {
  if (typeof opts !== "object" || opts === null) throw invalid("options", "must be an object");
  const applicationName = opts.applicationName ?? POSTGRES_DEFAULTS.applicationName;
  if (typeof applicationName !== "string" || applicationName.length > 63) throw invalid("applicationName", "must be a string of at most 63 characters");
  return {
    max: intOption("max", opts.max, POSTGRES_DEFAULTS.max, 1),
    connectionTimeoutMs: intOption("connectionTimeoutMs", opts.connectionTimeoutMs, POSTGRES_DEFAULTS.connectionTimeoutMs, 1),
    idleTimeoutMs: intOption("idleTimeoutMs", opts.idleTimeoutMs, POSTGRES_DEFAULTS.idleTimeoutMs, 0),
    autoMigrate: boolOption("autoMigrate", opts.autoMigrate, POSTGRES_DEFAULTS.autoMigrate),
    preparedStatements: boolOption("preparedStatements", opts.preparedStatements, POSTGRES_DEFAULTS.preparedStatements),
    listenReconnectMs: intOption("listenReconnectMs", opts.listenReconnectMs, POSTGRES_DEFAULTS.listenReconnectMs, 1),
    journalHintDelayMs: intOption("journalHintDelayMs", opts.journalHintDelayMs, POSTGRES_DEFAULTS.journalHintDelayMs, 0),
    analyzeEveryMs: intOption("analyzeEveryMs", opts.analyzeEveryMs, POSTGRES_DEFAULTS.analyzeEveryMs, 0),
    queueVacuumRows: intOption("queueVacuumRows", opts.queueVacuumRows, POSTGRES_DEFAULTS.queueVacuumRows, 0),
    batchMax: intOption("batchMax", opts.batchMax, POSTGRES_DEFAULTS.batchMax, 1, 60),
    batchLingerMs: intOption("batchLingerMs", opts.batchLingerMs, POSTGRES_DEFAULTS.batchLingerMs, 0, 1000),
    batchesInFlight: intOption("batchesInFlight", opts.batchesInFlight, POSTGRES_DEFAULTS.batchesInFlight, 1, 8),
    applicationName,
    clockSampleMs: intOption("clockSampleMs", opts.clockSampleMs, POSTGRES_DEFAULTS.clockSampleMs, 100),
    queryTimeoutMs: intOption("queryTimeoutMs", opts.queryTimeoutMs, POSTGRES_DEFAULTS.queryTimeoutMs, 0, NO_DEADLINE_MS),
    keepAliveMs: intOption("keepAliveMs", opts.keepAliveMs, POSTGRES_DEFAULTS.keepAliveMs, 0, NO_DEADLINE_MS),
  };
}
