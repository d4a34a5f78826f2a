/**
 * Durable host throughput and latency (issue "Durable host"), `npm run bench -- host`, measured
 * side by side in one run, in interleaved rounds (medians):
 *
 * - Writ: submit-to-succeeded of a one-step no-op action with full governance (admission with its
 *   journal entry; a worker claims, evaluates a function policy, signs the decision, passes the
 *   boundary's checks, consumes the decision, records intent, calls the no-op connector and
 *   settles step, attempt, idempotency record, journal and invocation in one fenced transaction):
 *   on SQLite (one process: the bench submits and a started worker runs, concurrency 8), and on
 *   PostgreSQL with 1 and 4 worker processes (bench/host-worker-child.ts, concurrency 8 each)
 *   while this process submits;
 * - graphile-worker on the same PostgreSQL server and database, the same number of no-op jobs, the
 *   same processes with the same concurrency (`concurrency: 8`, its other options at their
 *   defaults: no local queue, no completion batching), from `addJob` to the job's completion.
 *
 * Method. A closed loop keeps a window of 2 x (processes x concurrency) items in flight: each
 * completion submits the next item, so the workers always have a backlog. After a warm-up, N
 * items are measured: throughput is N over the span between completions (worker timestamps, not
 * the bench's), latency is from the moment the submit committed (`submit()` / `addJob()` resolved)
 * to the moment the completion committed — Writ: the `invocation.succeeded` event, emitted after
 * the settlement transaction commits; graphile-worker: the return of its `complete_job` DELETE,
 * which it issues without waiting (seen on the worker's pool). Timestamps are
 * `process.hrtime` (CLOCK_MONOTONIC, comparable across processes of one machine). A second,
 * "light" phase keeps one item in flight (latency without queueing).
 *
 * The Writ PostgreSQL runs are repeated with submissions spread round-robin over SCOPES scopes
 * (one journal hash chain each), to show the effect of the per-scope serial sections. Each worker
 * pool counts statements (round trips), transactions and their time by statement name, so the
 * result also tells what an invocation costs. Written to bench/results/host.json.
 *
 * Profile Writ's worker path: `npx tsx bench/host.ts profile` (one worker process under
 * `--cpu-prof`, one scope and then SCOPES scopes; prints the profiles' paths and the counters).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Logger, makeWorkerUtils, runMigrations, type WorkerUtils } from "graphile-worker";
import pg from "pg";
import { z } from "zod";
import { createHost, defineAction, defineConnector, functionPolicy, generateSigningKey, sqliteStore, type DataKeyPort, type Host, type SigningKey, type Store } from "../src/index.js";
import { localDataKey } from "../src/runtime/data-key-file.js";
import { postgresStore, type PostgresStoreOptions } from "../src/stores/postgres/index.js";
import { advisoryKey } from "../src/stores/postgres/postgres-locks.js";
import { freshDatabase, pgServerOrNull, stopPgServer, type FreshDatabase } from "../tests/helpers/pg.js";
import { startGraphile, startWrit } from "./host-workers.js";
import { fmt, median, percentile } from "./lib.js";

/** Invocations (or jobs) a worker process runs at once. */
export const CONCURRENCY = 8;
/** Worker processes of the multi-process runs. */
const PROCS = 4;
/** Scopes of the spread runs. */
export const SCOPES = 16;
/**
 * How long the measured part of a Writ run on one scope should last: the number of measured items
 * per process count is fixed from a calibration pass (the Writ one-scope rate times this), then
 * used for every configuration with that many processes, graphile-worker's included.
 */
const RUN_MS = Number(process.env.WRIT_BENCH_HOST_RUN_MS ?? 1500);
/**
 * `WRIT_BENCH_HOST_ONLY=writ4,writ4Scopes,graphile4`: only these configurations (for experiments;
 * the item counts come from `sqlite` and `writ<N>`, so a selection naming `writ<N>Scopes` or
 * `graphile<N>` must name `writ<N>` too). Unset: all of them.
 */
const ONLY = process.env.WRIT_BENCH_HOST_ONLY ? process.env.WRIT_BENCH_HOST_ONLY.split(",") : null;
/**
 * `WRIT_BENCH_STORE='{"batchesInFlight":1}'`: PostgreSQL store options (JSON) for every Writ store
 * of the bench (the workers' and the submitting one's), to compare a setting with the defaults.
 */
export function benchStoreOptions(): PostgresStoreOptions {
  const raw = process.env.WRIT_BENCH_STORE;
  if (raw === undefined || raw === "") return {};
  const v: unknown = JSON.parse(raw);
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("WRIT_BENCH_STORE must be a JSON object of postgresStore options");
  return v;
}
const MIN_ITEMS = 80;
const MAX_ITEMS = 4000;
/**
 * Items of the light phase (one in flight), after LIGHT_WARM unmeasured ones. 20 items gave a
 * median that moved by a third between rounds and followed whatever configuration ran before
 * (docs/benchmarks.md, "2026-12-07 (night)"); 100 cost about 10 s more per run.
 */
const LIGHT = 100;
const LIGHT_WARM = 10;

// ---------------------------------------------------------------------------------------------
// What the workers run (shared with bench/host-worker-child.ts)

export const AUTHORITY_REF = "bench-authority";
export const BENCH_ACTION = defineAction({
  id: "bench.noop",
  version: "1",
  params: z.object({ n: z.number().int().nonnegative() }),
  idempotent: true,
  steps: [{ name: "run", connector: "noop", operation: "run" }],
});
export const BENCH_CONNECTOR = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
/** A real (if small) policy: the authority must be active and cover the action. */
export const benchPolicy = functionPolicy("bench:v1", ({ request, authority }) =>
  authority !== null && authority.status === "active" && authority.actions.includes(request.action) ? "ALLOW" : "DENY",
);

/**
 * A host running the bench action on `store`; `report` hears of every invocation that succeeded
 * and of any that ended otherwise (which fails the run).
 */
export function benchActionHost(store: Store, signingKey: SigningKey, report?: { succeeded(id: string): void; ended(id: string, why: string): void }, dataKey?: DataKeyPort): Host {
  return createHost({
    store,
    ...(dataKey ? { dataKey } : {}),
    actions: [BENCH_ACTION],
    connectors: [BENCH_CONNECTOR],
    policy: benchPolicy,
    signingKey,
    onEvent: (e) => {
      if (report === undefined) return;
      if (e.type === "invocation.succeeded") report.succeeded(e.invocationId);
      else if (e.type === "invocation.failed" || e.type === "invocation.denied" || e.type === "invocation.reconciliation_required") {
        report.ended(e.invocationId, `${e.status}: ${JSON.stringify(e.data ?? null)}`);
      }
    },
  });
}

export function benchScope(i: number, scopes: number): { tenantId: string; spaceId: string } {
  return { tenantId: scopes === 1 ? "bench" : `bench-${i % scopes}`, spaceId: "s" };
}

function allScopes(): Array<{ tenantId: string; spaceId: string }> {
  return [benchScope(0, 1), ...Array.from({ length: SCOPES }, (_, i) => benchScope(i, SCOPES))];
}

/** Milliseconds on the system-wide monotonic clock (comparable across processes). */
export function hr(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Statements a pool ran, by name (prepared statement name, or the first word: BEGIN, COMMIT). */
export interface PoolStats {
  statements: number;
  /** BEGIN ... COMMIT blocks, plus statements run outside one (each its own transaction). */
  transactions: number;
  /** Client-side time (ms) of every statement, lock waits included. */
  ms: number;
  byName: Record<string, { n: number; ms: number }>;
  /** Time (ms) in `writ_lock` statements taking only a journal chain lock, and in the others. */
  journalLockMs: number;
  otherLockMs: number;
}

/**
 * Counts and times every statement of `pool`'s connections (wraps `query` as each connects).
 * `onComplete` sees the job ids of graphile-worker's completion statements once they returned.
 */
export function instrumentPool(pool: pg.Pool, opts: { journalKeys?: ReadonlySet<string>; onComplete?: (ids: string[]) => void } = {}): PoolStats {
  const stats: PoolStats = { statements: 0, transactions: 0, ms: 0, byName: {}, journalLockMs: 0, otherLockMs: 0 };
  const record = (name: string, values: unknown[] | undefined, ms: number): void => {
    stats.statements++;
    stats.ms += ms;
    const e = (stats.byName[name] ??= { n: 0, ms: 0 });
    e.n++;
    e.ms += ms;
    if (name === "writ_lock") {
      const keys = Array.isArray(values?.[0]) ? (values[0] as unknown[]) : [];
      if (keys.length > 0 && keys.every((k) => opts.journalKeys?.has(String(k)))) stats.journalLockMs += ms;
      else stats.otherLockMs += ms;
    }
  };
  pool.on("connect", (client) => {
    let inTransaction = false;
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const q = args[0] as string | { name?: string; text?: string; values?: unknown[] } | undefined;
      const text = typeof q === "string" ? q : (q?.text ?? "");
      const name = (typeof q === "object" ? q?.name : undefined) ?? text.trim().split(/\s/, 1)[0]!.toUpperCase();
      const values = typeof q === "object" ? q?.values : undefined;
      // A transaction: BEGIN ... COMMIT/ROLLBACK, or one statement outside them (autocommit).
      if (name === "BEGIN") {
        inTransaction = true;
        stats.transactions++;
      } else if (!inTransaction && name !== "LISTEN" && name !== "UNLISTEN") stats.transactions++;
      else if (name === "COMMIT" || name === "ROLLBACK") inTransaction = false;
      const t0 = hr();
      const out = original(...args);
      if (out instanceof Promise) {
        const completes = opts.onComplete !== undefined && (name.startsWith("complete_job") || /^delete from \S*_private_jobs/i.test(text.trim()));
        out.then(
          () => {
            record(name, values, hr() - t0);
            if (completes) opts.onComplete!((Array.isArray(values?.[0]) ? (values[0] as unknown[]) : [values?.[0]]).map(String));
          },
          () => record(name, values, hr() - t0),
        );
      }
      return out;
    };
  });
  return stats;
}

function emptyStats(): PoolStats {
  return { statements: 0, transactions: 0, ms: 0, byName: {}, journalLockMs: 0, otherLockMs: 0 };
}

function addStats(into: PoolStats, s: PoolStats): void {
  into.statements += s.statements;
  into.transactions += s.transactions;
  into.ms += s.ms;
  into.journalLockMs += s.journalLockMs;
  into.otherLockMs += s.otherLockMs;
  for (const [k, v] of Object.entries(s.byName)) {
    const e = (into.byName[k] ??= { n: 0, ms: 0 });
    e.n += v.n;
    e.ms += v.ms;
  }
}

function resetStats(s: PoolStats): void {
  Object.assign(s, emptyStats());
}

export type ToChild =
  | { type: "start"; system: "writ" | "graphile"; url: string; concurrency: number; signingKey: SigningKey; journalKeys: string[] }
  | { type: "stop" }
  | { type: "exit" };

export type FromChild =
  | { type: "spawned" }
  | { type: "ready" }
  | { type: "done"; items: Array<[string, number]> }
  | { type: "stopped"; stats: PoolStats; cpuMs: number }
  | { type: "error"; message: string };

// ---------------------------------------------------------------------------------------------
// Worker processes

const CHILD_FILE = join(dirname(fileURLToPath(import.meta.url)), "host-worker-child.ts");

/** Where completions go while a run is on (children's reports and the in-process SQLite worker). */
let sink: ((id: string, t: number) => void) | null = null;
/** Fails the run in progress (a child's error or exit). */
let failRun: ((e: Error) => void) | null = null;

class Child {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly #waiting = new Map<string, Array<(m: FromChild) => void>>();
  #exited = false;

  constructor(name: string, execArgv: string[] = []) {
    this.name = name;
    this.proc = spawn(process.execPath, [...execArgv, "--import", "tsx", CHILD_FILE], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    this.proc.on("message", (m: FromChild) => {
      if (m.type === "done") {
        for (const [id, t] of m.items) sink?.(id, t);
        return;
      }
      if (m.type === "error") {
        failRun?.(new Error(`${this.name}: ${m.message}`));
        return;
      }
      this.#waiting.get(m.type)?.shift()?.(m);
    });
    this.proc.on("exit", (code, signal) => {
      this.#exited = true;
      failRun?.(new Error(`${this.name} exited (${code ?? signal})`));
    });
  }

  /** The next message of `type` (after sending `msg`, if given). */
  call<T extends FromChild["type"]>(type: T, msg?: ToChild, timeoutMs = 30_000): Promise<Extract<FromChild, { type: T }>> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name}: no ${type} within ${timeoutMs} ms`)), timeoutMs);
      const list = this.#waiting.get(type) ?? [];
      list.push((m) => {
        clearTimeout(timer);
        resolve(m as Extract<FromChild, { type: T }>);
      });
      this.#waiting.set(type, list);
      if (msg !== undefined) this.proc.send(msg);
    });
  }

  /** Asks the child to leave; kills it (by its pid) if it has not within `ms`. */
  async exit(ms = 10_000): Promise<void> {
    if (this.#exited) return;
    const gone = new Promise<void>((resolve) => this.proc.once("exit", () => resolve()));
    if (this.proc.connected) this.proc.send({ type: "exit" } satisfies ToChild);
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), ms);
    await gone;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// The closed loop

interface LoopResult {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Latency from the submit call (not its commit) to the completion. */
  callP50Ms: number;
  /** Items run (warm-up included). */
  items: number;
}

/**
 * Keeps `window` items in flight until `warm + count` completed; measures the last `count`
 * (ordered by completion time): throughput over their span, latency submit-commit -> completion.
 */
function closedLoop(submit: (i: number) => Promise<string>, window: number, warm: number, count: number, idleTimeoutMs = 30_000): Promise<LoopResult> {
  const total = warm + count;
  let submitted = 0;
  let done = 0;
  const submittedAt = new Map<string, number>();
  const early = new Map<string, number>();
  const finished: Array<{ at: number; latency: number; fromCall: number }> = [];
  const calledAt = new Map<string, number>();
  return new Promise<LoopResult>((resolve, reject) => {
    let watchdog: ReturnType<typeof setTimeout> | undefined;
    const arm = (): void => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => fail(new Error(`no completion for ${idleTimeoutMs} ms (${done}/${total} done, ${submitted} submitted)`)), idleTimeoutMs);
    };
    const fail = (e: Error): void => {
      clearTimeout(watchdog);
      sink = null;
      failRun = null;
      reject(e);
    };
    const finish = (id: string, at: number, latency: number): void => {
      finished.push({ at, latency, fromCall: at - calledAt.get(id)! });
      calledAt.delete(id);
      done++;
      arm();
      if (done < total) return fire();
      clearTimeout(watchdog);
      sink = null;
      failRun = null;
      finished.sort((a, b) => a.at - b.at);
      const measured = finished.slice(warm);
      const lat = measured.map((f) => f.latency);
      const span = finished[total - 1]!.at - finished[warm - 1]!.at;
      resolve({ perSec: (count * 1000) / span, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), callP50Ms: percentile(measured.map((f) => f.fromCall), 50), items: total });
    };
    const fire = (): void => {
      while (submitted < total && submitted - done < window) {
        const i = submitted++;
        const called = hr();
        submit(i).then((id) => {
          const t = hr();
          calledAt.set(id, called);
          const d = early.get(id);
          if (d === undefined) submittedAt.set(id, t);
          else {
            early.delete(id);
            finish(id, d, d - t);
          }
        }, fail);
      }
    };
    sink = (id, t) => {
      const s = submittedAt.get(id);
      if (s === undefined) early.set(id, t);
      else {
        submittedAt.delete(id);
        finish(id, t, t - s);
      }
    };
    failRun = fail;
    arm();
    fire();
  });
}

// ---------------------------------------------------------------------------------------------
// Configurations

type System = "writ-sqlite" | "writ-pg" | "graphile";

interface Config {
  key: string;
  system: System;
  procs: number;
  scopes: number;
  /** Also run the light phase (one in flight). */
  light: boolean;
  /**
   * The worker runs in the bench process and items are submitted through it (Writ: through the
   * worker's own host, so an idle worker takes an admission in its commit; graphile-worker: its
   * runner beside the utils that add jobs). Otherwise workers run in `procs` child processes and
   * a host (utils) of the bench process submits.
   */
  inProcess?: boolean;
  /** Writ with its worker in the bench process: whether the idle worker takes admissions in their commit (default true). */
  handoff?: boolean;
  /**
   * Writ with its worker in the bench process: the host has a data key, as every host `writ serve`
   * and `writ worker` start has (sealing at rest; the bench action marks nothing sensitive).
   */
  dataKey?: boolean;
}

export interface RunResult {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  light: { p50Ms: number; p99Ms: number; callP50Ms: number } | null;
  items: number;
  /** CPU time per item: worker processes (all of them), and this process (submitting; and the worker for SQLite). */
  cpuMsPerItem: { workers: number | null; bench: number };
  /** Share of the machine's CPU time busy during the run (all processes, other load included). */
  machineBusy: number | null;
  /** Per item: statements (round trips) and transactions of the workers' pools, and of the submitting pool. */
  perItem: {
    worker: { statements: number; transactions: number; statementMs: number; journalLockMs: number; otherLockMs: number } | null;
    submit: { statements: number; transactions: number } | null;
    /** The workers' statements with the most time, per item. */
    top: Array<{ name: string; n: number; ms: number }>;
    /** The submitting process's statements with the most time, per item. */
    submitTop: Array<{ name: string; n: number; ms: number }>;
  };
}

function cpuTimes(): { busy: number; total: number } | null {
  try {
    const f = readFileSync("/proc/stat", "utf8").split("\n", 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
    const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - f[3]! - f[4]!, total };
  } catch {
    return null;
  }
}

/** What one run does: `count` measured items (after a warm-up of half a window), then `light` items one at a time. */
interface Plan {
  count: number;
  light: number;
}

interface Rig {
  run(cfg: Config, tag: string, plan: Plan): Promise<RunResult>;
  close(): Promise<void>;
  server: string | null;
}

function perItem(stats: PoolStats, items: number): RunResult["perItem"]["worker"] {
  return { statements: stats.statements / items, transactions: stats.transactions / items, statementMs: stats.ms / items, journalLockMs: stats.journalLockMs / items, otherLockMs: stats.otherLockMs / items };
}

function topStatements(stats: PoolStats, items: number): RunResult["perItem"]["top"] {
  return Object.entries(stats.byName)
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, 10)
    .map(([name, v]) => ({ name, n: round(v.n / items, 2), ms: round(v.ms / items, 3) }));
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

const silent = new Logger(() => () => undefined);

function writRequest(i: number, scopes: number, tag: string): unknown {
  return { ...benchScope(i, scopes), action: BENCH_ACTION.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: AUTHORITY_REF, params: { n: i }, idempotencyKey: `${tag}-${i}` };
}

async function grantAuthorities(host: Host): Promise<void> {
  for (const scope of allScopes()) {
    await host.authorities.create(scope, { authorityRef: AUTHORITY_REF, principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [BENCH_ACTION.id] });
  }
}

/**
 * Everything the runs share: the SQLite host (in this process), the PostgreSQL database with both
 * schemas, a Writ host and graphile-worker utils that submit, and the worker processes.
 */
async function openRig(opts: { procs: number; execArgv?: string[]; sqlite: boolean; graphile: boolean }): Promise<Rig> {
  const signingKey = generateSigningKey({ kid: "bench-host" });
  const dir = mkdtempSync(join(tmpdir(), "writ-bench-host-"));
  const closers: Array<() => Promise<unknown>> = [async () => rmSync(dir, { recursive: true, force: true })];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) await c().catch((e: unknown) => console.warn("bench host: cleanup failed:", e));
  };
  try {
    let sqliteHost: Host | null = null;
    if (opts.sqlite) {
      const store = sqliteStore({ path: join(dir, "host.db") });
      sqliteHost = benchActionHost(store, signingKey, {
        succeeded: (id) => sink?.(id, hr()),
        ended: (id, why) => failRun?.(new Error(`invocation ${id} ended ${why}`)),
      });
      closers.push(() => store.close());
      await store.migrate();
      await grantAuthorities(sqliteHost);
    }
    const server = await pgServerOrNull();
    if (server === null) {
      return { run: (cfg, tag, plan) => (cfg.system === "writ-sqlite" ? runSqlite(sqliteHost!, cfg, tag, plan) : Promise.reject(new Error("no PostgreSQL server"))), close, server: null };
    }
    closers.push(() => stopPgServer());
    const db: FreshDatabase = await freshDatabase();
    closers.push(() => db.drop());
    const submitPool = new pg.Pool({ connectionString: db.url, max: 8, application_name: "writ-bench-host-submit" });
    submitPool.on("error", () => undefined);
    closers.push(() => submitPool.end());
    const submitStats = instrumentPool(submitPool);
    const submitStore = postgresStore({ pool: submitPool }, benchStoreOptions());
    closers.push(() => submitStore.close());
    const submitHost = benchActionHost(submitStore, signingKey);
    await submitStore.migrate();
    await grantAuthorities(submitHost);
    const journalKeys = allScopes().map((s) => String(advisoryKey(s, "journal")));

    let utils: WorkerUtils | null = null;
    const gwPool = new pg.Pool({ connectionString: db.url, max: 8, application_name: "writ-bench-graphile-submit" });
    gwPool.on("error", () => undefined);
    closers.push(() => gwPool.end());
    const gwStats = instrumentPool(gwPool);
    if (opts.graphile) {
      await runMigrations({ pgPool: gwPool, logger: silent });
      const u = await makeWorkerUtils({ pgPool: gwPool, logger: silent });
      utils = u;
      closers.push(async () => u.release());
    }

    const children: Child[] = [];
    closers.push(() => Promise.all(children.map((c) => c.exit())));
    for (let i = 0; i < opts.procs; i++) children.push(new Child(`worker process ${i}`, opts.execArgv));
    await Promise.all(children.map((c) => c.call("spawned", undefined, 60_000)));

    /** A configuration with its worker in this process (see `Config.inProcess`). */
    const runInProcess = async (cfg: Config, tag: string, plan: Plan): Promise<RunResult> => {
      const report = (id: string, t: number): void => sink?.(id, t);
      const failed = (message: string): void => failRun?.(new Error(message));
      if (cfg.system === "graphile") {
        const running = await startGraphile(db.url, CONCURRENCY, report);
        resetStats(gwStats);
        try {
          const measured = await phases(cfg, plan, () => async (i: number) => (await utils!.addJob("noop", { n: i })).id);
          await running.stop();
          await checkDrained(gwPool, "graphile");
          return resultOf(measured, { cpuMs: measured.benchCpuMs, stats: running.stats, submitted: gwStats });
        } catch (e) {
          await running.stop();
          throw e;
        }
      }
      const dataKey = cfg.dataKey === true ? localDataKey(join(mkdtempSync(join(tmpdir(), "writ-bench-dk-")), "data-key.json")) : undefined;
      const running = await startWrit(db.url, CONCURRENCY, signingKey, journalKeys, report, failed, cfg.handoff ?? true, dataKey);
      try {
        const measured = await phases(cfg, plan, (phase) => async (i: number) => (await running.host.submit(writRequest(i, cfg.scopes, `${tag}-${phase}`))).invocation.invocationId);
        await running.stop();
        await checkDrained(gwPool, "writ");
        return resultOf(measured, { cpuMs: measured.benchCpuMs, stats: running.stats, submitted: emptyStats() });
      } catch (e) {
        await running.stop();
        throw e;
      }
    };

    const runPg = async (cfg: Config, tag: string, plan: Plan): Promise<RunResult> => {
      if (cfg.inProcess === true) return runInProcess(cfg, tag, plan);
      const kids = children.slice(0, cfg.procs);
      const system = cfg.system === "graphile" ? "graphile" : "writ";
      const submitted = system === "writ" ? submitStats : gwStats;
      await Promise.all(kids.map((k) => k.call("ready", { type: "start", system, url: db.url, concurrency: CONCURRENCY, signingKey, journalKeys })));
      resetStats(submitted);
      const measured = await phases(cfg, plan, (phase) =>
        system === "writ"
          ? async (i: number) => (await submitHost.submit(writRequest(i, cfg.scopes, `${tag}-${phase}`))).invocation.invocationId
          : async (i: number) => (await utils!.addJob("noop", { n: i })).id,
      );
      const stopped = await Promise.all(kids.map((k) => k.call("stopped", { type: "stop" })));
      const stats = emptyStats();
      for (const s of stopped) addStats(stats, s.stats);
      await checkDrained(gwPool, system);
      return resultOf(measured, { cpuMs: stopped.reduce((a, s) => a + s.cpuMs, 0), stats, submitted });
    };
    return { run: (cfg, tag, plan) => (cfg.system === "writ-sqlite" ? runSqlite(sqliteHost!, cfg, tag, plan) : runPg(cfg, tag, plan)), close, server: server.source };
  } catch (e) {
    await close();
    throw e;
  }
}

/** After a run every Writ invocation has succeeded and every graphile-worker job is gone. */
async function checkDrained(pool: pg.Pool, system: "writ" | "graphile"): Promise<void> {
  const sql = system === "writ" ? "SELECT count(*)::int AS n FROM writ_invocations WHERE status <> 'succeeded'" : "SELECT count(*)::int AS n FROM graphile_worker._private_jobs";
  const { rows } = await pool.query<{ n: number }>(sql);
  if (rows[0]!.n !== 0) throw new Error(`${system}: ${rows[0]!.n} items left unfinished after the run`);
}

/** Items in flight: twice what the workers run at once, so that they always have a backlog. */
function windowOf(cfg: Config): number {
  return 2 * CONCURRENCY * cfg.procs;
}

interface Measured {
  loaded: LoopResult;
  light: LoopResult | null;
  /** CPU time of this process (ms) and the machine's busy share during the phases. */
  benchCpuMs: number;
  machineBusy: number | null;
}

/** The loaded phase (a window in flight), then the light one (one in flight) if the plan has it. */
async function phases(cfg: Config, plan: Plan, submitter: (phase: string) => (i: number) => Promise<string>): Promise<Measured> {
  const cpu0 = process.cpuUsage();
  const m0 = cpuTimes();
  try {
    const loaded = await closedLoop(submitter("loaded"), windowOf(cfg), windowOf(cfg) / 2, plan.count);
    const light = plan.light > 0 ? await closedLoop(submitter("light"), 1, LIGHT_WARM, plan.light) : null;
    const m1 = cpuTimes();
    const cpu = process.cpuUsage(cpu0);
    return { loaded, light, benchCpuMs: (cpu.user + cpu.system) / 1000, machineBusy: m0 && m1 ? (m1.busy - m0.busy) / (m1.total - m0.total) : null };
  } finally {
    sink = null;
    failRun = null;
  }
}

function resultOf(m: Measured, workers: { cpuMs: number; stats: PoolStats; submitted: PoolStats } | null): RunResult {
  const items = m.loaded.items + (m.light?.items ?? 0);
  return {
    perSec: m.loaded.perSec,
    p50Ms: m.loaded.p50Ms,
    p99Ms: m.loaded.p99Ms,
    light: m.light ? { p50Ms: m.light.p50Ms, p99Ms: m.light.p99Ms, callP50Ms: m.light.callP50Ms } : null,
    items,
    cpuMsPerItem: { workers: workers ? workers.cpuMs / items : null, bench: m.benchCpuMs / items },
    machineBusy: m.machineBusy,
    perItem: {
      worker: workers ? perItem(workers.stats, items) : null,
      submit: workers ? { statements: workers.submitted.statements / items, transactions: workers.submitted.transactions / items } : null,
      top: workers ? topStatements(workers.stats, items) : [],
      submitTop: workers ? topStatements(workers.submitted, items) : [],
    },
  };
}

async function runSqlite(host: Host, cfg: Config, tag: string, plan: Plan): Promise<RunResult> {
  const worker = host.worker({ concurrency: CONCURRENCY, handoff: cfg.handoff ?? true });
  worker.start();
  try {
    return resultOf(await phases(cfg, plan, (phase) => async (i) => (await host.submit(writRequest(i, cfg.scopes, `${tag}-${phase}`))).invocation.invocationId), null);
  } finally {
    await worker.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// The bench

const CONFIGS: Config[] = [
  { key: "sqlite", system: "writ-sqlite", procs: 1, scopes: 1, light: true },
  { key: "sqliteNoHandoff", system: "writ-sqlite", procs: 1, scopes: 1, light: true, handoff: false },
  { key: "sqliteScopes", system: "writ-sqlite", procs: 1, scopes: SCOPES, light: false },
  { key: "writ1", system: "writ-pg", procs: 1, scopes: 1, light: true },
  { key: "graphile1", system: "graphile", procs: 1, scopes: 1, light: true },
  { key: "writ4", system: "writ-pg", procs: PROCS, scopes: 1, light: true },
  { key: "graphile4", system: "graphile", procs: PROCS, scopes: 1, light: true },
  { key: "writ1Local", system: "writ-pg", procs: 1, scopes: 1, light: true, inProcess: true },
  { key: "writ1LocalNoHandoff", system: "writ-pg", procs: 1, scopes: 1, light: true, inProcess: true, handoff: false },
  { key: "writ1LocalDataKey", system: "writ-pg", procs: 1, scopes: 1, light: true, inProcess: true, dataKey: true },
  { key: "graphile1Local", system: "graphile", procs: 1, scopes: 1, light: true, inProcess: true },
  { key: "writ1Scopes", system: "writ-pg", procs: 1, scopes: SCOPES, light: false },
  { key: "writ4Scopes", system: "writ-pg", procs: PROCS, scopes: SCOPES, light: false },
];

type Round = Record<string, RunResult>;

/** `lightCallP50Latency`: one in flight, from the submit call (not its commit) to the completion. */
type Ratio = { throughput: number; p50Latency: number; lightP50Latency: number | null; lightCallP50Latency: number | null };

export interface HostBenchResult {
  method: string;
  concurrencyPerProcess: number;
  processes: number[];
  scopes: number;
  /** Measured items per run: SQLite, and per number of worker processes (both systems). */
  measuredItems: { sqlite: number; perProcesses: Record<string, number>; light: number };
  /** The calibration pass (warm-up, not in the medians): items per second per configuration. */
  calibration: Record<string, number>;
  rounds: Round[];
  /** Medians over rounds, per configuration. */
  medians: Record<string, { perSec: number; p50Ms: number; p99Ms: number; lightP50Ms: number | null; lightP99Ms: number | null; lightCallP50Ms: number | null }>;
  /** Writ / graphile-worker, medians of the per-round ratios (throughput: > 1 is Writ faster; latency: > 1 is Writ slower). */
  ratios: Partial<Record<"p1" | "p4" | "p1Local" | "p1LocalNoHandoff" | "p1LocalDataKey" | "p1Scopes" | "p4Scopes", Ratio>> | null;
  /**
   * Writ throughput with one scope over throughput with SCOPES scopes, medians of the per-round
   * ratios (the journal chain no longer serialises a scope: goal >= 0.8).
   */
  scopeRatios: { sqlite: number | null; p1: number | null; p4: number | null };
  goal: { throughputRatio: number; oneScopeOverScopes: number };
  postgresServer: string | null;
  machine: { cpus: number; loadavgBefore: number[]; loadavgAfter: number[] };
}

function itemsFor(perSec: number): number {
  return Math.max(MIN_ITEMS, Math.min(MAX_ITEMS, Math.round((perSec * RUN_MS) / 1000)));
}

export async function benchHost(rounds = 3): Promise<HostBenchResult> {
  if (ONLY !== null) {
    const unknown = ONLY.filter((k) => !CONFIGS.some((c) => c.key === k));
    if (unknown.length > 0) throw new Error(`WRIT_BENCH_HOST_ONLY: no configuration ${unknown.join(", ")} (there are ${CONFIGS.map((c) => c.key).join(", ")})`);
    for (const c of CONFIGS.filter((x) => ONLY.includes(x.key))) {
      const base = c.system === "writ-sqlite" ? "sqlite" : `writ${c.procs}`;
      if (!ONLY.includes(base)) throw new Error(`WRIT_BENCH_HOST_ONLY: ${c.key} needs ${base} (its item count comes from ${base}'s calibration)`);
    }
  }
  const loadavgBefore = loadavg();
  const rig = await openRig({ procs: PROCS, sqlite: true, graphile: true });
  const out: Round[] = [];
  const calibration: Record<string, number> = {};
  const items = { sqlite: 0, perProcesses: {} as Record<string, number>, light: LIGHT };
  try {
    const configs = (rig.server === null ? CONFIGS.filter((c) => c.system === "writ-sqlite") : CONFIGS).filter((c) => ONLY === null || ONLY.includes(c.key));
    // Calibration and warm-up (JIT, connections, prepared statements): every configuration once.
    for (const c of configs) calibration[c.key] = (await rig.run(c, `warm-${c.key}`, { count: windowOf(c), light: 0 })).perSec;
    items.sqlite = itemsFor(calibration.sqlite!);
    for (const p of [1, PROCS]) if (calibration[`writ${p}`] !== undefined) items.perProcesses[p] = itemsFor(calibration[`writ${p}`]!);
    const planOf = (c: Config): Plan => ({ count: c.system === "writ-sqlite" ? items.sqlite : items.perProcesses[c.procs]!, light: c.light ? LIGHT : 0 });
    for (let i = 0; i < rounds; i++) {
      const r: Round = {};
      // The order rotates from round to round so that drift spreads over every configuration.
      for (let j = 0; j < configs.length; j++) {
        const c = configs[(i + j) % configs.length]!;
        r[c.key] = await rig.run(c, `r${i}-${c.key}`, planOf(c));
      }
      out.push(r);
    }
  } finally {
    await rig.close();
  }
  const keys = Object.keys(out[0] ?? {});
  const medians: HostBenchResult["medians"] = {};
  for (const k of keys) {
    const runs = out.map((r) => r[k]!);
    const lights = runs.map((r) => r.light).filter((l) => l !== null);
    medians[k] = {
      perSec: median(runs.map((r) => r.perSec)),
      p50Ms: median(runs.map((r) => r.p50Ms)),
      p99Ms: median(runs.map((r) => r.p99Ms)),
      lightP50Ms: lights.length > 0 ? median(lights.map((l) => l.p50Ms)) : null,
      lightP99Ms: lights.length > 0 ? median(lights.map((l) => l.p99Ms)) : null,
      lightCallP50Ms: lights.length > 0 ? median(lights.map((l) => l.callP50Ms)) : null,
    };
  }
  const ratio = (writ: string, gw: string): Ratio => ({
    throughput: median(out.map((r) => r[writ]!.perSec / r[gw]!.perSec)),
    p50Latency: median(out.map((r) => r[writ]!.p50Ms / r[gw]!.p50Ms)),
    lightP50Latency: out.every((r) => r[writ]!.light && r[gw]!.light) ? median(out.map((r) => r[writ]!.light!.p50Ms / r[gw]!.light!.p50Ms)) : null,
    lightCallP50Latency: out.every((r) => r[writ]!.light && r[gw]!.light) ? median(out.map((r) => r[writ]!.light!.callP50Ms / r[gw]!.light!.callP50Ms)) : null,
  });
  return {
    method:
      `closed loop with 2 x (processes x ${CONCURRENCY}) items in flight; a warm-up of half a window, then N measured items (N from a calibration pass: ` +
      `the Writ one-scope rate x ${RUN_MS} ms, the same N for graphile-worker); throughput over the span of the measured completions; ` +
      "latency from submit commit (submit()/addJob() resolved) to completion commit (Writ: invocation.succeeded, emitted after the settlement commits; " +
      "graphile-worker: its complete_job DELETE returned); for one item in flight also from the submit call. light = one item in flight. " +
      "Keys ending in Local: the worker runs in the bench process (Writ: items are submitted through the worker's own host; graphile-worker: its runner beside the utils that add jobs). graphile-worker: run({ concurrency: 8 }) per process, " +
      "defaults otherwise (no localQueue, no completeJobBatchDelay). Writ: host.worker({ concurrency: 8 }) per process, defaults otherwise; " +
      `one scope, or ${SCOPES} scopes round-robin for the keys ending in Scopes.`,
    concurrencyPerProcess: CONCURRENCY,
    processes: [1, PROCS],
    scopes: SCOPES,
    measuredItems: items,
    calibration,
    rounds: out,
    medians,
    scopeRatios: {
      sqlite: keys.includes("sqliteScopes") ? median(out.map((r) => r.sqlite!.perSec / r.sqliteScopes!.perSec)) : null,
      p1: keys.includes("writ1Scopes") ? median(out.map((r) => r.writ1!.perSec / r.writ1Scopes!.perSec)) : null,
      p4: keys.includes(`writ${PROCS}Scopes`) ? median(out.map((r) => r[`writ${PROCS}`]!.perSec / r[`writ${PROCS}Scopes`]!.perSec)) : null,
    },
    // Each pair that ran (a WRIT_BENCH_HOST_ONLY selection may leave some out); null when none did.
    ratios: ((): Record<string, Ratio> | null => {
      const pairs: Array<[string, string, string]> = [["p1", "writ1", "graphile1"], [`p${PROCS}`, `writ${PROCS}`, `graphile${PROCS}`], ["p1Local", "writ1Local", "graphile1Local"], ["p1LocalNoHandoff", "writ1LocalNoHandoff", "graphile1Local"], ["p1LocalDataKey", "writ1LocalDataKey", "graphile1Local"], ["p1Scopes", "writ1Scopes", "graphile1"], [`p${PROCS}Scopes`, `writ${PROCS}Scopes`, `graphile${PROCS}`]];
      const ran = pairs.filter(([, w, g]) => keys.includes(w) && keys.includes(g));
      return ran.length > 0 ? Object.fromEntries(ran.map(([k, w, g]) => [k, ratio(w, g)])) : null;
    })(),
    goal: { throughputRatio: 1, oneScopeOverScopes: 0.8 },
    postgresServer: rig.server,
    machine: { cpus: availableParallelism(), loadavgBefore, loadavgAfter: loadavg() },
  };
}

/** The lines `npm run bench -- host` prints. */
export function hostSummary(r: HostBenchResult): string[] {
  const m = r.medians;
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(" ");
  const line = (k: string, label: string): string => {
    const x = m[k];
    if (x === undefined) return `  ${label}: skipped (no PostgreSQL server)`;
    const light = x.lightP50Ms === null ? "" : ` | one in flight: p50 ${x.lightP50Ms.toFixed(2)} ms, p99 ${x.lightP99Ms!.toFixed(2)} ms, from the call p50 ${x.lightCallP50Ms!.toFixed(2)} ms`;
    return `  ${label}: ${fmt(x.perSec)}/s, p50 ${x.p50Ms.toFixed(1)} ms, p99 ${x.p99Ms.toFixed(1)} ms${light}`;
  };
  const out = [
    `host (one-step no-op, full governance vs graphile-worker no-op job; closed loop, 2 x concurrency in flight, concurrency ${r.concurrencyPerProcess} per process; ` +
      `N = ${JSON.stringify(r.measuredItems.perProcesses)} per process count, sqlite ${r.measuredItems.sqlite}; medians of ${r.rounds.length} interleaved rounds; ` +
      `load average ${load(r.machine.loadavgBefore)} on ${r.machine.cpus} CPUs):`,
    line("sqlite", "Writ, sqlite, 1 process (worker in the bench process)"),
    line("sqliteNoHandoff", "Writ, sqlite, the same with the hand-off off (host.worker({ handoff: false }))"),
    line("sqliteScopes", `Writ, sqlite, 1 process, ${r.scopes} scopes`),
  ];
  for (const p of r.processes) {
    out.push(line(`writ${p}`, `Writ, postgres, ${p} worker process${p > 1 ? "es" : ""}, 1 scope`));
    out.push(line(`writ${p}Scopes`, `Writ, postgres, ${p} worker process${p > 1 ? "es" : ""}, ${r.scopes} scopes`));
    out.push(line(`graphile${p}`, `graphile-worker, ${p} worker process${p > 1 ? "es" : ""}`));
  }
  out.push(line("writ1Local", "Writ, postgres, worker in the bench process, submitting through it"));
  out.push(line("writ1LocalNoHandoff", "Writ, postgres, the same with the hand-off off (host.worker({ handoff: false }))"));
  out.push(line("writ1LocalDataKey", "Writ, postgres, the same with a data key (as writ serve and writ worker run)"));
  out.push(line("graphile1Local", "graphile-worker, runner in the bench process"));
  const last = r.rounds[r.rounds.length - 1];
  for (const k of ["writ1", `writ${PROCS}Scopes`, "graphile1"]) {
    const w = last?.[k]?.perItem;
    if (w?.worker) {
      out.push(
        `  per item (${k}, last round): worker ${w.worker.statements.toFixed(1)} statements in ${w.worker.transactions.toFixed(1)} transactions, ` +
          `${w.worker.statementMs.toFixed(1)} ms in statements of which journal lock ${w.worker.journalLockMs.toFixed(1)} ms; submit ${w.submit?.statements.toFixed(1)} statements`,
      );
    }
  }
  if (r.ratios) {
    for (const [k, q] of Object.entries(r.ratios)) {
      const light = q.lightP50Latency === null ? "" : ` | p50 latency one in flight ${q.lightP50Latency.toFixed(2)}, from the call ${q.lightCallP50Latency!.toFixed(2)}`;
      out.push(`  Writ/graphile-worker ${k}: throughput ${q.throughput.toFixed(3)} (goal >= ${r.goal.throughputRatio}) | p50 latency ${q.p50Latency.toFixed(2)}${light}`);
    }
  }
  const sr = r.scopeRatios;
  const q = (x: number | null): string => (x === null ? "skipped" : x.toFixed(3));
  out.push(`  Writ one scope / ${r.scopes} scopes throughput: sqlite ${q(sr.sqlite)} | postgres 1 process ${q(sr.p1)} | postgres ${PROCS} processes ${q(sr.p4)} (goal >= ${r.goal.oneScopeOverScopes})`);
  out.push(`  load average after: ${load(r.machine.loadavgAfter)}`);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Profiling Writ's worker path: `npx tsx bench/host.ts profile`

async function profileHost(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "writ-host-prof-"));
  const seconds = Number(process.env.WRIT_BENCH_HOST_PROFILE_S ?? 8);
  for (const scopes of [1, SCOPES]) {
    const profDir = join(dir, `scopes-${scopes}`);
    mkdirSync(profDir, { recursive: true });
    const rig = await openRig({ procs: 1, execArgv: ["--cpu-prof", `--cpu-prof-dir=${profDir}`], sqlite: false, graphile: false });
    try {
      const cfg: Config = { key: `writ1-${scopes}`, system: "writ-pg", procs: 1, scopes, light: false };
      const rate = (await rig.run(cfg, `prof-warm-${scopes}`, { count: windowOf(cfg), light: 0 })).perSec;
      const r = await rig.run(cfg, `prof-${scopes}`, { count: Math.round(rate * seconds), light: 0 });
      console.log(JSON.stringify({ scopes, loadavg: loadavg(), ...r }));
    } finally {
      await rig.close();
    }
    console.log(`profile (${scopes} scope${scopes > 1 ? "s" : ""}): ${profDir}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href && process.argv[2] === "profile") {
  await profileHost();
}
