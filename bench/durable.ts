/**
 * Durable boundary throughput (issue "Durable stores"), measured side by side in one run, in
 * interleaved rounds (medians):
 *
 * - the machine's raw fsync rate: 4 KiB written, then fsync, in a loop, on a file in the same
 *   directory as the SQLite database (fdatasync too, for reference; better-sqlite3 builds SQLite
 *   without HAVE_FDATASYNC, so SQLite's syncs are fsync);
 * - the raw Ed25519 verify rate (every execution verifies one decision);
 * - boundary executions per second (no-op connector, fresh request and decision each) on SQLite
 *   (WAL, synchronous=FULL) with group commit, and without it for comparison, 32 callers in flight;
 * - the same on PostgreSQL (a scratch database on the test server, see tests/helpers/pg.ts) with
 *   8 callers and a pool of 8.
 *
 * Goals: sqlite/verify >= 0.5, postgres/verify >= 0.4. Written to bench/results/durable.json.
 */
import { closeSync, fdatasyncSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { sqliteStore } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull, stopPgServer, type FreshDatabase } from "../tests/helpers/pg.js";
import { boundaryRig, rawVerifyRate, type BoundaryRig } from "./boundary.js";
import { median } from "./lib.js";

export const DURABLE_GOALS = { sqliteOverVerify: 0.5, postgresOverVerify: 0.4 } as const;
const SQLITE_CALLERS = 32;
const PG_CALLERS = 8;
const PG_POOL = 8;
/** Target length of one timed run of one configuration (the count is fixed after warm-up). */
const RUN_MS = 1_000;
const PROBE_MS = 500;

/** Syncs per second: 4 KiB written at the next offset of a preallocated 4 MiB file, then synced. */
export function rawSyncRate(dir: string, ms: number, sync: (fd: number) => void): number {
  const file = join(dir, "sync-probe.bin");
  const fd = openSync(file, "w");
  const page = Buffer.alloc(4096, 0x5a);
  const pages = 1024;
  try {
    for (let i = 0; i < pages; i++) writeSync(fd, page, 0, page.length, i * page.length);
    fsyncSync(fd);
    let n = 0;
    const t0 = performance.now();
    let t = t0;
    while (t - t0 < ms) {
      writeSync(fd, page, 0, page.length, (n % pages) * page.length);
      sync(fd);
      n++;
      t = performance.now();
    }
    return (n * 1000) / (t - t0);
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
}

interface Round {
  fsync: number;
  fdatasync: number;
  verify: number;
  sqliteGroup: number;
  sqliteNoGroup: number;
  postgres: number | null;
  /** PostgreSQL with the callers spread over as many scopes (one hash chain each). */
  postgresScopes: number | null;
  /** Logical transactions per physical COMMIT in the group-commit run. */
  sqliteBatch: number;
}

export interface DurableResult {
  rounds: Round[];
  callers: { sqlite: number; postgres: number; postgresPool: number };
  executionsPerRun: { sqliteGroup: number; sqliteNoGroup: number; postgres: number | null; postgresScopes: number | null };
  medians: { fsyncPerSec: number; fdatasyncPerSec: number; verifyPerSec: number; sqliteGroupPerSec: number; sqliteNoGroupPerSec: number; postgresPerSec: number | null; postgresScopesPerSec: number | null; sqliteTxPerCommit: number };
  ratios: { sqliteOverVerify: number; sqliteNoGroupOverVerify: number; postgresOverVerify: number | null; postgresScopesOverVerify: number | null; sqliteOverFsync: number; sqliteNoGroupOverFsync: number };
  goals: typeof DURABLE_GOALS;
  postgresServer: string | null;
  /** The machine: every figure shares it, so ratios hold up better than rates under load. */
  machine: { cpus: number; loadavgBefore: number[]; loadavgAfter: number[] };
}

/**
 * Warms `rig` up (JIT, caches, connections), then finds how many executions fill about RUN_MS:
 * the measuring run doubles until it lasts at least a third of that, so a cold start cannot
 * shrink the count.
 */
async function calibrate(rig: BoundaryRig, concurrency: number): Promise<number> {
  await rig.run(concurrency * 4, concurrency);
  for (let n = concurrency * 4; ; n *= 2) {
    const t0 = performance.now();
    const rate = await rig.run(n, concurrency);
    if (performance.now() - t0 >= RUN_MS / 3 || n >= 100_000) return Math.max(concurrency * 12, Math.round((rate * RUN_MS) / 1000));
  }
}

export async function benchDurable(rounds: number): Promise<DurableResult> {
  const loadavgBefore = loadavg();
  const dir = mkdtempSync(join(tmpdir(), "writ-bench-durable-"));
  const server = await pgServerOrNull();
  let db: FreshDatabase | null = null;
  const rigs: BoundaryRig[] = [];
  try {
    const group = sqliteStore({ path: join(dir, "group.db"), synchronous: "FULL", groupCommit: true });
    const alone = sqliteStore({ path: join(dir, "alone.db"), synchronous: "FULL", groupCommit: false });
    const sqliteGroup = await boundaryRig(group);
    const sqliteNoGroup = await boundaryRig(alone);
    rigs.push(sqliteGroup, sqliteNoGroup);
    let pgRig: BoundaryRig | null = null;
    let pgMulti: BoundaryRig | null = null;
    if (server !== null) {
      db = await freshDatabase();
      pgRig = await boundaryRig(postgresStore({ url: db.url }, { max: PG_POOL, applicationName: "writ-bench-durable" }));
      pgMulti = await boundaryRig(postgresStore({ url: db.url }, { max: PG_POOL, applicationName: "writ-bench-durable" }), PG_CALLERS);
      rigs.push(pgRig, pgMulti);
    }
    const n = {
      sqliteGroup: await calibrate(sqliteGroup, SQLITE_CALLERS),
      sqliteNoGroup: await calibrate(sqliteNoGroup, SQLITE_CALLERS),
      postgres: pgRig ? await calibrate(pgRig, PG_CALLERS) : null,
      postgresScopes: pgMulti ? await calibrate(pgMulti, PG_CALLERS) : null,
    };
    // Each round measures every figure once; the order rotates from round to round so that drift
    // (writeback, autovacuum, other load) spreads over all of them.
    const measures: Array<(r: Round) => Promise<void>> = [
      async (r) => void (r.fsync = rawSyncRate(dir, PROBE_MS, fsyncSync)),
      async (r) => void (r.fdatasync = rawSyncRate(dir, PROBE_MS, fdatasyncSync)),
      async (r) => void (r.verify = rawVerifyRate(PROBE_MS)),
      async (r) => {
        const before = group.stats();
        r.sqliteGroup = await sqliteGroup.run(n.sqliteGroup, SQLITE_CALLERS);
        const after = group.stats();
        r.sqliteBatch = (after.logicalCommits - before.logicalCommits) / Math.max(1, after.commits - before.commits);
      },
      async (r) => void (r.sqliteNoGroup = await sqliteNoGroup.run(n.sqliteNoGroup, SQLITE_CALLERS)),
      async (r) => void (r.postgres = pgRig && n.postgres ? await pgRig.run(n.postgres, PG_CALLERS) : null),
      async (r) => void (r.postgresScopes = pgMulti && n.postgresScopes ? await pgMulti.run(n.postgresScopes, PG_CALLERS) : null),
    ];
    const out: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      const r: Round = { fsync: 0, fdatasync: 0, verify: 0, sqliteGroup: 0, sqliteNoGroup: 0, postgres: null, postgresScopes: null, sqliteBatch: 0 };
      for (let j = 0; j < measures.length; j++) await measures[(i + j) % measures.length]!(r);
      out.push(r);
    }
    const med = (f: (r: Round) => number): number => median(out.map(f));
    const pgRounds = out.filter((r) => r.postgres !== null);
    return {
      rounds: out,
      callers: { sqlite: SQLITE_CALLERS, postgres: PG_CALLERS, postgresPool: PG_POOL },
      executionsPerRun: n,
      medians: {
        fsyncPerSec: med((r) => r.fsync),
        fdatasyncPerSec: med((r) => r.fdatasync),
        verifyPerSec: med((r) => r.verify),
        sqliteGroupPerSec: med((r) => r.sqliteGroup),
        sqliteNoGroupPerSec: med((r) => r.sqliteNoGroup),
        postgresPerSec: pgRounds.length > 0 ? median(pgRounds.map((r) => r.postgres!)) : null,
        postgresScopesPerSec: pgRounds.length > 0 ? median(pgRounds.map((r) => r.postgresScopes!)) : null,
        sqliteTxPerCommit: med((r) => r.sqliteBatch),
      },
      ratios: {
        sqliteOverVerify: med((r) => r.sqliteGroup / r.verify),
        sqliteNoGroupOverVerify: med((r) => r.sqliteNoGroup / r.verify),
        postgresOverVerify: pgRounds.length > 0 ? median(pgRounds.map((r) => r.postgres! / r.verify)) : null,
        postgresScopesOverVerify: pgRounds.length > 0 ? median(pgRounds.map((r) => r.postgresScopes! / r.verify)) : null,
        sqliteOverFsync: med((r) => r.sqliteGroup / r.fsync),
        sqliteNoGroupOverFsync: med((r) => r.sqliteNoGroup / r.fsync),
      },
      goals: DURABLE_GOALS,
      postgresServer: server?.source ?? null,
      machine: { cpus: availableParallelism(), loadavgBefore, loadavgAfter: loadavg() },
    };
  } finally {
    await Promise.allSettled(rigs.map((r) => r.close()));
    if (db !== null) await db.drop();
    await stopPgServer();
    rmSync(dir, { recursive: true, force: true });
  }
}
