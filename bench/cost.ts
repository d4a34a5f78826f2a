/**
 * What one invocation costs on PostgreSQL, on each side, beside graphile-worker (`npm run bench --
 * cost`): where the throughput of `npm run bench -- host` goes on a machine whose cores the client
 * processes and the server share.
 *
 * One process submits and works (Writ: a host and its worker, concurrency 8; graphile-worker:
 * `addJob` and a runner, concurrency 8), 16 items in flight, a one-step no-op action under a real
 * allow policy (bench/host.ts's action) or a no-op task. Measured over the same number of items
 * after a warm-up, in interleaved rounds:
 *
 * - CPU time of this Node process per item (`process.cpuUsage`, user and system);
 * - CPU time of the PostgreSQL backends serving it per item (utime + stime of their processes, read
 *   from /proc by the pids `pg_stat_activity` gives for the pool's application name; the server's
 *   background processes, WAL writer included, are not counted);
 * - write-ahead log per item (`pg_current_wal_lsn()` before and after), and for Writ, with
 *   `pg_walinspect` where the server has it, the log per relation (which tables and indexes write
 *   what).
 *
 * CPU time per item is less sensitive to a busy machine than a rate, but not immune (a preempted
 * process spins and misses caches): compare the two systems within one run. Linux only (/proc);
 * the server must be on this machine. Written to bench/results/cost.json.
 */
import { loadavg } from "node:os";
import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";
import { generateSigningKey } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull, stopPgServer } from "../tests/helpers/pg.js";
import { AUTHORITY_REF, BENCH_ACTION, benchActionHost } from "./host.js";
import { median, procCpuMs } from "./lib.js";

const WINDOW = 16;
const CONCURRENCY = 8;
const APP = "writ-bench-cost";
const ITEMS = Number(process.env.WRIT_BENCH_COST_ITEMS ?? 1500);
const WARM = 300;

interface Side {
  submit(i: number): Promise<unknown>;
  stop(): Promise<void>;
}

export interface CostRound {
  perSec: number;
  nodeCpuMs: number;
  nodeSysMs: number;
  pgCpuMs: number;
  walBytes: number;
}

export interface CostResult {
  items: number;
  rounds: Array<{ writ: CostRound; graphile: CostRound }>;
  medians: { writ: CostRound; graphile: CostRound };
  /** Writ / graphile-worker, per item (medians). */
  ratios: { nodeCpu: number; pgCpu: number; totalCpu: number; wal: number };
  /** Writ's write-ahead log per item by relation (bytes, records), largest first; null without pg_walinspect. */
  walByRelation: Array<{ relation: string; records: number; bytes: number }> | null;
  /**
   * The same log by record type (`pg_get_wal_stats`): records, their bytes and their full-page
   * images' bytes per item, largest first (speculative inserts' confirmations, row locks and
   * multixacts show here, not by relation); null without pg_walinspect.
   */
  walByRecordType: Array<{ type: string; records: number; bytes: number; fpiBytes: number }> | null;
  loadavg: number[];
}

async function backendsCpuMs(admin: pg.Pool): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1", [APP]);
  return rows.reduce((t, r) => t + (procCpuMs(r.pid) ?? 0), 0); // a backend gone meanwhile counts 0
}

async function walLsn(admin: pg.Pool): Promise<string> {
  return (await admin.query<{ l: string }>("SELECT pg_current_wal_lsn()::text AS l")).rows[0]!.l;
}

async function walBetween(admin: pg.Pool, a: string, b: string): Promise<number> {
  return Number((await admin.query<{ n: string }>("SELECT pg_wal_lsn_diff($2, $1) AS n", [a, b])).rows[0]!.n);
}

/** Completions counted, with a wait for the n-th. */
function counter(): { inc(): void; atLeast(n: number): Promise<void> } {
  let n = 0;
  const waiters: Array<() => void> = [];
  return {
    inc() {
      n++;
      for (const w of waiters.splice(0)) w();
    },
    async atLeast(k) {
      while (n < k) await new Promise<void>((r) => waiters.push(r));
    },
  };
}

async function openWrit(url: string, done: () => void): Promise<Side> {
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 6, application_name: APP });
  pool.on("error", () => undefined);
  const store = postgresStore({ pool }, { applicationName: APP });
  await store.migrate();
  const host = benchActionHost(store, generateSigningKey({ kid: "bench-cost" }), {
    succeeded: done,
    ended: (id, why) => console.error(`cost bench: invocation ${id} ended ${why}`),
  });
  const scope = { tenantId: "bench", spaceId: "s" };
  await host.authorities.create(scope, { authorityRef: AUTHORITY_REF, principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [BENCH_ACTION.id] });
  const worker = host.worker({ concurrency: CONCURRENCY });
  worker.start();
  await store.listening();
  return {
    submit: (i) =>
      host.submit({ ...scope, action: BENCH_ACTION.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: AUTHORITY_REF, params: { n: i }, idempotencyKey: `cost-${i}` }),
    async stop() {
      await worker.stop();
      await store.close();
      await pool.end();
    },
  };
}

async function openGraphile(url: string, done: () => void): Promise<Side> {
  const pool = new pg.Pool({ connectionString: url, max: CONCURRENCY + 6, application_name: APP });
  pool.on("error", () => undefined);
  pool.on("connect", (client) => client.on("error", () => undefined));
  const utils = await makeWorkerUtils({ pgPool: pool });
  await utils.migrate();
  const runner = await run({ pgPool: pool, concurrency: CONCURRENCY, noHandleSignals: true, logger: new Logger(() => () => undefined), taskList: { noop: async () => done() } });
  return {
    submit: (i) => utils.addJob("noop", { n: i }),
    async stop() {
      await runner.stop();
      await utils.release();
      await pool.end();
    },
  };
}

/** Runs `count` items with WINDOW in flight (each submit waits until fewer than WINDOW are unfinished). */
async function drive(side: Side, done: ReturnType<typeof counter>, from: number, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: WINDOW }, async () => {
      while (next < count) {
        const i = from + next++;
        await done.atLeast(i - WINDOW);
        await side.submit(i);
      }
    }),
  );
  await done.atLeast(from + count);
}

type WalDetail = Pick<CostResult, "walByRelation" | "walByRecordType">;

async function measure(kind: "writ" | "graphile", url: string, admin: pg.Pool, walDetail: boolean): Promise<{ round: CostRound; wal: WalDetail | null }> {
  const done = counter();
  const side = kind === "writ" ? await openWrit(url, () => done.inc()) : await openGraphile(url, () => done.inc());
  try {
    await drive(side, done, 0, WARM);
    const c0 = process.cpuUsage();
    const b0 = await backendsCpuMs(admin);
    const w0 = await walLsn(admin);
    const t0 = performance.now();
    await drive(side, done, WARM, ITEMS);
    const t1 = performance.now();
    const c = process.cpuUsage(c0);
    const b1 = await backendsCpuMs(admin);
    const w1 = await walLsn(admin);
    const round: CostRound = {
      perSec: (ITEMS * 1000) / (t1 - t0),
      nodeCpuMs: (c.user + c.system) / 1000 / ITEMS,
      nodeSysMs: c.system / 1000 / ITEMS,
      pgCpuMs: (b1 - b0) / ITEMS,
      walBytes: (await walBetween(admin, w0, w1)) / ITEMS,
    };
    return { round, wal: walDetail ? await walDetailOf(admin, w0, w1) : null };
  } finally {
    await side.stop();
  }
}

/** The log between two positions by relation and by record type (pg_walinspect), per item; null when the extension is missing. */
async function walDetailOf(admin: pg.Pool, from: string, to: string): Promise<WalDetail | null> {
  try {
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
  } catch {
    return null;
  }
  const byType = await admin.query<{ k: string; n: string; bytes: string; fpi: string }>(
    `SELECT "resource_manager/record_type" AS k, count AS n, record_size AS bytes, fpi_size AS fpi
       FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 20`,
    [from, to],
  );
  const walByRecordType = byType.rows.map((r) => ({ type: r.k, records: Number(r.n) / ITEMS, bytes: Number(r.bytes) / ITEMS, fpiBytes: Number(r.fpi) / ITEMS }));
  const { rows } = await admin.query<{ rel: string; n: string; bytes: string }>(
    `WITH r AS (SELECT record_length, resource_manager, (regexp_match(block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid AS fn FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn))
     SELECT coalesce(c.relname, r.resource_manager) AS rel, count(*) AS n, sum(record_length) AS bytes
       FROM r LEFT JOIN pg_class c ON c.relfilenode = r.fn GROUP BY 1 ORDER BY 3 DESC LIMIT 30`,
    [from, to],
  );
  return { walByRelation: rows.map((r) => ({ relation: r.rel, records: Number(r.n) / ITEMS, bytes: Number(r.bytes) / ITEMS })), walByRecordType };
}

function medianRound(rs: CostRound[]): CostRound {
  return {
    perSec: median(rs.map((r) => r.perSec)),
    nodeCpuMs: median(rs.map((r) => r.nodeCpuMs)),
    nodeSysMs: median(rs.map((r) => r.nodeSysMs)),
    pgCpuMs: median(rs.map((r) => r.pgCpuMs)),
    walBytes: median(rs.map((r) => r.walBytes)),
  };
}

export async function benchCost(rounds: number): Promise<CostResult | null> {
  if ((await pgServerOrNull()) === null) return null;
  const load = loadavg();
  const rs: CostResult["rounds"] = [];
  let wal: WalDetail = { walByRelation: null, walByRecordType: null };
  try {
    for (let i = 0; i < rounds; i++) {
      // A fresh database per system and round: neither pays for the other's history.
      const out = {} as { writ: CostRound; graphile: CostRound };
      for (const kind of i % 2 === 0 ? (["writ", "graphile"] as const) : (["graphile", "writ"] as const)) {
        const db = await freshDatabase({ empty: true });
        const admin = new pg.Pool({ connectionString: db.url, max: 1, application_name: "writ-bench-cost-admin" });
        admin.on("error", () => undefined);
        try {
          const m = await measure(kind, db.url, admin, kind === "writ" && i === 0);
          out[kind] = m.round;
          if (m.wal !== null) wal = m.wal;
        } finally {
          await admin.end();
          await db.drop();
        }
      }
      rs.push(out);
    }
  } finally {
    await stopPgServer();
  }
  const writ = medianRound(rs.map((r) => r.writ));
  const graphile = medianRound(rs.map((r) => r.graphile));
  return {
    items: ITEMS,
    rounds: rs,
    medians: { writ, graphile },
    ratios: {
      nodeCpu: writ.nodeCpuMs / graphile.nodeCpuMs,
      pgCpu: writ.pgCpuMs / graphile.pgCpuMs,
      totalCpu: (writ.nodeCpuMs + writ.pgCpuMs) / (graphile.nodeCpuMs + graphile.pgCpuMs),
      wal: writ.walBytes / graphile.walBytes,
    },
    ...wal,
    loadavg: [...load, ...loadavg()],
  };
}
