/**
 * Commits and statements per invocation on PostgreSQL (`npm run bench -- commits`): counts, not
 * rates, so the machine's load barely moves them (docs/benchmarks.md, "Commits per invocation").
 *
 * The rig of `npm run bench -- host` in one process: a host with bench/host.ts's one-step no-op
 * action under its allow policy, one worker (concurrency 8), 16 invocations in flight (each
 * completion submits the next), on a fresh database per mode. It runs WRIT_BENCH_COMMITS_N
 * invocations (default 3,000) from the first submit until every one succeeded and the journal is
 * sealed, and reports per invocation:
 *
 * - commits and rollbacks as the server counts them (`pg_stat_database`: xact_commit,
 *   xact_rollback of the run's database, read from the maintenance database once the store's
 *   connections closed and every backend has flushed its counters);
 * - statements (round trips) and transactions as the driver sees them, and of those the ones
 *   that write (a transaction of reads alone flushes no WAL at its commit), by origin: every query of
 *   the store's pool is wrapped and each transaction (BEGIN ... COMMIT, or one statement in
 *   autocommit) is named by what it runs: submit (admissions), claim, consume (the boundary's
 *   begin: decision consumed, step intent), settle, advance and record, sealing (the sequencer's
 *   read and seal), sealing poll, heartbeat, next-run poll, listener, clock, maintenance. A batch
 *   statement carrying members of several kinds is one commit, split among its members' origins
 *   (each member 1/k of it); `members` counts the members themselves.
 *
 * The server counts more commits than the driver sends: the wake-up listener's backend reads the
 * notification queue in a transaction of its own each time a NOTIFY reaches it while it is idle
 * (read-only, no WAL). The difference is reported as `listener NOTIFY reads`.
 *
 * Modes (WRIT_BENCH_COMMITS_MODES, comma-separated; default `default,single`): `default` runs the
 * store and worker with their defaults; `single` sends every write transition in a statement of
 * its own (`batchMax: 1`), the comparison for what batching buys. Written to
 * bench/results/commits.json.
 */
import { loadavg } from "node:os";
import pg from "pg";
import { generateSigningKey, type PostgresStoreOptions } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { freshDatabase, pgServerOrNull, stopPgServer } from "../tests/helpers/pg.js";
import { AUTHORITY_REF, BENCH_ACTION, benchActionHost } from "./host.js";

const WINDOW = 16;
const CONCURRENCY = 8;
const N = Number(process.env.WRIT_BENCH_COMMITS_N ?? 3000);

export type CommitsMode = "default" | "single";
const MODES: Record<CommitsMode, PostgresStoreOptions> = {
  default: {},
  single: { batchMax: 1 },
};

/** Where a transaction came from, by the statements it ran. */
export type Origin =
  | "submit"
  | "claim"
  | "consume"
  | "settle"
  | "advance"
  | "record"
  | "sealing"
  | "sealing poll"
  | "heartbeat"
  | "next-run poll"
  | "listener"
  | "clock"
  | "maintenance"
  | "other";

/** Origin of each batchable function (the members of `writ_batch`). */
const FN_ORIGIN: Record<string, Origin> = {
  writ_admit: "submit",
  writ_begin: "consume",
  writ_settle: "settle",
  writ_advance: "advance",
  writ_record_attempt: "record",
  writ_seal_if_head: "sealing",
  writ_claim_prepared_json: "claim",
  writ_claim_next: "claim",
};

/** Statements that only read: a transaction made of them alone writes nothing (no WAL flush at its commit). */
function readOnly(name: string, text: string): boolean {
  return /^writ_(list_|t_read_unsealed|unsealed_scopes|next_run_at|t_prepare)/.test(name) || name === "LISTEN" || name === "UNLISTEN" || /clock_timestamp/.test(text);
}

/** Origin of a statement by its prepared name (or first word), with the batch members it carries. */
function originsOf(name: string, text: string, values: unknown[] | undefined): Origin[] {
  if (name === "writ_t_batch") {
    try {
      const members = JSON.parse(String(values?.[0])) as Array<[string, unknown]>;
      return members.map(([fn]) => FN_ORIGIN[fn] ?? "other");
    } catch {
      return ["other"];
    }
  }
  if (name === "writ_t_claim" || name === "writ_t_claim_prepared" || name === "writ_t_claim_json" || name === "writ_t_claim_next") return ["claim"];
  if (name.startsWith("writ_t_")) {
    const fn = /SELECT (writ_\w+)\(/.exec(text)?.[1];
    if (fn !== undefined && FN_ORIGIN[fn] !== undefined) return [FN_ORIGIN[fn]];
    if (name.includes("unsealed")) return ["sealing"];
  }
  if (name.startsWith("writ_heartbeat")) return ["heartbeat"];
  if (name === "writ_next_run_at") return ["next-run poll"];
  if (name === "writ_unsealed_scopes") return ["sealing poll"];
  if (name === "LISTEN" || name === "UNLISTEN") return ["listener"];
  if (/clock_timestamp|extract\s*\(\s*epoch/i.test(text)) return ["clock"];
  if (/^(ANALYZE|VACUUM)/i.test(name) || /pg_stat_user_tables|pg_class/i.test(text)) return ["maintenance"];
  return ["other"];
}

export interface OriginCounts {
  /** Round trips. */
  statements: number;
  /** Transactions that wrote (a batch, a transition, a claim, a heartbeat: not a read in autocommit). */
  writes: number;
  /** Transactions (each batch statement's commit split among its members' origins). */
  transactions: number;
  /** Of which rolled back. */
  rollbacks: number;
  /** Batch members, and calls sent alone, of this origin. */
  members: number;
}

interface Counter {
  byOrigin: Map<Origin, OriginCounts>;
  names: Map<string, number>;
  /** Members carried by `writ_batch` statements. */
  batchMembers: number;
}

function bump(c: Counter, o: Origin, d: Partial<OriginCounts>): void {
  const e = c.byOrigin.get(o) ?? { statements: 0, writes: 0, transactions: 0, rollbacks: 0, members: 0 };
  e.statements += d.statements ?? 0;
  e.writes += d.writes ?? 0;
  e.transactions += d.transactions ?? 0;
  e.rollbacks += d.rollbacks ?? 0;
  e.members += d.members ?? 0;
  c.byOrigin.set(o, e);
}

/** Wraps every connection of `pool`: counts statements and transactions by origin. */
function countPool(pool: pg.Pool): Counter {
  const c: Counter = { byOrigin: new Map(), names: new Map(), batchMembers: 0 };
  pool.on("connect", (client) => {
    /** The open BEGIN block: its statements' origins, and how many statements it ran. */
    let open: { origins: Origin[]; statements: number; writes: boolean } | null = null;
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const q = args[0] as string | { name?: string; text?: string; values?: unknown[] } | undefined;
      const text = typeof q === "string" ? q : (q?.text ?? "");
      const name = (typeof q === "object" ? q?.name : undefined) ?? text.trim().split(/\s/, 1)[0]!.toUpperCase();
      const values = typeof q === "object" ? q?.values : Array.isArray(args[1]) ? (args[1] as unknown[]) : undefined;
      c.names.set(name, (c.names.get(name) ?? 0) + 1);
      if (name === "BEGIN") open = { origins: [], statements: 1, writes: false };
      else if (name === "COMMIT" || name === "ROLLBACK") {
        const none: { origins: Origin[]; statements: number; writes: boolean } = { origins: [], statements: 0, writes: false };
        const tx = open ?? none;
        open = null;
        const origins = tx.origins.length > 0 ? tx.origins : (["other"] as Origin[]);
        // A BEGIN block is named by its first statement (a heartbeat's, a poll's).
        bump(c, origins[0]!, { statements: tx.statements + 1, transactions: 1, writes: tx.writes && name === "COMMIT" ? 1 : 0, rollbacks: name === "ROLLBACK" ? 1 : 0 });
      } else {
        const origins = originsOf(name, text, values);
        if (name === "writ_t_batch") c.batchMembers += origins.length;
        const writes = !readOnly(name, text);
        if (open !== null) {
          open.origins.push(...origins);
          open.statements++;
          open.writes ||= writes;
        } else {
          // One statement in autocommit: one transaction, split among the members it carries.
          const k = origins.length;
          for (const o of origins) bump(c, o, { statements: 1 / k, transactions: 1 / k, writes: writes ? 1 / k : 0, members: 1 });
        }
      }
      return original(...args);
    };
  });
  return c;
}

/** The run database's counters, read from the server's maintenance database (the reads are not counted in it). */
async function dbCounters(url: string, db: string): Promise<{ commits: number; rollbacks: number }> {
  const admin = new URL(url);
  admin.pathname = "/postgres";
  const c = new pg.Client({ connectionString: admin.toString() });
  await c.connect();
  try {
    const { rows } = await c.query<{ c: string; r: string }>("SELECT xact_commit AS c, xact_rollback AS r FROM pg_stat_database WHERE datname = $1", [db]);
    return { commits: Number(rows[0]!.c), rollbacks: Number(rows[0]!.r) };
  } finally {
    await c.end();
  }
}

/** Once the server's counters stop moving (every closed backend has flushed its own). */
async function settledCounters(url: string, db: string): Promise<{ commits: number; rollbacks: number }> {
  let last = await dbCounters(url, db);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const now = await dbCounters(url, db);
    if (now.commits === last.commits && now.rollbacks === last.rollbacks) return now;
    last = now;
  }
  throw new Error("commits bench: the server's transaction counters did not settle within 10 s");
}

export interface CommitsRun {
  mode: CommitsMode;
  invocations: number;
  seconds: number;
  /** Per invocation, as the server counts them (pg_stat_database). */
  server: { commits: number; rollbacks: number };
  /** Per invocation, as the driver sees them. */
  driver: { statements: number; transactions: number; writes: number; rollbacks: number };
  /** Per invocation: server commits the driver did not send (the listener's backend reading NOTIFYs). */
  listenerNotifyReads: number;
  /** Per invocation, by origin. */
  byOrigin: Record<string, OriginCounts>;
  /** Members per batch statement (mean), from the driver's counts. */
  membersPerBatch: number;
  /** Statements by name over the run (not per invocation). */
  statementNames: Record<string, number>;
}

export interface CommitsResult {
  inFlight: number;
  concurrency: number;
  runs: CommitsRun[];
  loadavg: number[];
}

async function runMode(mode: CommitsMode): Promise<CommitsRun> {
  const db = await freshDatabase({ empty: true });
  const name = new URL(db.url).pathname.slice(1);
  try {
    // Schema and the authority first, on their own connections, so that the counts start clean.
    {
      const setup = postgresStore({ url: db.url });
      await setup.migrate();
      const host = benchActionHost(setup, generateSigningKey({ kid: "bench-commits" }));
      await host.authorities.create({ tenantId: "bench", spaceId: "s" }, { authorityRef: AUTHORITY_REF, principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [BENCH_ACTION.id] });
      await setup.close();
    }
    const before = await settledCounters(db.url, name);

    const pool = new pg.Pool({ connectionString: db.url, max: CONCURRENCY + 6 });
    pool.on("error", () => undefined);
    const counter = countPool(pool);
    const store = postgresStore({ pool }, { ...MODES[mode], analyzeEveryMs: 0 });
    let done = 0;
    // Set by the host's callbacks (TypeScript cannot see that, hence the cast).
    let failed = null as string | null;
    const waiters: Array<() => void> = [];
    const wakeAll = (): void => {
      for (const w of waiters.splice(0)) w();
    };
    const changed = (): Promise<void> => new Promise<void>((r) => waiters.push(r));
    const host = benchActionHost(store, generateSigningKey({ kid: "bench-commits" }), {
      succeeded: () => {
        done++;
        wakeAll();
      },
      ended: (id, why) => {
        failed ??= `invocation ${id} ended ${why}`;
        wakeAll();
      },
    });
    const worker = host.worker({ concurrency: CONCURRENCY });
    worker.start();
    await store.listening();
    const scope = { tenantId: "bench", spaceId: "s" };
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: WINDOW }, async () => {
        while (next < N && failed === null) {
          const i = next++;
          while (i - done >= WINDOW && failed === null) await changed();
          await host.submit({ ...scope, action: BENCH_ACTION.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: AUTHORITY_REF, params: { n: i }, idempotencyKey: `commits-${i}` });
        }
      }),
    );
    while (done < N && failed === null) await changed();
    const seconds = (performance.now() - t0) / 1000;
    // Stopping drains the sequencer: every entry is sealed, and its commits are counted.
    await worker.stop();
    await store.close();
    await pool.end();
    if (failed !== null) throw new Error(`commits bench (${mode}): ${failed}`);
    const after = await settledCounters(db.url, name);

    const per = (x: number): number => Math.round((x / N) * 1000) / 1000;
    const byOrigin: Record<string, OriginCounts> = {};
    let statements = 0;
    let transactions = 0;
    let writes = 0;
    let rollbacks = 0;
    for (const [o, v] of [...counter.byOrigin.entries()].sort((a, b) => b[1].transactions - a[1].transactions)) {
      byOrigin[o] = { statements: per(v.statements), writes: per(v.writes), transactions: per(v.transactions), rollbacks: per(v.rollbacks), members: per(v.members) };
      statements += v.statements;
      writes += v.writes;
      transactions += v.transactions;
      rollbacks += v.rollbacks;
    }
    const batches = counter.names.get("writ_t_batch") ?? 0;
    return {
      mode,
      invocations: N,
      seconds: Math.round(seconds * 10) / 10,
      server: { commits: per(after.commits - before.commits), rollbacks: per(after.rollbacks - before.rollbacks) },
      driver: { statements: per(statements), transactions: per(transactions), writes: per(writes), rollbacks: per(rollbacks) },
      listenerNotifyReads: per(after.commits - before.commits - transactions),
      byOrigin,
      membersPerBatch: batches > 0 ? Math.round((counter.batchMembers / batches) * 100) / 100 : 0,
      statementNames: Object.fromEntries([...counter.names.entries()].sort((a, b) => b[1] - a[1])),
    };
  } finally {
    await db.drop();
  }
}

export async function benchCommits(): Promise<CommitsResult | null> {
  if ((await pgServerOrNull()) === null) return null;
  const modes = (process.env.WRIT_BENCH_COMMITS_MODES ?? "default,single").split(",").map((m) => m.trim()) as CommitsMode[];
  for (const m of modes) if (!(m in MODES)) throw new Error(`WRIT_BENCH_COMMITS_MODES: unknown mode ${JSON.stringify(m)}; modes: ${Object.keys(MODES).join(", ")}`);
  const load = loadavg();
  const runs: CommitsRun[] = [];
  try {
    for (const m of modes) runs.push(await runMode(m));
  } finally {
    await stopPgServer();
  }
  return { inFlight: WINDOW, concurrency: CONCURRENCY, runs, loadavg: [...load, ...loadavg()] };
}

/** The table `npm run bench -- commits` prints: per invocation, by origin. */
export function commitsSummary(r: CommitsResult): string[] {
  const lines = [`commits per invocation on PostgreSQL, one process, worker concurrency ${r.concurrency}, ${r.inFlight} in flight (load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}):`];
  for (const run of r.runs) {
    lines.push(
      `  ${run.mode}: ${run.invocations} invocations in ${run.seconds} s | server: ${run.server.commits} commits, ${run.server.rollbacks} rollbacks | driver: ${run.driver.statements} statements, ${run.driver.transactions} transactions (${run.driver.writes} writing) | ${run.membersPerBatch} members per batch statement`,
    );
    for (const [o, v] of Object.entries(run.byOrigin)) {
      lines.push(`    ${o.padEnd(14)} ${v.transactions.toFixed(3)} tx (${v.writes.toFixed(3)} writing)  ${v.statements.toFixed(3)} statements  ${v.members.toFixed(3)} members${v.rollbacks > 0 ? `  ${v.rollbacks.toFixed(3)} rollbacks` : ""}`);
    }
    lines.push(`    ${"listener NOTIFY reads (server only)".padEnd(14)} ${run.listenerNotifyReads.toFixed(3)} tx`);
  }
  return lines;
}
