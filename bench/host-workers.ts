/**
 * The workers of the durable host bench (bench/host.ts), over a pool of their own that counts
 * statements: a Writ host worker (full governance) or a graphile-worker runner with a no-op task.
 * Each reports every completion to `completed` with a system-wide monotonic timestamp
 * (`process.hrtime`, comparable across processes on one machine):
 *
 * - Writ: the `invocation.succeeded` event, which the host emits after the settlement commits;
 * - graphile-worker: the moment its `complete_job(s)` statement (an autocommit DELETE) returns,
 *   seen on the pool, since graphile-worker fires that statement without awaiting it.
 *
 * Run in worker processes (bench/host-worker-child.ts) or, for the in-process configurations, in
 * the bench process itself.
 */
import { EventEmitter } from "node:events";
import { Logger, run, type Runner, type WorkerEvents } from "graphile-worker";
import pg from "pg";
import type { DataKeyPort, Host, SigningKey } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { benchActionHost, benchStoreOptions, hr, instrumentPool, type PoolStats } from "./host.js";

export interface Running {
  stop(): Promise<void>;
  stats: PoolStats;
  cpu: NodeJS.CpuUsage;
}

const silent = new Logger(() => () => undefined);

export async function startWrit(url: string, concurrency: number, signingKey: SigningKey, journalKeys: string[], completed: (id: string, t: number) => void, failed: (message: string) => void, handoff = true, dataKey?: DataKeyPort): Promise<Running & { host: Host }> {
  const pool = new pg.Pool({ connectionString: url, max: concurrency + 3, idleTimeoutMillis: 60_000, application_name: "writ-bench-host" });
  pool.on("error", () => undefined);
  const stats = instrumentPool(pool, { journalKeys: new Set(journalKeys) });
  const store = postgresStore({ pool }, { ...benchStoreOptions(), applicationName: "writ-bench-host" });
  const host = benchActionHost(store, signingKey, {
    succeeded: (id) => completed(id, hr()),
    ended: (id, why) => failed(`invocation ${id} ended ${why}`),
  }, dataKey);
  const worker = host.worker({ concurrency, handoff });
  worker.start();
  await store.listening();
  return {
    host,
    stats,
    cpu: process.cpuUsage(),
    async stop() {
      await worker.stop();
      await store.close();
      await pool.end();
    },
  };
}

export async function startGraphile(url: string, concurrency: number, completed: (id: string, t: number) => void): Promise<Running> {
  const pool = new pg.Pool({ connectionString: url, max: concurrency + 3, idleTimeoutMillis: 60_000, application_name: "writ-bench-graphile" });
  pool.on("error", () => undefined);
  const stats = instrumentPool(pool, { onComplete: (ids) => ids.forEach((id) => completed(id, hr())) });
  const events = new EventEmitter() as WorkerEvents;
  const listening = new Promise<void>((resolve) => events.once("pool:listen:success", () => resolve()));
  const runner: Runner = await run({
    pgPool: pool,
    events,
    concurrency,
    noHandleSignals: true,
    logger: silent,
    parsedCronItems: [],
    taskList: { noop: async () => undefined },
  });
  await listening;
  return {
    stats,
    cpu: process.cpuUsage(),
    async stop() {
      await runner.stop();
      await pool.end();
    },
  };
}

