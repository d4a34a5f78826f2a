/**
 * CPU profile of boundary.execute on the SQLite store as bench/durable.ts builds it (WAL,
 * synchronous=FULL, group commit, 32 callers, no-op connector; bench/boundary.ts's rig):
 * `node --import tsx scripts/prof-durable-sqlite.ts [out.cpuprofile]`, then
 * `node scripts/prof-top.cjs out.cpuprofile 40 incl 80`.
 *
 * Prints executions per second of the profiled run, the main thread's CPU time per execution (from
 * /proc/self/task/<pid>/stat, Linux only), SQLite statements run per execution (by kind: run / get /
 * all, counted by a driver wrapper, BEGIN/COMMIT/SAVEPOINT included), logical transactions per
 * execution and logical transactions per physical COMMIT.
 * `WRIT_PROF_OFF=1` measures without the profiler; `WRIT_PROF_N` sets the executions (default
 * 6000); `WRIT_PROF_CALLERS` the callers (default 32); `WRIT_PROF_INTERVAL_US` the sampling interval.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { boundaryRig } from "../bench/boundary.js";
import { sqliteStore } from "../src/index.js";
import type { SqliteDriver } from "../src/stores/sqlite/sqlite-driver.js";
import { mainThreadCpuMs } from "../bench/lib.js";

const out = process.argv[2] ?? "durable-sqlite.cpuprofile";
const n = Number(process.env.WRIT_PROF_N ?? 6000);
const callers = Number(process.env.WRIT_PROF_CALLERS ?? 32);
const profiling = process.env.WRIT_PROF_OFF !== "1";

/** Statement counts by kind, and by SQL text. */
const counts = { run: 0, get: 0, all: 0, exec: 0 };
const bySql = new Map<string, number>();
/** Wall time (ms) spent in each statement's calls, by SQL text. */
const msBySql = new Map<string, number>();
let counting = false;
type Stmt = { run: (...a: unknown[]) => unknown; get: (...a: unknown[]) => unknown; all: (...a: unknown[]) => unknown; pluck: (t?: boolean) => unknown };
const Base = createRequire(import.meta.url)("better-sqlite3") as new (path: string, options?: object) => { prepare(sql: string): Stmt; exec(sql: string): unknown };
/** better-sqlite3 with every statement call counted (while `counting`). */
const CountingDriver = function (path: string, options?: object) {
  const db = new Base(path, options);
  // Experiments: `WRIT_PROF_PRAGMA="cache_size=-65536;wal_autocheckpoint=4000"` (applied at open).
  for (const p of (process.env.WRIT_PROF_PRAGMA ?? "").split(";").filter(Boolean)) (db as unknown as { pragma(s: string): unknown }).pragma(p);
  const prepare = db.prepare.bind(db);
  db.prepare = (sql: string) => {
    const s = prepare(sql);
    for (const k of ["run", "get", "all"] as const) {
      const f = s[k].bind(s);
      s[k] = (...a: unknown[]) => {
        if (!counting) return f(...a);
        counts[k]++;
        bySql.set(sql, (bySql.get(sql) ?? 0) + 1);
        const t0 = performance.now();
        try {
          return f(...a);
        } finally {
          msBySql.set(sql, (msBySql.get(sql) ?? 0) + performance.now() - t0);
        }
      };
    }
    return s;
  };
  const exec = db.exec.bind(db);
  db.exec = (sql: string) => {
    if (counting) counts.exec++;
    return exec(sql);
  };
  return db;
} as unknown as SqliteDriver;


const dir = mkdtempSync(join(tmpdir(), "writ-prof-durable-"));
const synchronous = (process.env.WRIT_PROF_SYNCHRONOUS ?? "FULL") as "FULL" | "NORMAL";
const store = sqliteStore({ path: join(dir, "group.db"), synchronous, groupCommit: true, driver: CountingDriver });
const rig = await boundaryRig(store);
await rig.run(callers * 40, callers);
const session = new Session();
if (profiling) {
  session.connect();
  await session.post("Profiler.enable");
  if (process.env.WRIT_PROF_INTERVAL_US) await session.post("Profiler.setSamplingInterval", { interval: Number(process.env.WRIT_PROF_INTERVAL_US) });
}
let c0 = 0;
const s0 = store.stats();
const rate = await rig.run(n, callers, async () => {
  if (profiling) await session.post("Profiler.start");
  counting = true;
  c0 = mainThreadCpuMs();
});
const cpu = mainThreadCpuMs() - c0;
counting = false;
const s1 = store.stats();
if (profiling) {
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(out, JSON.stringify(profile));
}
await rig.close();
rmSync(dir, { recursive: true, force: true });
const per = (x: number): string => (x / n).toFixed(2);
const total = counts.run + counts.get + counts.all;
console.log(
  `${Math.round(rate)}/s, main thread ${((cpu * 1000) / n).toFixed(0)} us CPU per execution, ` +
    `${per(total)} statements per execution (run ${per(counts.run)}, get ${per(counts.get)}, all ${per(counts.all)}, exec ${per(counts.exec)}), ` +
    `${per((s1.logicalCommits - s0.logicalCommits) + (s1.logicalRollbacks - s0.logicalRollbacks))} logical transactions per execution, ${((s1.logicalCommits - s0.logicalCommits) / Math.max(1, s1.commits - s0.commits)).toFixed(1)} logical transactions per COMMIT, ` +
    `${per(s1.commits - s0.commits)} COMMITs per execution${profiling ? ` -> ${out}` : ""}`,
);
if (process.env.WRIT_PROF_SQL === "1") {
  console.log("calls/exec  us/exec  statement");
  for (const [sql, c] of [...bySql].sort((a, b) => msBySql.get(b[0])! - msBySql.get(a[0])!)) {
    console.log(`${per(c).padStart(9)}  ${((msBySql.get(sql)! * 1000) / n).toFixed(1).padStart(7)}  ${sql.replace(/\s+/g, " ").slice(0, 120)}`);
  }
}
