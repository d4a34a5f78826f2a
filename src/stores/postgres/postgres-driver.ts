/**
 * The slice of node-postgres (`pg`) the store calls. A pool passed in by the application only has
 * to offer this much; the store builds its own `pg.Pool` from a URL otherwise.
 *
 * Why `pg` and not postgres.js: see docs/postgres-driver.md (measured with bench/pg-driver.ts).
 */
import pg from "pg";
import type { ResolvedPostgresOptions } from "./postgres-options.js";

/** A statement to run: `name` makes it a prepared statement, parsed once per connection. */
export interface PgQuery {
  text: string;
  values?: unknown[];
  name?: string;
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

function clientConfig(url: string, opts: ResolvedPostgresOptions): pg.ClientConfig {
  return { connectionString: url, connectionTimeoutMillis: opts.connectionTimeoutMs, application_name: opts.applicationName };
}

/** A `pg.Pool` for `url`. Idle-connection errors are absorbed (the pool drops such connections). */
export function createPool(url: string, opts: ResolvedPostgresOptions): OwnedPgPool {
  const pool = new pg.Pool({ ...clientConfig(url, opts), max: opts.max, idleTimeoutMillis: opts.idleTimeoutMs, allowExitOnIdle: true });
  pool.on("error", () => undefined);
  return pool;
}

/** A connection outside the pool, not yet connected. */
export function createConnection(url: string, opts: ResolvedPostgresOptions): PgStandaloneConnection {
  return new pg.Client(clientConfig(url, opts));
}
