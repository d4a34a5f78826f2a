/**
 * Driver benchmark for the PostgreSQL store: node-postgres (`pg`) versus postgres.js (`postgres`),
 * measured side by side in one run on the store's representative write transaction:
 *
 *   BEGIN; advisory xact lock; INSERT … ON CONFLICT DO NOTHING; SELECT; UPDATE; INSERT journal row; COMMIT
 *
 * with 1 and 8 concurrent callers (each driver with a pool of 8 connections), in two commit modes:
 * `durable` (the server's synchronous_commit, as production runs) and `async` (synchronous_commit
 * off, which leaves the driver and round-trip cost that differ between drivers). Drivers run back
 * to back in rotating order within every round; the report gives per-driver medians over the
 * rounds and, the figures to read, medians of the per-round paired ratios (bench/results/pg-driver.json).
 *
 * Run: npx tsx bench/pg-driver.ts   (env: BENCH_ROUNDS, BENCH_TX; server as in tests/helpers/pg.ts)
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import postgres from "postgres";
import { freshDatabase, pgServer, stopPgServer } from "../tests/helpers/pg.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const TX_PER_ROUND = Number(process.env.BENCH_TX ?? 600);
const CONCURRENCY = [1, 8] as const;
const POOL_MAX = 8;

const SCHEMA = [
  `CREATE TABLE bench_inv (
     tenant_id text NOT NULL, space_id text NOT NULL, invocation_id text NOT NULL,
     idempotency_key text NOT NULL, status text NOT NULL, updated_at bigint NOT NULL, doc json NOT NULL,
     PRIMARY KEY (tenant_id, space_id, invocation_id), UNIQUE (tenant_id, space_id, idempotency_key))`,
  `CREATE TABLE bench_journal (
     tenant_id text NOT NULL, space_id text NOT NULL, seq bigint NOT NULL, id text NOT NULL, doc json NOT NULL,
     PRIMARY KEY (tenant_id, space_id, seq), UNIQUE (tenant_id, space_id, id))`,
];

const SQL = {
  lock: "SELECT pg_advisory_xact_lock($1::bigint)",
  insert:
    "INSERT INTO bench_inv (tenant_id, space_id, invocation_id, idempotency_key, status, updated_at, doc) " +
    "VALUES ($1, $2, $3, $4, 'queued', $5, $6) ON CONFLICT DO NOTHING",
  select: "SELECT status, doc FROM bench_inv WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3",
  update: "UPDATE bench_inv SET status = 'running', updated_at = $4, doc = $5 WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3",
  journal: "INSERT INTO bench_journal (tenant_id, space_id, seq, id, doc) VALUES ($1, $2, $3, $4, $5)",
};

/** One unit of work: the parameters of one transaction. */
interface Work {
  tenant: string;
  space: string;
  id: string;
  key: string;
  lockKey: string;
  seq: number;
  doc: string;
  now: number;
}

/** A driver under test: runs one transaction; `end` closes its pool. */
interface Driver {
  name: string;
  tx(w: Work): Promise<void>;
  end(): Promise<void>;
}

/** `durable`: the server's synchronous_commit (each COMMIT waits for its WAL flush); `async`: off. */
const MODES = ["durable", "async"] as const;
type Mode = (typeof MODES)[number];

function pgDriver(url: string, prepared: boolean, mode: Mode): Driver {
  const pool = new pg.Pool({ connectionString: url, max: POOL_MAX, ...(mode === "async" ? { options: "-c synchronous_commit=off" } : {}) });
  pool.on("error", () => undefined);
  const q = (name: keyof typeof SQL, values: unknown[]): pg.QueryConfig => (prepared ? { name: `bench_${name}`, text: SQL[name], values } : { text: SQL[name], values });
  return {
    name: prepared ? "pg (named prepared)" : "pg",
    async tx(w) {
      const c = await pool.connect();
      try {
        await c.query("BEGIN");
        await c.query(q("lock", [w.lockKey]));
        await c.query(q("insert", [w.tenant, w.space, w.id, w.key, w.now, w.doc]));
        const r = await c.query(q("select", [w.tenant, w.space, w.id]));
        if (r.rowCount !== 1) throw new Error("row missing");
        await c.query(q("update", [w.tenant, w.space, w.id, w.now + 1, w.doc]));
        await c.query(q("journal", [w.tenant, w.space, w.seq, `${w.id}:j`, w.doc]));
        await c.query("COMMIT");
        c.release();
      } catch (e) {
        await c.query("ROLLBACK").catch(() => undefined);
        c.release();
        throw e;
      }
    },
    end: () => pool.end(),
  };
}

function postgresJsDriver(url: string, mode: Mode): Driver {
  const sql = postgres(url, { max: POOL_MAX, onnotice: () => undefined, ...(mode === "async" ? { connection: { synchronous_commit: "off" } } : {}) });
  return {
    name: "postgres.js",
    async tx(w) {
      // Tagged templates: postgres.js's idiomatic API, prepared and cached per connection.
      await sql.begin(async (t) => {
        await t`SELECT pg_advisory_xact_lock(${w.lockKey}::bigint)`;
        await t`INSERT INTO bench_inv (tenant_id, space_id, invocation_id, idempotency_key, status, updated_at, doc)
                VALUES (${w.tenant}, ${w.space}, ${w.id}, ${w.key}, 'queued', ${w.now}, ${w.doc}::json) ON CONFLICT DO NOTHING`;
        const r = await t`SELECT status, doc FROM bench_inv WHERE tenant_id = ${w.tenant} AND space_id = ${w.space} AND invocation_id = ${w.id}`;
        if (r.length !== 1) throw new Error("row missing");
        await t`UPDATE bench_inv SET status = 'running', updated_at = ${w.now + 1}, doc = ${w.doc}::json
                WHERE tenant_id = ${w.tenant} AND space_id = ${w.space} AND invocation_id = ${w.id}`;
        await t`INSERT INTO bench_journal (tenant_id, space_id, seq, id, doc) VALUES (${w.tenant}, ${w.space}, ${w.seq}, ${`${w.id}:j`}, ${w.doc}::json)`;
      });
    },
    end: () => sql.end({ timeout: 5 }),
  };
}

/** Runs `total` transactions with `callers` concurrent callers; each caller has its own scope. */
async function runRound(driver: Driver, callers: number, total: number, tag: string): Promise<{ txPerSec: number; p50Ms: number; p99Ms: number }> {
  const doc = JSON.stringify({ request: { params: { amount: 10, currency: "EUR", tags: ["a", "b"] } }, pad: randomBytes(256).toString("hex") });
  const latencies: number[] = [];
  const perCaller = Math.ceil(total / callers);
  const start = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      const tenant = `bench-${tag}-${c}`;
      for (let i = 0; i < perCaller; i++) {
        const w: Work = { tenant, space: "s", id: `inv-${i}`, key: `key-${i}`, lockKey: String(BigInt(c) * 1_000_000n + BigInt(i)), seq: i + 1, doc, now: 1_700_000_000_000 + i };
        const t0 = performance.now();
        await driver.tx(w);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { txPerSec: latencies.length / elapsed, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99) };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

async function main(): Promise<void> {
  const server = await pgServer();
  const db = await freshDatabase({ empty: true });
  const setup = new pg.Client({ connectionString: db.url });
  await setup.connect();
  for (const s of SCHEMA) await setup.query(s);
  const serverVersion = (await setup.query<{ server_version: string }>("SHOW server_version")).rows[0]?.server_version;
  const syncCommit = (await setup.query<{ synchronous_commit: string }>("SHOW synchronous_commit")).rows[0]?.synchronous_commit;
  await setup.end();

  const names = ["pg", "pg (named prepared)", "postgres.js"] as const;
  // tx/s per mode, callers and driver, one entry per round (index = round).
  const tps = new Map<string, number[]>();
  const lat = new Map<string, { p50: number[]; p99: number[] }>();
  const key = (mode: Mode, callers: number, driver: string): string => `${mode}|${callers}|${driver}`;
  try {
    for (const mode of MODES) {
      const drivers: Driver[] = [pgDriver(db.url, false, mode), pgDriver(db.url, true, mode), postgresJsDriver(db.url, mode)];
      try {
        // Warm-up: connections, prepared statements, JIT.
        for (const d of drivers) for (const c of CONCURRENCY) await runRound(d, c, 200, `warm-${mode}-${d.name.length}-${c}-${randomBytes(3).toString("hex")}`);
        for (let r = 0; r < ROUNDS; r++) {
          for (const c of CONCURRENCY) {
            // Rotate the order each round: drift (checkpoints, other load) spreads evenly.
            for (let k = 0; k < drivers.length; k++) {
              const d = drivers[(r + k) % drivers.length]!;
              const res = await runRound(d, c, TX_PER_ROUND, `${mode}-${r}-${k}-${c}-${randomBytes(3).toString("hex")}`);
              const id = key(mode, c, d.name);
              tps.set(id, [...(tps.get(id) ?? []), res.txPerSec]);
              const l = lat.get(id) ?? { p50: [], p99: [] };
              l.p50.push(res.p50Ms);
              l.p99.push(res.p99Ms);
              lat.set(id, l);
            }
          }
        }
      } finally {
        for (const d of drivers) await d.end();
      }
    }
  } finally {
    await db.drop();
  }

  const results = MODES.flatMap((mode) =>
    CONCURRENCY.flatMap((callers) =>
      names.map((driver) => {
        const id = key(mode, callers, driver);
        const runs = tps.get(id) ?? [];
        const l = lat.get(id) ?? { p50: [], p99: [] };
        return { mode, callers, driver, txPerSecMedian: round2(median(runs)), p50MsMedian: round2(median(l.p50)), p99MsMedian: round2(median(l.p99)), txPerSecRuns: runs.map(round2) };
      }),
    ),
  );
  // Paired ratios: within one round the drivers ran back to back, so the ratio of their rates
  // cancels most of the machine's drift; the median over rounds is the figure to read.
  const paired = (mode: Mode, callers: number, a: string, b: string): number => {
    const xa = tps.get(key(mode, callers, a)) ?? [];
    const xb = tps.get(key(mode, callers, b)) ?? [];
    return round2(median(xa.map((x, i) => x / (xb[i] ?? NaN))));
  };
  const ratios = MODES.flatMap((mode) =>
    CONCURRENCY.map((callers) => ({
      mode,
      callers,
      postgresJsOverPg: paired(mode, callers, "postgres.js", "pg"),
      postgresJsOverPgPrepared: paired(mode, callers, "postgres.js", "pg (named prepared)"),
      pgPreparedOverPg: paired(mode, callers, "pg (named prepared)", "pg"),
    })),
  );
  const out = {
    bench: "pg-driver",
    command: "npx tsx bench/pg-driver.ts",
    at: new Date().toISOString(),
    node: process.version,
    server: { source: server.source, version: serverVersion, synchronousCommit: syncCommit, loadAverageAtEnd: loadavg().map(round2), cpus: cpus().length },
    workload: "BEGIN; pg_advisory_xact_lock; INSERT ON CONFLICT DO NOTHING; SELECT; UPDATE; INSERT journal; COMMIT",
    modes: { durable: "server default synchronous_commit (on): each COMMIT waits for its WAL flush", async: "synchronous_commit=off: isolates driver and round-trip cost" },
    rounds: ROUNDS,
    txPerRound: TX_PER_ROUND,
    poolMax: POOL_MAX,
    drivers: { pg: versionOf("pg"), postgres: versionOf("postgres") },
    results,
    ratios,
  };
  const file = join(dirname(fileURLToPath(import.meta.url)), "results", "pg-driver.json");
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(out, null, 2) + "\n");
  console.log(JSON.stringify({ results: results.map(({ txPerSecRuns: _runs, ...r }) => r), ratios }, null, 2));
  console.log(`written ${file}`);
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readPkg(pkg)) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

function readPkg(pkg: string): string {
  // Resolved from this file, as Node resolves the imports above.
  return readFileSync(fileURLToPath(new URL(`../node_modules/${pkg}/package.json`, import.meta.url)), "utf8");
}

try {
  await main();
} finally {
  await stopPgServer();
}
