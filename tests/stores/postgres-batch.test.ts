/**
 * PostgreSQL batches (docs/stores.md, "Batches"): concurrent write transitions travel together in
 * `writ_batch` statements, and each member still answers alone.
 *
 * Invariants:
 * - calls that arrive while a batch is in flight go together: 24 concurrent begins take far
 *   fewer statements than 24 (counted on the store's own pool, by statement name);
 * - a member refused by the server (lost lease) or by the client (text PostgreSQL cannot store)
 *   fails alone; the others start, numbered without gaps;
 * - `batchMax: 1` sends every call in its own statement (no `writ_batch`).
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isWritError, type Store } from "../../src/index.js";
import { transitionsOf } from "../../src/core/transitions.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { beginInput, claimed } from "../../src/stores/conformance/cases-transitions.js";
import { newScope } from "../../src/stores/conformance/fixtures.js";
import { freshDatabase, type FreshDatabase } from "../helpers/pg.js";

/** A pool that counts the statements its clients run, by prepared-statement name. */
function countingPool(url: string): { pool: pg.Pool; counts: Map<string, number> } {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const counts = new Map<string, number>();
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
      const q = a[0] as { name?: string } | string;
      const name = typeof q === "object" && q !== null && typeof q.name === "string" ? q.name : "other";
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return query(...a);
    };
  });
  return { pool, counts };
}

describe("postgres batches", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  async function run(batchMax: number): Promise<{ counts: Map<string, number>; results: PromiseSettledResult<unknown>[]; seqs: number[] }> {
    const { pool, counts } = countingPool(db.url);
    const store: Store = postgresStore({ pool }, { batchMax, analyzeEveryMs: 0 });
    try {
      const scope = newScope();
      const runs = [];
      for (let i = 0; i < 24; i++) runs.push(await claimed(store, scope));
      const inputs = runs.map((r, i) => {
        const input = beginInput(scope, r.inv.invocationId, { fence: i === 5 ? { ...r.fence, token: "stale" } : r.fence });
        // A NUL in a step's connector: PostgreSQL text cannot hold it, the client refuses this member.
        if (i === 9) input.step = { ...input.step, connector: "bad\u0000connector" };
        return input;
      });
      counts.clear();
      const t = transitionsOf(store);
      const results = await Promise.allSettled(inputs.map((input) => t.begin(scope, input)));
      const seqs = results.flatMap((r) => (r.status === "fulfilled" && r.value.started ? [r.value.seq] : []));
      return { counts: new Map(counts), results, seqs };
    } finally {
      await store.close();
      await pool.end();
    }
  }

  it("24 concurrent begins go in a few writ_batch statements; the refused ones fail alone", async () => {
    const { counts, results, seqs } = await run(32);
    const batches = counts.get("writ_t_batch") ?? 0;
    const singles = counts.get("writ_t_begin") ?? 0;
    console.log(`[postgres-batch] 24 concurrent begins: ${batches} writ_batch + ${singles} single statements`);
    expect(batches).toBeGreaterThan(0);
    expect(batches + singles).toBeLessThanOrEqual(6);
    const r5 = results[5]!;
    expect(r5.status === "rejected" && isWritError(r5.reason, "LEASE_LOST")).toBe(true);
    const r9 = results[9]!;
    expect(r9.status === "rejected" && isWritError(r9.reason, "INVALID_ARGUMENT")).toBe(true);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(22);
    expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
  });

  it("batchMax 1 sends each call alone", async () => {
    const { counts, results } = await run(1);
    expect(counts.get("writ_t_batch") ?? 0).toBe(0);
    expect(counts.get("writ_t_begin")).toBe(23); // the NUL member never reaches the server
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(22);
  });
});
