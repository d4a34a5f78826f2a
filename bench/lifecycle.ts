/**
 * The data lifecycle's cost on the hot path (`npm run bench -- lifecycle`): one host with one worker
 * (concurrency 8) on PostgreSQL with production defaults (a private instance started from the
 * machine's binaries, autovacuum on), one scope, a closed loop of 16 invocations in flight, a
 * one-step no-op action under a real allow policy, WRIT_BENCH_LIFECYCLE_SECS seconds per run
 * (default 180), in interleaved rounds (WRIT_BENCH_LIFECYCLE_ROUNDS, default 2), each run on a
 * fresh database:
 *
 * - plain: retention's background pruner off, no archive target;
 * - lifecycle: retention and archiving in the worker's background at their default pace (batch
 *   sizes, pauses, and how often they run), with windows short enough that they have work during
 *   the run (ended invocations kept WRIT_BENCH_LIFECYCLE_KEEP_MS, default 30 s; the replay window
 *   the same; the approval and retry horizons set below it; archived journal entries kept live in
 *   the database as long), segments written to a temporary directory. Both run every minute (their
 *   default `everyMs`), so a run shorter than that prunes nothing.
 *
 * Reported: the median of the 10-s window rates of each run, lifecycle / plain (goal >= 0.9), and
 * at the end of each run the database's size (`pg_database_size`) and the rows of the largest
 * tables: what retention keeps the database at against what grows without it. Written to
 * bench/results/lifecycle.json.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { directoryArchive, type CreateHostOptions } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { closedLoop, SCOPE } from "./closed-loop.js";
import { median } from "./lib.js";

const TABLES = ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_attempts", "writ_steps", "writ_idempotency", "writ_consumed_decisions"];

export interface LifecycleRun {
  mode: "plain" | "lifecycle";
  seconds: number;
  rates: number[];
  invocations: number;
  medianRate: number;
  databaseBytes: number;
  rows: Record<string, number>;
  /** Lifecycle runs: rows the pruner deleted, and segments / entries archived. */
  pruned: number | null;
  archivedEntries: number | null;
}

export interface LifecycleResult {
  bench: "lifecycle";
  loadavg: number[];
  keepMs: number;
  runs: LifecycleRun[];
  medians: { plain: number; lifecycle: number };
  /** Median of the lifecycle runs' median rates over the plain runs'. Goal >= 0.9. */
  ratio: number;
  /** Database size at the end: lifecycle runs' median over plain runs' median. */
  sizeRatio: number;
}

async function runOnce(url: string, mode: LifecycleRun["mode"], seconds: number, keepMs: number): Promise<LifecycleRun> {
  const store = postgresStore({ url }, { max: 12, applicationName: `writ-bench-lifecycle-${mode}` });
  await store.migrate();
  const dir = mkdtempSync(join(tmpdir(), "writ-bench-archive-"));
  const lifecycle: Partial<CreateHostOptions> =
    mode === "lifecycle"
      ? {
          // Horizons below the window, so the window may be this short (the host refuses a replay
          // window below the retry and approval horizons).
          approvalTtlMs: Math.floor(keepMs / 2),
          retry: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 1000 },
          retention: { invocationsMs: keepMs, replayWindowMs: keepMs },
          archive: { target: directoryArchive(dir), keepLiveMs: keepMs },
        }
      : { retention: { enabled: false } };
  let pruned = 0;
  let rates: number[];
  let done: number;
  let archivedEntries: number | null = null;
  try {
    ({ rates, invocations: done } = await closedLoop(store, {
      label: `lifecycle bench, ${mode}`,
      seconds,
      host: lifecycle,
      onHost: (host) => {
        if (mode === "lifecycle") {
          host.retention.onSignal((s) => {
            if (s.kind === "batch") for (const v of Object.values(s.pruned)) pruned += v ?? 0;
          });
        }
      },
    }));
    if (mode === "lifecycle") archivedEntries = await store.transact((tx) => tx.journalArchivedThrough(SCOPE));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const size = Number((await c.query<{ n: string }>("SELECT pg_database_size(current_database()) AS n")).rows[0]!.n);
    const rows: Record<string, number> = {};
    for (const t of TABLES) rows[t] = Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${t}`)).rows[0]!.n);
    return { mode, seconds, rates, invocations: done, medianRate: median(rates), databaseBytes: size, rows, pruned: mode === "lifecycle" ? pruned : null, archivedEntries };
  } finally {
    await c.end();
  }
}

export async function benchLifecycle(
  seconds = Number(process.env.WRIT_BENCH_LIFECYCLE_SECS ?? 180),
  rounds = Number(process.env.WRIT_BENCH_LIFECYCLE_ROUNDS ?? 2),
  keepMs = Number(process.env.WRIT_BENCH_LIFECYCLE_KEEP_MS ?? 30_000),
): Promise<LifecycleResult> {
  const inst = await startPgInstance();
  const runs: LifecycleRun[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      // Interleaved, the order alternating by round.
      const order: Array<LifecycleRun["mode"]> = r % 2 === 0 ? ["plain", "lifecycle"] : ["lifecycle", "plain"];
      for (const mode of order) {
        const name = `lifecycle_${r}_${mode}`;
        await inst.createDatabase(name);
        runs.push(await runOnce(inst.url(name), mode, seconds, keepMs));
      }
    }
  } finally {
    await inst.close();
  }
  const of = (m: LifecycleRun["mode"]) => runs.filter((x) => x.mode === m);
  const medians = { plain: median(of("plain").map((x) => x.medianRate)), lifecycle: median(of("lifecycle").map((x) => x.medianRate)) };
  return {
    bench: "lifecycle",
    loadavg: loadavg(),
    keepMs,
    runs,
    medians,
    ratio: medians.lifecycle / medians.plain,
    sizeRatio: median(of("lifecycle").map((x) => x.databaseBytes)) / median(of("plain").map((x) => x.databaseBytes)),
  };
}
