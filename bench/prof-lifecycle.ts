/**
 * Where the data lifecycle's cost goes (bench/lifecycle.ts's loop, one mode at a time):
 * `WRIT_PROF_SECS=120 node --import tsx bench/prof-lifecycle.ts lifecycle|plain [out.cpuprofile]`.
 * A private PostgreSQL instance with production defaults (autovacuum on); the CPU profile of this
 * process covers the run after its first WRIT_PROF_WARM_S seconds (default 20, rounded up to a 10-s window). Prints the rate,
 * this process's CPU and the instance's CPU (every postgres process, autovacuum included) per
 * invocation over the profiled span (the instance's processes only), so the two modes can be compared side by side.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { directoryArchive, type CreateHostOptions } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { closedLoop, WINDOW_S } from "./closed-loop.js";
import { serverCpuMs } from "./lib.js";

const mode = process.argv[2] === "plain" ? "plain" : "lifecycle";
const out = process.argv[3] ?? `${mode}.cpuprofile`;
const seconds = Number(process.env.WRIT_PROF_SECS ?? 120);
const warm = Number(process.env.WRIT_PROF_WARM_S ?? 20);
const keepMs = 30_000;

// WRIT_PROF_SLOW_MS=n: auto_explain logs the plan of every statement slower than n ms; the log is
// copied to /tmp/writ-prof-slow.log at the end.
const slowMs = process.env.WRIT_PROF_SLOW_MS;
const inst = await startPgInstance(
  slowMs === undefined ? {} : { conf: ["shared_preload_libraries = 'auto_explain'", `auto_explain.log_min_duration = '${slowMs}ms'`, "auto_explain.log_nested_statements = on", "logging_collector = on", "log_directory = 'log'"] },
);
await inst.createDatabase("prof");
const store = postgresStore({ url: inst.url("prof") }, { max: 12 });
await store.migrate();
const dir = mkdtempSync(join(tmpdir(), "writ-prof-archive-"));
const host: Partial<CreateHostOptions> =
  mode === "lifecycle"
    ? { approvalTtlMs: keepMs / 2, retry: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 1000 }, retention: { invocationsMs: keepMs, replayWindowMs: keepMs }, archive: { target: directoryArchive(dir), keepLiveMs: keepMs } }
    : { retention: { enabled: false } };
// WRIT_PROF_ACTIVITY=1: every 250 ms, what the instance's busy backends wait on, printed per second.
const activity = process.env.WRIT_PROF_ACTIVITY === "1" ? new pg.Client({ connectionString: inst.url("prof") }) : null;
let sampler: ReturnType<typeof setInterval> | null = null;
if (activity !== null) {
  await activity.connect();
  const t0 = performance.now();
  let tally = new Map<string, number>();
  let ticks = 0;
  sampler = setInterval(() => {
    void activity
      .query<{ w: string; q: string }>("SELECT coalesce(wait_event_type || ':' || wait_event, 'cpu') AS w, left(regexp_replace(query, '\\s+', ' ', 'g'), 60) AS q FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
      .then((r) => {
        for (const row of r.rows) tally.set(`${row.w} ${row.q}`, (tally.get(`${row.w} ${row.q}`) ?? 0) + 1);
        if (++ticks % 4 === 0) {
          const top = [...tally].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([k, n]) => `${n} ${k}`);
          console.log(`act ${((performance.now() - t0) / 1000).toFixed(0)}s: ${top.join(" | ")}`);
          tally = new Map();
        }
      });
  }, 250);
}
const session = new Session();
session.connect();
await session.post("Profiler.enable");
const postmaster = inst.pid() ?? 0;
let at0 = { done: 0, cpu: process.cpuUsage(), pg: 0, t: 0 };
// The profiled span starts at the end of the first window past the warm-up, with that window's count.
let windows = 0;
const r = await closedLoop(store, {
  label: `prof ${mode}`,
  seconds,
  host,
  onWindow: (settled) => {
    if (++windows * WINDOW_S !== Math.ceil(warm / WINDOW_S) * WINDOW_S) return;
    void session.post("Profiler.start");
    at0 = { done: settled, cpu: process.cpuUsage(), pg: serverCpuMs(postmaster), t: performance.now() };
  },
});
if (sampler !== null) clearInterval(sampler);
await activity?.end();
const { profile } = await session.post("Profiler.stop");
const span = (performance.now() - at0.t) / 1000;
const cpu = process.cpuUsage(at0.cpu);
const pgCpuMs = serverCpuMs(postmaster) - at0.pg;
const n = r.invocations - at0.done;
console.log(`${mode}: ${(n / span).toFixed(1)}/s over ${span.toFixed(0)} s; node ${(((cpu.user + cpu.system) / 1000 / n)).toFixed(2)} ms CPU/inv, postgres ${(pgCpuMs / n).toFixed(2)} ms CPU/inv`);
writeFileSync(out, JSON.stringify(profile));
await store.close();
if (slowMs !== undefined) {
  const logDir = join(inst.dataDir, "log");
  writeFileSync("/tmp/writ-prof-slow.log", readdirSync(logDir).map((f) => readFileSync(join(logDir, f), "utf8")).join(""));
}
await inst.close();
rmSync(dir, { recursive: true, force: true });
