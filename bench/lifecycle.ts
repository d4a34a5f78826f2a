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
import { z } from "zod";
import { createHost, defineAction, defineConnector, directoryArchive, functionPolicy, generateSigningKey, type CreateHostOptions, type Host } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { median } from "./lib.js";

const WINDOW_S = 10;
const IN_FLIGHT = 16;
const ACTION = defineAction({ id: "bench.noop", version: "1", params: z.object({ n: z.number().int().nonnegative() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
const CONNECTOR = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
const POLICY = functionPolicy("bench:v1", ({ request, authority }) => (authority !== null && authority.status === "active" && authority.actions.includes(request.action) ? "ALLOW" : "DENY"));
const SCOPE = { tenantId: "bench", spaceId: "s" };
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
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  let failed: string | null = null;
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
  const host: Host = createHost({
    store,
    actions: [ACTION],
    connectors: [CONNECTOR],
    policy: POLICY,
    signingKey: generateSigningKey({ kid: "lifecycle" }),
    ...lifecycle,
    onEvent: (e) => {
      if (e.type === "invocation.succeeded") {
        const w = waiting.get(e.invocationId);
        if (w) {
          waiting.delete(e.invocationId);
          w();
        } else early.add(e.invocationId);
      } else if (e.type === "invocation.failed" || e.type === "invocation.denied" || e.type === "invocation.reconciliation_required") {
        failed ??= `${e.invocationId} ended ${e.status}`;
      }
    },
  });
  let pruned = 0;
  const unsubscribe = mode === "lifecycle" ? host.retention.onSignal((s) => {
    if (s.kind === "batch") for (const v of Object.values(s.pruned)) pruned += v ?? 0;
  }) : () => undefined;
  await host.authorities.create(SCOPE, { authorityRef: "bench-authority", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [ACTION.id] });
  const worker = host.worker({ concurrency: 8 });
  worker.start();
  let n = 0;
  let done = 0;
  let stop = false;
  const lane = async (): Promise<void> => {
    while (!stop && failed === null) {
      const i = n++;
      const r = await host.submit({ ...SCOPE, action: ACTION.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "bench-authority", params: { n: i }, idempotencyKey: `l-${i}` });
      const id = r.invocation.invocationId;
      if (!early.delete(id)) await new Promise<void>((resolve) => waiting.set(id, resolve));
      done += 1;
    }
  };
  const lanes = Array.from({ length: IN_FLIGHT }, lane);
  const rates: number[] = [];
  let last = 0;
  for (let s = WINDOW_S; s <= seconds; s += WINDOW_S) {
    await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
    rates.push((done - last) / WINDOW_S);
    last = done;
    console.log(`  lifecycle bench, ${mode}: ${s} s ${rates.at(-1)!.toFixed(1)}/s (${done} settled)`);
  }
  stop = true;
  for (const w of waiting.values()) w();
  await Promise.all(lanes);
  await worker.stop();
  unsubscribe();
  const archivedEntries = mode === "lifecycle" ? await store.transact((tx) => tx.journalArchivedThrough(SCOPE)) : null;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  // Set from the host's events (a closure the compiler does not follow).
  const why = failed as string | null;
  if (why !== null) throw new Error(`lifecycle bench: an invocation did not succeed: ${why}`);
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
