/**
 * Where one invocation's time goes (`npm run bench -- latency`): one host with one started worker
 * on PostgreSQL, one invocation in flight at a time (each submitted after the previous one
 * succeeded), a one-step no-op action under a real allow policy. Each stage is timed in the
 * process (`performance.now()`): the store's transitions by a wrapper around them, the policy and
 * the connector by marks inside them, the claim and the end by the host's events. Medians over
 * N invocations after a warm-up, as a table of stages in the order they happen.
 *
 * The server is a private instance (tests/helpers/pg-instance.ts, PostgreSQL's defaults) with
 * pg_stat_statements loaded, so each transition's server execution time (without commit and round
 * trip) is reported beside the time the client waited for it, and (`track = all`) the statements
 * nested in the store's functions with their server time per invocation: where the server's share
 * goes. Written to bench/results/latency.json.
 */
import { loadavg } from "node:os";
import pg from "pg";
import { z } from "zod";
import { transitionsOf } from "../src/core/transitions.js";
import { createHost, defineAction, defineConnector, functionPolicy, generateSigningKey, type Host, type Store } from "../src/index.js";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { median } from "./lib.js";

const SCOPE = { tenantId: "bench", spaceId: "s" };

export interface LatencyStage {
  /** What ends at this mark (the time is from the previous mark). */
  stage: string;
  medianMs: number;
  /** For a store transition: its statement's mean server execution time (pg_stat_statements). */
  serverMs?: number;
}

/** One statement run inside the store's functions (pg_stat_statements, `track = all`). */
export interface ServerPart {
  /** The statement's text, whitespace folded, cut at 100 characters. */
  statement: string;
  callsPerInvocation: number;
  /** Server execution time per invocation (all its calls), ms. */
  msPerInvocation: number;
}

export interface LatencyResult {
  loadavg: number[];
  invocations: number;
  totalMedianMs: number;
  totalP99Ms: number;
  stages: LatencyStage[];
  /**
   * Where the server's execution time goes: the statements nested in the transitions' functions
   * (and the seals' and reads'), per invocation, most expensive first (the top 12). A nested
   * statement's time is also inside its caller's `serverMs`.
   */
  serverParts: ServerPart[];
}

/** pg_stat_statements' text of each transition's statement starts with this. */
const SERVER_TEXT: Record<string, string> = {
  admit: "SELECT writ_admit(",
  admitClaimed: "SELECT writ_admit_claimed(",
  claim: "SELECT writ_claim(",
  claimPrepared: "SELECT writ_claim_next(",
  prepare: "SELECT (SELECT coalesce(json_agg(doc ORDER BY step_index)",
  begin: "SELECT writ_begin(",
  settle: "SELECT writ_settle(",
};

export async function benchLatency(n = Number(process.env.WRIT_BENCH_LATENCY_N ?? 300)): Promise<LatencyResult> {
  const marks: Array<[string, number]> = [];
  const mark = (s: string): void => void marks.push([s, performance.now()]);
  const action = defineAction({ id: "bench.noop", version: "1", params: z.object({ n: z.number().int().nonnegative() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
  const connector = defineConnector({
    id: "noop",
    operations: {
      run: () => {
        mark("connector call");
        return { outcome: "success", externalRef: "ok" };
      },
    },
  });
  const policy = functionPolicy("bench:v1", ({ request, authority }) => {
    mark("policy evaluated");
    return authority !== null && authority.status === "active" && authority.actions.includes(request.action) ? "ALLOW" : "DENY";
  });
  const inst = await startPgInstance({ conf: ["shared_preload_libraries = 'pg_stat_statements'", "pg_stat_statements.track = all"] });
  try {
    await inst.createDatabase("latency");
    const url = inst.url("latency");
    const raw = postgresStore({ url }, { max: 12, applicationName: "writ-bench-latency" });
    await raw.migrate();
    // The store's transitions, each timed from call to answer.
    const own = transitionsOf(raw);
    const timed = new Proxy(own, {
      get(t, k) {
        const v = Reflect.get(t, k) as unknown;
        if (typeof v !== "function") return v;
        return async (...a: unknown[]) => {
          mark(`${String(k)} sent`);
          try {
            return await (v as (...x: unknown[]) => Promise<unknown>).apply(t, a);
          } finally {
            mark(`${String(k)} answered`);
          }
        };
      },
    });
    const store: Store = new Proxy(raw, {
      get(t, k) {
        if (k === "transitions") return timed;
        const v = Reflect.get(t, k) as unknown;
        return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(t) : v;
      },
    });
    let finished: (() => void) | null = null;
    let current = "";
    const host: Host = createHost({
      store,
      actions: [action],
      connectors: [connector],
      policy,
      signingKey: generateSigningKey({ kid: "latency" }),
      onEvent: (e) => {
        if (e.invocationId !== current) return;
        if (e.type === "invocation.claimed") mark("claimed (event)");
        if (e.type === "invocation.succeeded") {
          mark("succeeded (event)");
          finished?.();
        }
      },
    });
    await host.authorities.create(SCOPE, { authorityRef: "a", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [action.id] });
    // WRIT_BENCH_LATENCY_HANDOFF=0: the path of an API process without a worker (a wake-up, then a claim).
    const worker = host.worker({ concurrency: 8, pollMs: 1000, handoff: process.env.WRIT_BENCH_LATENCY_HANDOFF !== "0" });
    worker.start();
    const warm = Math.min(50, Math.floor(n / 5));
    const perStage = new Map<string, number[]>();
    const totals: number[] = [];
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    try {
      for (let i = 0; i < warm + n; i++) {
        if (i === warm) await c.query("SELECT pg_stat_statements_reset()");
        const done = new Promise<void>((r) => (finished = r));
        marks.length = 0;
        const t0 = performance.now();
        const p = host.submit({ ...SCOPE, action: action.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a", params: { n: i }, idempotencyKey: `lat-${i}` });
        current = (await p).invocation.invocationId;
        await done;
        // Let the sequencer's seal of this invocation's entries pass before the next one starts.
        await new Promise((r) => setTimeout(r, 30));
        if (i < warm) continue;
        const end = marks.find((m) => m[0] === "succeeded (event)")![1];
        // The path of this invocation: its marks up to the end, in time order; a transition the
        // sequencer or an idle claim ran meanwhile is not on it (claims that found nothing, seals).
        const path = marks.filter((m) => m[1] <= end && !m[0].startsWith("readUnsealed") && !m[0].startsWith("sealIfHead")).sort((a, b) => a[1] - b[1]);
        const claimedAt = path.findIndex((m) => m[0] === "claimed (event)");
        // The claim that took this invocation: the last one sent and answered before the claimed
        // event (the worker's loop also claims while idle; those claims are not on the path).
        const lastBefore = (name: string): number => {
          let at = -1;
          for (let j = 0; j < claimedAt; j++) if (path[j]![0] === name) at = j;
          return at;
        };
        const claimMarks = new Set([lastBefore("claim sent"), lastBefore("claim answered")]);
        const onPath = path.filter((m, j) => !m[0].startsWith("claim ") || claimMarks.has(j));
        let prev = t0;
        const seen = new Set<string>();
        for (const [name, t] of onPath) {
          if (seen.has(name)) continue;
          seen.add(name);
          let list = perStage.get(name);
          if (list === undefined) perStage.set(name, (list = []));
          list.push(t - prev);
          prev = t;
        }
        totals.push(end - t0);
      }
      const server = await c.query<{ query: string; mean: number }>(
        "SELECT query, mean_exec_time AS mean FROM pg_stat_statements WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())",
      );
      const nested = await c.query<{ query: string; calls: string; total: number }>(
        "SELECT query, calls, total_exec_time AS total FROM pg_stat_statements WHERE NOT toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) ORDER BY total_exec_time DESC LIMIT " + (process.env.WRIT_BENCH_LATENCY_PARTS ?? "12"),
      );
      const serverParts: ServerPart[] = nested.rows.map((r) => ({
        statement: r.query.replace(/\s+/g, " ").trim().slice(0, 100),
        callsPerInvocation: Number(r.calls) / n,
        msPerInvocation: Number(r.total) / n,
      }));
      const serverMs = (stage: string): number | undefined => {
        const name = /^(\w+) answered$/.exec(stage)?.[1];
        const prefix = name !== undefined ? SERVER_TEXT[name] : undefined;
        if (prefix === undefined) return undefined;
        const rows = server.rows.filter((r) => r.query.startsWith(prefix));
        return rows.length > 0 ? Math.max(...rows.map((r) => Number(r.mean))) : undefined;
      };
      // Stages in path order (the order of their median position).
      const order = [...perStage.keys()].filter((k) => perStage.get(k)!.length >= n / 2);
      const stages: LatencyStage[] = order.map((stage) => {
        const s = serverMs(stage);
        return { stage, medianMs: median(perStage.get(stage)!), ...(s !== undefined ? { serverMs: s } : {}) };
      });
      const sorted = [...totals].sort((a, b) => a - b);
      return { loadavg: loadavg(), invocations: n, totalMedianMs: median(totals), totalP99Ms: sorted[Math.floor(sorted.length * 0.99)]!, stages, serverParts };
    } finally {
      await c.end();
      await worker.stop();
      await raw.close();
    }
  } finally {
    await inst.close();
  }
}
