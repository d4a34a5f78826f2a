/**
 * The statistics keeper vacuums the journal's pending queue even where autovacuum runs
 * (src/stores/postgres/postgres-stats.ts; docs/stores.md, "Hot statements and history").
 *
 * Invariants, on a private instance with PostgreSQL's defaults (autovacuum on):
 * - once the queue holds more than 1,000 dead rows (entries written and sealed), one check of the
 *   keeper vacuums it, and afterwards its dead rows are gone (the sequencer's read of the queue
 *   no longer walks them);
 * - the other hot tables, whose dead rows are autovacuum's job there, are not vacuumed by it;
 * - a store that seals `queueVacuumRows` entries vacuums the queue itself (a manual vacuum counted
 *   by the server), with the keeper's schedule off; with 0 it never does.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionExec } from "../../src/stores/postgres/postgres-exec.js";
import { analyzeStale } from "../../src/stores/postgres/postgres-stats.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { newScope, uid } from "../../src/stores/conformance/fixtures.js";
import { sealScopesNow } from "../../src/core/journal.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { postgresBinaries, startPgInstance, type PgInstance } from "../helpers/pg-instance.js";
import { untilRead } from "../helpers/wait.js";

const bins = postgresBinaries();
if (bins.dir === null) console.warn(`[pg-queue-vacuum] skipped: ${bins.reason}`);
const suite = bins.dir === null && process.env.CI !== "true" ? describe.skip : describe;

suite("the keeper vacuums the pending queue where autovacuum runs", () => {
  let inst: PgInstance;
  let store: PostgresStore;
  let c: pg.Client;
  beforeAll(async () => {
    inst = await startPgInstance();
    await inst.createDatabase("queue");
    // The keeper is driven by hand below: its own schedule stays off.
    store = postgresStore({ url: inst.url("queue") }, { analyzeEveryMs: 0 });
    await store.migrate();
    c = new pg.Client({ connectionString: inst.url("queue") });
    await c.connect();
  }, 60_000);
  afterAll(async () => {
    await c?.end();
    await store?.close();
    await inst?.close();
  });

  const dead = async (table: string): Promise<number> => {
    await c.query("SELECT pg_stat_force_next_flush()");
    return Number((await c.query<{ n: string }>("SELECT n_dead_tup AS n FROM pg_stat_user_tables WHERE relname = $1", [table])).rows[0]?.n ?? 0);
  };

  it("vacuums the queue past 1,000 dead rows and leaves the other tables to autovacuum", async () => {
    expect((await c.query<{ a: string }>("SELECT current_setting('autovacuum') AS a")).rows[0]!.a).toBe("on");
    // Autovacuum itself must not empty the tables during the test: thresholds it never reaches
    // (dead rows and analyze), and no vacuum for inserts
    // (not \`autovacuum_enabled = false\`, which would make the keeper vacuum every hot table).
    for (const t of ["writ_journal_pending", "writ_journal_chain"]) await c.query(`ALTER TABLE ${t} SET (autovacuum_vacuum_threshold = 2000000000, autovacuum_analyze_threshold = 2000000000, autovacuum_vacuum_insert_threshold = -1)`);
    const scope = newScope();
    // 1,500 entries written, then gone from the queue (as sealing removes them): a dead row each.
    await store.transact((tx) => tx.insertUnsealed(scope, Array.from({ length: 1500 }, (_, i) => ({ ...scope, id: uid("e"), at: i, type: "test.queue", refs: {}, data: {} }))));
    await c.query("DELETE FROM writ_journal_pending");
    // As many dead rows in a hot table that is not a queue: autovacuum's job on this server.
    await c.query("INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash) SELECT 't', 's', g, 'e' || g, NULL, 'h' FROM generate_series(1, 1500) g");
    await c.query("DELETE FROM writ_journal_chain WHERE tenant_id = 't'");
    await untilRead(async () => (await dead("writ_journal_pending")) >= 1500 && (await dead("writ_journal_chain")) >= 1500, "the dead rows in the statistics");
    const x = new ConnectionExec(c, false, []);
    const done = await analyzeStale(x, (text) => x.command(text));
    expect(done.vacuumed).toEqual(["writ_journal_pending"]);
    expect(await dead("writ_journal_pending")).toBe(0);
    expect(await dead("writ_journal_chain"), "left to autovacuum").toBeGreaterThanOrEqual(1500);
  });

  it("a store that seals queueVacuumRows entries vacuums the queue itself; 0 never does", async () => {
    const vacuums = async (): Promise<number> => {
      await c.query("SELECT pg_stat_force_next_flush()");
      return Number((await c.query<{ n: string }>("SELECT vacuum_count AS n FROM pg_stat_user_tables WHERE relname = 'writ_journal_pending'")).rows[0]!.n);
    };
    const sealing = async (rows: number): Promise<void> => {
      const s = postgresStore({ url: inst.url("queue") }, { analyzeEveryMs: 0, queueVacuumRows: rows });
      try {
        const scope = newScope();
        for (let i = 0; i < 3; i++) {
          await s.transact((tx) => tx.insertUnsealed(scope, Array.from({ length: 50 }, (_, k) => ({ ...scope, id: uid("e"), at: k, type: "test.queue", refs: {}, data: {} }))));
          await sealScopesNow(s, nodeCryptoPort(), [scope]);
        }
      } finally {
        await s.close(); // waits for a vacuum it started
      }
    };
    const before = await vacuums();
    await sealing(0);
    expect(await vacuums(), "rows 0: no vacuum of its own").toBe(before);
    await sealing(100);
    expect(await vacuums(), "150 entries sealed at 100 a vacuum: one vacuum").toBe(before + 1);
  });
});
