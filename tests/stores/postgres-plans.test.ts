/**
 * The hot statements' plans on a database holding a long history (docs/stores.md, "Hot statements
 * and history"). 100,000 ended invocations (each written queued, then claimed, then settled, so
 * their dead row versions and index entries are there as in real use), their attempts, steps and
 * a sealed journal (each entry written unsealed, then sealed), beside a little live work; then
 * 10x less history in a second database for comparison.
 *
 * Invariants checked, for the claim, the next-run read, the heartbeat, the attempt and steps
 * look-ups and the journal head read:
 * - the store's statistics keeper (postgres-stats.ts) finds the stale hot tables and analyzes them,
 *   and where autovacuum does not run it vacuums those whose dead rows passed 10%,
 *   and then finds nothing left to do;
 * - no sequential or bitmap scan of a Writ table in any of those statements' plans;
 * - the buffers each statement touches do not follow the history: with 10x the history (after a
 *   vacuum, as autovacuum would have run) they grow by at most a quarter plus a few pages (one more
 *   B-tree level per index descent);
 * - without any vacuum, the claim still uses its two partial indexes in order (a plain scan marks
 *   the dead entries it passes); its buffers are printed.
 * - The archiver's journal prune (a batch of 500 entries) reaches the batch's documents by their
 *   ids: no sequential scan or hash of the journal, and buffers that do not follow the history; so
 *   does the seal's read of unsealed entries, even when the statistics say the journal is empty.
 * - The lease check of every start and settlement finds the invocation by its key: a dozen
 *   buffers, not a walk of every invocation its owner ran since the table's last vacuum.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM } from "../../src/stores/postgres/postgres-claims.js";
import { PRUNE, PRUNE_BEFORE } from "../../src/stores/postgres/postgres-journal.js";
import { ConnectionExec } from "../../src/stores/postgres/postgres-exec.js";
import { analyzeStale } from "../../src/stores/postgres/postgres-stats.js";
import { migratePostgres } from "../../src/stores/postgres/postgres-migrate.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";
import { badNodes, explain, functionPlans, history, hot, S, T } from "../helpers/pg-plans.js";

const server = await pgServerOrNull();
const HISTORY = 100_000;

describe.skipIf(server === null)("PostgreSQL hot statements on a long history", () => {
  const dbs: FreshDatabase[] = [];
  const clients: pg.Client[] = [];
  const open = async (): Promise<pg.Client> => {
    const db = await freshDatabase({ empty: true });
    dbs.push(db);
    const c = new pg.Client({ connectionString: db.url });
    c.on("error", () => undefined);
    await c.connect();
    clients.push(c);
    await migratePostgres(c);
    // This test decides when vacuum runs: autovacuum stays out of its tables.
    for (const t of ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_journal_pending", "writ_attempts", "writ_steps"]) await c.query(`ALTER TABLE ${t} SET (autovacuum_enabled = false)`);
    return c;
  };
  /** The keeper's check; `vacuum: false` keeps it to statistics (the first test decides when vacuum runs). */
  const analyze = async (c: pg.Client, o: { vacuum?: boolean } = { vacuum: false }): Promise<string[]> => {
    const x = new ConnectionExec(c, false, []);
    const done = await analyzeStale(x, (text) => x.command(text), o);
    return [...done.analyzed, ...done.vacuumed].sort();
  };
  let big: pg.Client;
  let small: pg.Client;

  beforeAll(async () => {
    big = await open();
    small = await open();
    await history(big, HISTORY);
    await history(small, HISTORY / 10);
  }, 120_000);

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    for (const db of dbs) await db.drop();
  });

  it("the statistics keeper analyzes the stale hot tables, and the plans are index scans", async () => {
    const now = HISTORY * 10;
    const stale = await analyze(big);
    expect(stale).toEqual(expect.arrayContaining(["writ_attempts", "writ_invocations", "writ_journal", "writ_steps"]));
    // A second check right after finds nothing left to do.
    expect(await analyze(big)).toEqual([]);
    for (const h of hot(now)) {
      const p = await explain(big, h.stmt, h.values);
      expect(badNodes(p), `${h.name}: ${JSON.stringify(p.nodes)}`).toEqual([]);
    }
    const claim = await explain(big, CLAIM, hot(now)[0]!.values);
    const indexes = claim.nodes.map((n) => n.index).filter(Boolean);
    expect(indexes).toEqual(expect.arrayContaining(["writ_invocations_queued", "writ_invocations_leases"]));
    // The function the hot path calls picks the same way.
    const fn = await functionPlans(big, "SELECT writ_claim($1, $2, $3, $4, $5)", hot(now)[0]!.values);
    const fnNodes = fn.flatMap((p) => p.nodes);
    expect(fn.length, "auto_explain reported the function's statements").toBeGreaterThan(0);
    expect(badNodes({ nodes: fnNodes, buffers: 0 }), JSON.stringify(fnNodes)).toEqual([]);
    expect(fnNodes.map((n) => n.index).filter(Boolean)).toEqual(expect.arrayContaining(["writ_invocations_queued", "writ_invocations_leases"]));
    console.log(`[plans] no vacuum, ${HISTORY} ended invocations: claim touches ${claim.buffers} buffers (writ_claim's statement ${Math.max(...fn.map((p) => p.buffers))})`);
  });

  it("a table never analyzed gets statistics after 50 changes, and the attempt probe's generic plan then takes the primary key", async () => {
    // Invariant: on a fresh database the keeper does not wait for 500 changes (the threshold once a
    // table has statistics) before the first ANALYZE. Until then the planner cannot tell the
    // primary key from the (tenant, space) prefix of writ_attempts_by_invocation, and the plan a
    // connection caches for the transitions' probe by attempt id reads the scope's every attempt.
    const c = await open();
    expect(await analyze(c)).toEqual([]);
    await history(c, 100);
    // Attempt documents of a real run's size (about 550 bytes a row): 300 changes, under 500.
    await c.query(`UPDATE writ_attempts SET doc = json_build_object('pad', repeat('x', 500))`);
    await c.query("SELECT pg_stat_force_next_flush()");
    const first = await analyze(c);
    expect(first).toEqual(expect.arrayContaining(["writ_attempts", "writ_invocations", "writ_journal", "writ_steps"]));
    expect(await analyze(c)).toEqual([]);
    await c.query("BEGIN");
    try {
      await c.query("SET LOCAL plan_cache_mode = force_generic_plan");
      await c.query("PREPARE probe_attempt(text, text, text) AS SELECT EXISTS (SELECT 1 FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3)");
      const r = await c.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE probe_attempt('${T}', '${S}', 'att_77')`);
      const plan = r.rows.map((x) => x["QUERY PLAN"]).join("\n");
      expect(plan).toContain("writ_attempts_pkey");
      expect(plan).not.toContain("Rows Removed by Filter");
    } finally {
      await c.query("ROLLBACK");
      await c.query("DEALLOCATE ALL");
    }
  });

  it("where autovacuum does not run, the keeper vacuums the hot tables whose dead rows passed 10%", async () => {
    // A fresh history with autovacuum off for its tables: the updates left a dead row per update.
    const c = await open();
    await history(c, HISTORY / 10);
    const dead = async (): Promise<number> => {
      // Statistics reach the shared counters with a delay (a backend flushes its own at most once
      // a second): ask this connection to flush, then read until two readings agree.
      let last = -1;
      for (let i = 0; i < 20; i++) {
        await c.query("SELECT pg_stat_force_next_flush()");
        const r = await c.query<{ n: string }>("SELECT sum(n_dead_tup) AS n FROM pg_stat_user_tables WHERE relname IN ('writ_invocations', 'writ_attempts', 'writ_journal')");
        const n = Number(r.rows[0]!.n);
        if (n === last) return n;
        last = n;
        await new Promise((res) => setTimeout(res, 250));
      }
      return last;
    };
    const before = await dead();
    expect(before).toBeGreaterThan(HISTORY / 10);
    const x = new ConnectionExec(c, false, []);
    const done = await analyzeStale(x, (text) => x.command(text));
    expect(done.vacuumed).toEqual(expect.arrayContaining(["writ_attempts", "writ_invocations"]));
    expect(await dead()).toBeLessThan(before / 10);
  });

  it("with 10x the history the hot statements touch about as many buffers (after a vacuum)", async () => {
    const now = HISTORY * 10;
    const figures: string[] = [];
    for (const c of [big, small]) {
      for (const t of ["writ_invocations", "writ_journal", "writ_journal_chain", "writ_journal_pending", "writ_attempts", "writ_steps"]) await c.query(`VACUUM ${t}`);
      await analyze(c);
      await c.query("ANALYZE");
    }
    for (const [i, h] of hot(now).entries()) {
      // Twice: the first run of a statement may still visit entries only a scan marks dead.
      await explain(small, h.stmt, h.values);
      await explain(big, h.stmt, h.values);
      const s = await explain(small, hot(now)[i]!.stmt, h.values);
      const b = await explain(big, h.stmt, h.values);
      figures.push(`${h.name} ${s.buffers} -> ${b.buffers}`);
      expect(badNodes(b), `${h.name}: ${JSON.stringify(b.nodes)}`).toEqual([]);
      // One more B-tree level per index descent at most (the claim updates 8 rows and so descends
      // every index of the table 8 times); nothing proportional to the history (10x).
      expect(b.buffers, `${h.name}: ${s.buffers} buffers with ${HISTORY / 10} ended invocations, ${b.buffers} with ${HISTORY}`).toBeLessThanOrEqual(Math.ceil(s.buffers * 1.25) + 8);
    }
    console.log(`[plans] buffers, ${HISTORY / 10} -> ${HISTORY} ended invocations (vacuumed): ${figures.join(", ")}`);
  });

  it("the journal prune deletes a batch by its ids, whatever the history", async () => {
    const figures: string[] = [];
    for (const [name, stmt, extra] of [["prune", PRUNE, []], ["prune before", PRUNE_BEFORE, [HISTORY * 10]]] as const) {
      const values = [T, S, 1_000, 500, ...extra];
      const s = await explain(small, stmt, values);
      const b = await explain(big, stmt, values);
      figures.push(`${name} ${s.buffers} -> ${b.buffers}`);
      // A join USING the deleted chain rows hashed the whole journal for each batch (a seq scan of it).
      const scans = b.nodes.filter((n) => (n.type === "Seq Scan" || n.type === "Hash") && (n.relation === undefined || n.relation.startsWith("writ_")));
      expect(scans, `${name}: ${JSON.stringify(b.nodes)}`).toEqual([]);
      expect(b.buffers, `${name}: ${s.buffers} buffers with ${HISTORY / 10} entries, ${b.buffers} with ${HISTORY}`).toBeLessThanOrEqual(Math.ceil(s.buffers * 1.25) + 8);
    }
    console.log(`[plans] journal prune of 500 entries, buffers ${HISTORY / 10} -> ${HISTORY} entries: ${figures.join(", ")}`);
  });

  it("the lease check finds the invocation by its key, whatever its owner ran since the last vacuum", async () => {
    // A long history, vacuumed and analyzed while nothing was running (a preloaded database, or a
    // quiet hour): to the planner, running invocations are rare. Then one worker ("w") runs and
    // ends 20,000 more before the next vacuum (on a table this size a pass takes minutes): an
    // index of running invocations keyed by their owner keeps a dead entry for each.
    const c = await open();
    await history(c, HISTORY);
    await c.query(`DELETE FROM writ_invocations WHERE tenant_id = '${T}' AND status <> 'succeeded'`);
    await c.query("VACUUM ANALYZE writ_invocations");
    const recent = `tenant_id = '${T}' AND invocation_id LIKE 'recent_%'`;
    await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, attempt_count, created_at, updated_at, doc)
                   SELECT $1, $2, 'recent_' || g, 'a', 'recent' || g, 'queued', g, 0, g, g, '{}' FROM generate_series(1, 20000) AS g`, [T, S]);
    await c.query(`UPDATE writ_invocations SET status = 'running', lease_owner = 'w', lease_token = 't' || invocation_id, lease_expires_at = run_at + 30000 WHERE ${recent}`);
    await c.query(`UPDATE writ_invocations SET status = 'succeeded', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL WHERE ${recent}`);
    await c.query(`INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, created_at, updated_at, doc)
                   VALUES ($1, $2, 'live_w', 'a', 'live-w', 'running', 1, 'w', 'tw', 1e15::bigint, 1, 1, 1, '{}')`, [T, S]);
    const args = [T, S, "live_w", "w", "tw"];
    // Twice: the first call of a session also reads the catalog to compile the function.
    await functionPlans(c, "SELECT writ_hold_lease($1, $2, $3, $4, $5) AS held", args);
    const plans = await functionPlans(c, "SELECT writ_hold_lease($1, $2, $3, $4, $5) AS held", args);
    // The statement inside the function that reads the invocations.
    const reads = plans.filter((p) => p.nodes.some((n) => n.relation === "writ_invocations"));
    expect(reads.length, JSON.stringify(plans)).toBe(1);
    const read = reads[0]!;
    console.log(`[plans] lease check after one owner ran 20,000 invocations since the last vacuum: ${read.buffers} buffers, ${JSON.stringify(read.nodes)}`);
    // One probe of the primary key and the row, not a walk of the owner's ended invocations.
    expect(read.nodes.filter((n) => n.relation === "writ_invocations").map((n) => n.index)).toEqual(["writ_invocations_pkey"]);
    expect(read.buffers).toBeLessThanOrEqual(12);
    // And it still answers the lease: held only with the owner and token of a running invocation.
    const held = await c.query<{ held: boolean; other: boolean; token: boolean; ended: boolean; missing: boolean }>(
      `SELECT writ_hold_lease($1, $2, 'live_w', 'w', 'tw') AS held, writ_hold_lease($1, $2, 'live_w', 'w2', 'tw') AS other,
              writ_hold_lease($1, $2, 'live_w', 'w', 'tx') AS token, writ_hold_lease($1, $2, 'recent_5', 'w', 'trecent_5') AS ended,
              writ_hold_lease($1, $2, 'nope', 'w', 'tw') AS missing`,
      [T, S],
    );
    expect(held.rows[0]).toEqual({ held: true, other: false, token: false, ended: false, missing: false });
  });

  it("the seal's read of unsealed entries probes each document by id, even on statistics of an empty journal", async () => {
    // Statistics taken while the tables were empty, then a history written and never analyzed
    // (a deployment's first minutes, or a journal that grew faster than the keeper's pace): the
    // planner believes the journal empty. The queue is vacuumed, so its dead rows are not counted.
    const c = await open();
    await c.query("ANALYZE");
    await history(c, HISTORY);
    await c.query("VACUUM writ_journal_pending");
    const [p] = await functionPlans(c, "SELECT * FROM writ_unsealed($1, $2, $3)", [T, S, 100]);
    console.log(`[plans] unsealed read of 5 entries on ${HISTORY} entries believed empty: ${p!.buffers} buffers`);
    // Five probes of a three-level index and the queue's own pages, not the scope's journal.
    expect(p!.buffers).toBeLessThanOrEqual(60);
  });
});
