/**
 * `npm run bench -- plans`: the buffers each hot statement of the PostgreSQL store touches as the
 * history grows (docs/stores.md, "Hot statements and history"). For each size (default 10,000,
 * 100,000 and 1,000,000 ended invocations; `WRIT_BENCH_PLANS_SIZES=10000,100000`), a fresh database
 * gets that history written the way the store writes it (tests/helpers/pg-plans.ts: each invocation
 * inserted queued, claimed, settled; its attempt, step and sealed journal entry) beside a little
 * live work, is vacuumed and analyzed (as autovacuum would have), and every hot statement is run
 * under EXPLAIN (ANALYZE, BUFFERS) twice (the second figure counts). Buffers are counts of pages,
 * not times: the machine's load does not move them.
 *
 * Goal: the buffers do not grow with the history (largest / smallest history close to 1: one more
 * B-tree level per index descent at most) and no plan holds a sequential or bitmap scan of a Writ
 * table.
 */
import pg from "pg";
import { migratePostgres } from "../src/stores/postgres/postgres-migrate.js";
import { freshDatabase, pgServerOrNull } from "../tests/helpers/pg.js";
import { badNodes, explain, functionPlans, history, hot } from "../tests/helpers/pg-plans.js";

export interface PlansResult {
  bench: "plans";
  at: string;
  loadavg: number[];
  sizes: number[];
  /** Per statement: buffers per size (same order as `sizes`), the plan's node types and indexes at the largest size. */
  statements: Array<{ name: string; buffers: number[]; largestOverSmallest: number; badNodes: string[]; indexes: string[] }>;
  /** writ_claim (the function the worker calls): its statements' largest buffer count per size. */
  claimFunction: { buffers: number[]; badNodes: string[] };
  /** Seconds to write and vacuum each history. */
  loadSeconds: number[];
}

const TABLES = ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_journal_pending", "writ_attempts", "writ_steps"];

export async function benchPlans(sizes = (process.env.WRIT_BENCH_PLANS_SIZES ?? "10000,100000,1000000").split(",").map(Number)): Promise<PlansResult | null> {
  if (sizes.some((n) => !Number.isSafeInteger(n) || n < 1)) throw new Error(`WRIT_BENCH_PLANS_SIZES must list positive integers, got ${JSON.stringify(sizes)}`);
  if ((await pgServerOrNull()) === null) {
    console.log("plans: no PostgreSQL server (skipped)");
    return null;
  }
  sizes = [...sizes].sort((a, b) => a - b);
  const now = sizes.at(-1)! * 10;
  const perSize: Array<{ buffers: Map<string, number>; nodes: Map<string, string[]>; indexes: Map<string, string[]>; fn: { buffers: number; bad: string[] } }> = [];
  const loadSeconds: number[] = [];
  for (const n of sizes) {
    const db = await freshDatabase({ empty: true });
    const c = new pg.Client({ connectionString: db.url });
    c.on("error", () => undefined);
    await c.connect();
    try {
      await migratePostgres(c);
      const t0 = Date.now();
      console.log(`  plans: writing ${n} ended invocations ...`);
      await history(c, n);
      for (const t of TABLES) await c.query(`VACUUM ANALYZE ${t}`);
      loadSeconds.push((Date.now() - t0) / 1000);
      const buffers = new Map<string, number>();
      const nodes = new Map<string, string[]>();
      const indexes = new Map<string, string[]>();
      for (const h of hot(now)) {
        await explain(c, h.stmt, h.values);
        const p = await explain(c, h.stmt, h.values);
        buffers.set(h.name, p.buffers);
        nodes.set(h.name, badNodes(p));
        indexes.set(h.name, [...new Set(p.nodes.map((x) => x.index).filter((x): x is string => x !== undefined))]);
      }
      const claimArgs = hot(now)[0]!.values;
      await functionPlans(c, "SELECT writ_claim($1, $2, $3, $4, $5)", claimArgs);
      const fn = await functionPlans(c, "SELECT writ_claim($1, $2, $3, $4, $5)", claimArgs);
      perSize.push({ buffers, nodes, indexes, fn: { buffers: Math.max(0, ...fn.map((p) => p.buffers)), bad: badNodes({ nodes: fn.flatMap((p) => p.nodes), buffers: 0 }) } });
      console.log(`  plans, ${n} ended invocations: ${[...buffers].map(([k, v]) => `${k} ${v}`).join(", ")}, writ_claim ${perSize.at(-1)!.fn.buffers} buffers`);
    } finally {
      await c.end().catch(() => undefined);
      await db.drop();
    }
  }
  const first = perSize[0]!;
  const last = perSize.at(-1)!;
  const statements = [...first.buffers.keys()].map((name) => {
    const buffers = perSize.map((p) => p.buffers.get(name)!);
    return { name, buffers, largestOverSmallest: buffers.at(-1)! / Math.max(1, buffers[0]!), badNodes: last.nodes.get(name)!, indexes: last.indexes.get(name)! };
  });
  return {
    bench: "plans",
    at: new Date().toISOString(),
    loadavg: (await import("node:os")).loadavg(),
    sizes,
    statements,
    claimFunction: { buffers: perSize.map((p) => p.fn.buffers), badNodes: last.fn.bad },
    loadSeconds,
  };
}
