/**
 * The slice of node-postgres (`pg`) the store calls. A pool passed in by the application only has
 * to offer this much; the store builds its own pool from a URL otherwise, with an injected driver
 * (`PgDriver`) or `pg`, loaded on the store's first use (docs/stores.md, Drivers).
 *
 * Why `pg` and not postgres.js: see docs/postgres-driver.md (measured with bench/pg-driver.ts).
 */
import { createRequire } from "node:module";
import type { ResolvedPostgresOptions } from "./postgres-options.js";
import { multiHostClient } from "./postgres-multihost.js";
import type { PgTarget } from "./postgres-url.js";

/** A statement to run: `name` makes it a prepared statement, parsed once per connection. */
export interface PgQuery {
  text: string;
  values?: unknown[];
  name?: string;
  /** This query's deadline (ms), over the connection's `query_timeout` (node-postgres). */
  query_timeout?: number;
}

/** What a query answers. `command` is the tag (`COMMIT`, or `ROLLBACK` for an aborted commit). */
export interface PgResult<R> {
  rows: R[];
  rowCount: number | null;
  command: string;
}

/** A PostgreSQL notification (LISTEN/NOTIFY). */
export interface PgNotification {
  channel: string;
  payload?: string;
}

/** One connection. */
export interface PgConnection {
  query<R extends object = Record<string, unknown>>(q: PgQuery): Promise<PgResult<R>>;
  on(event: "notification", listener: (n: PgNotification) => void): unknown;
  on(event: "error", listener: (e: Error) => void): unknown;
  on(event: "end", listener: () => void): unknown;
}

/** A connection checked out of a pool; `release(true)` (or an error) discards it. */
export interface PgPooledConnection extends PgConnection {
  release(destroy?: boolean | Error): void;
}

/** A connection pool (`pg.Pool` fits). */
export interface PgPool {
  connect(): Promise<PgPooledConnection>;
}

/** The pool the store owns when it is given a URL. */
export interface OwnedPgPool extends PgPool {
  end(): Promise<void>;
  on(event: "error", listener: (e: Error) => void): unknown;
}

/** A stand-alone connection (the wake-up listener's). */
export interface PgStandaloneConnection extends PgConnection {
  connect(): Promise<unknown>;
  end(): Promise<void>;
}

/** The connection settings the store passes to the driver's constructors (node-postgres names). */
export interface PgClientConfig {
  connectionString: string;
  connectionTimeoutMillis: number;
  application_name: string;
  /** How long a statement may go unanswered before it fails and its connection is discarded (absent: forever). */
  query_timeout?: number;
  /** TCP keepalive, so an idle connection whose peer vanished is found dead. */
  keepAlive?: boolean;
  keepAliveInitialDelayMillis?: number;
}

/** The pool settings: the client's plus the pool's own. */
export interface PgPoolConfig extends PgClientConfig {
  max: number;
  idleTimeoutMillis: number;
  allowExitOnIdle: boolean;
}

/**
 * The slice of the `pg` module the store calls when it builds its own pool from a URL: `Pool`,
 * and `Client` for the wake-up listener's connection outside the pool (without it, the listener
 * borrows a pooled connection). `import pg from "pg"` fits: `postgresStore({ url, pg })`.
 */
export interface PgDriver {
  Pool: new (config: PgPoolConfig) => OwnedPgPool;
  Client?: new (config: PgClientConfig) => PgStandaloneConnection;
}

let loaded: PgDriver | undefined;

/** node-postgres, required on first use (not when this module is imported). */
export function defaultPgDriver(): PgDriver {
  return (loaded ??= createRequire(import.meta.url)("pg") as PgDriver);
}

function clientConfig(target: PgTarget, opts: ResolvedPostgresOptions): PgClientConfig {
  return {
    connectionString: target.url,
    connectionTimeoutMillis: opts.connectionTimeoutMs,
    application_name: opts.applicationName,
    ...(opts.queryTimeoutMs > 0 ? { query_timeout: opts.queryTimeoutMs } : {}),
    ...(opts.keepAliveMs > 0 ? { keepAlive: true, keepAliveInitialDelayMillis: opts.keepAliveMs } : {}),
  };
}


/**
 * The connection class for `target`: the driver's own `Client` for a single-host URL (or none);
 * for a multi-host URL one that chooses its host (postgres-multihost.ts). The driver must then
 * have `Client` (checked at construction: postgres-options.ts).
 */
export function clientClass(target: PgTarget, opts: ResolvedPostgresOptions, driver: PgDriver = defaultPgDriver()): PgDriver["Client"] {
  if (!target.multi || driver.Client === undefined) return driver.Client;
  return multiHostClient(driver.Client, target, opts.connectionTimeoutMs);
}

/**
 * A pool for `target`. Idle-connection errors are absorbed (the pool drops such connections). For a
 * multi-host URL the pool builds its connections with `Client` (pg-pool's `Client` option; not in
 * {@link PgPoolConfig}, whose slice `pg`'s own types must accept).
 */
export function createPool(target: PgTarget, opts: ResolvedPostgresOptions, driver: PgDriver = defaultPgDriver(), Client: PgDriver["Client"] = clientClass(target, opts, driver)): OwnedPgPool {
  const config: PgPoolConfig = { ...clientConfig(target, opts), max: opts.max, idleTimeoutMillis: opts.idleTimeoutMs, allowExitOnIdle: true };
  const pool = new driver.Pool(target.multi && Client !== undefined ? ({ ...config, Client } as PgPoolConfig) : config);
  pool.on("error", () => undefined);
  return pool;
}

/** Connections that already carry {@link connectGuarded}'s error listener (pools reuse them). */
const guarded = new WeakSet<object>();

/**
 * Checks a connection out of `pool` with an `error` listener attached. node-postgres emits
 * `error` on a checked-out client whose connection breaks between queries (the server restarted,
 * crashed or was failed over; a network cut), and pg-pool listens only while the client is idle:
 * an unheard `error` event kills the process. With the listener, the next query on that client
 * fails instead, and the caller discards it (`release(true)`). See docs/deploying-postgres.md,
 * "When the database goes away".
 */
export async function connectGuarded(pool: PgPool): Promise<PgPooledConnection> {
  const c = await pool.connect();
  if (!guarded.has(c)) {
    guarded.add(c);
    c.on("error", () => undefined);
  }
  return c;
}

/** A connection outside the pool, not yet connected; null when there is no `Client` class. */
export function createConnection(target: PgTarget, opts: ResolvedPostgresOptions, Client: PgDriver["Client"]): PgStandaloneConnection | null {
  return Client === undefined ? null : new Client(clientConfig(target, opts));
}
