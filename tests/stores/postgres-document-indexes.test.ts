/**
 * The partial indexes that read fields out of documents (migration 24, docs/stores.md, "Documents
 * that hold NUL") stay usable by the statements written for them: an index on an expression is
 * used only where the statement spells the expression as the index does, so a statement and its
 * index drifting apart would turn these reads into walks of the whole table.
 *
 * Invariants, on 6,000 completions (a few early, a few expired) and 6,000 notification deliveries
 * (most finished), some documents holding NUL:
 * - the sweep of early completions reads `writ_completions_early`, in one scope and across scopes;
 * - the count and the prune of expired completions read `writ_completions_expired_2`;
 * - the count and the prune of finished deliveries read `writ_notify_deliveries_done_2`;
 * - the indexes build with a search_path of pg_catalog alone (PostgreSQL 17 and later build every
 *   index so, and pg_restore restores them so): their expressions reach no function by name;
 * - the sweep and the counts scan no Writ table sequentially (a prune's outer delete joins its
 *   batch by primary key as the planner likes: on a table this small, a hash join over a scan),
 *   and each answers what the documents say.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EARLY_COMPLETIONS } from "../../src/stores/postgres/postgres-claims.js";
import { migratePostgres } from "../../src/stores/postgres/postgres-migrate.js";
import { AGED } from "../../src/stores/postgres/postgres-retention.js";
import { badNodes, explain } from "../helpers/pg-plans.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";

const server = await pgServerOrNull();
const N = 6_000;

describe.skipIf(server === null)("PostgreSQL partial indexes on document fields", () => {
  let db: FreshDatabase;
  let c: pg.Client;
  beforeAll(async () => {
    db = await freshDatabase({ empty: true });
    c = new pg.Client({ connectionString: db.url });
    c.on("error", () => undefined);
    await c.connect();
    await migratePostgres(c);
    // Every 300th completion early, every 200th expired; every 7th a result holding NUL (the
    // JSON escape, as the store writes it: replace() puts it into the document's text).
    await c.query(
      `INSERT INTO writ_completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc, rev)
       SELECT 't' || (g % 3), 's', 'c', 'cp' || g, 'r' || g, g,
              replace(json_build_object('disposition', CASE WHEN g % 300 = 0 THEN 'early' WHEN g % 200 = 0 THEN 'expired' ELSE 'applied' END,
                                        'expiredAt', g, 'result', CASE WHEN g % 7 = 0 THEN 'aNULb' ELSE 'ab' END)::text, 'NUL', E'\\\\u0000')::json, 1
         FROM generate_series(1, $1::int) g`,
      [N],
    );
    await c.query(
      `INSERT INTO writ_notify_deliveries (delivery_id, tenant_id, subscription_id, event_id, status, doc)
       SELECT 'd' || g, 't', 'sub', 'e' || g, CASE WHEN g % 10 = 0 THEN 'pending' ELSE 'delivered' END,
              replace(json_build_object('updatedAt', g, 'body', '{}', 'log', json_build_array(json_build_object('response', CASE WHEN g % 7 = 0 THEN 'noNUL' ELSE 'ok' END)))::text,
                      'NUL', E'\\\\u0000')::json
         FROM generate_series(1, $1::int) g`,
      [N],
    );
    await c.query("ANALYZE writ_completions, writ_notify_deliveries");
  });
  afterAll(async () => {
    await c?.end();
    await db?.drop();
  });

  const uses = (nodes: Array<{ type: string; index?: string }>, index: string): boolean => nodes.some((n) => n.index === index);

  it("the indexes build again with a search_path of pg_catalog alone", async () => {
    const schema = (await c.query<{ s: string }>("SELECT current_schema() AS s")).rows[0]!.s;
    await c.query("SET search_path = pg_catalog, pg_temp");
    try {
      for (const t of ["writ_completions", "writ_notify_deliveries"]) await c.query(`REINDEX TABLE ${pg.escapeIdentifier(schema)}.${t}`);
    } finally {
      await c.query("RESET search_path");
    }
  });

  it("documents holding NUL are among the rows (the lenient reads are exercised)", async () => {
    const { rows } = await c.query<{ n: string }>("SELECT count(*) AS n FROM writ_completions WHERE strpos(doc::text, E'\\\\u0000') > 0");
    expect(Number(rows[0]!.n)).toBeGreaterThan(N / 10);
    await expect(c.query("SELECT count(*) FROM writ_completions WHERE doc->>'disposition' = 'early'")).rejects.toThrow(/Unicode escape/);
  });

  it("the sweep of early completions reads the early completions' partial index", async () => {
    for (const values of [[N + 1, 1000, null, null], [N + 1, 1000, "t0", "s"]]) {
      const p = await explain(c, EARLY_COMPLETIONS, values);
      expect(badNodes(p), JSON.stringify(p.nodes)).toEqual([]);
      expect(uses(p.nodes, "writ_completions_early"), JSON.stringify(p.nodes)).toBe(true);
    }
    const { rows } = await c.query(EARLY_COMPLETIONS.text, [N + 1, 1000, null, null]);
    expect(rows).toHaveLength(N / 300);
  });

  it("the count and the prune of expired completions read their partial index", async () => {
    for (const [stmt, values] of [[AGED.expired_completions.count, [N + 1]], [AGED.expired_completions.del, [N + 1, 100]]] as const) {
      const p = await explain(c, stmt, [...values]);
      if (stmt === AGED.expired_completions.count) expect(badNodes(p), JSON.stringify(p.nodes)).toEqual([]);
      expect(uses(p.nodes, "writ_completions_expired_2"), JSON.stringify(p.nodes)).toBe(true);
    }
    const { rows } = await c.query<{ n: string }>(AGED.expired_completions.count.text, [N + 1]);
    expect(Number(rows[0]!.n)).toBe(Math.floor(N / 200) - Math.floor(N / 600));
  });

  it("the count and the prune of finished deliveries read their partial index", async () => {
    for (const [stmt, values] of [[AGED.notify_deliveries.count, [1000]], [AGED.notify_deliveries.del, [1000, 100]]] as const) {
      const p = await explain(c, stmt, [...values]);
      if (stmt === AGED.notify_deliveries.count) expect(badNodes(p), JSON.stringify(p.nodes)).toEqual([]);
      expect(uses(p.nodes, "writ_notify_deliveries_done_2"), JSON.stringify(p.nodes)).toBe(true);
    }
    const { rows } = await c.query<{ n: string }>(AGED.notify_deliveries.count.text, [1000]);
    expect(Number(rows[0]!.n)).toBe(999 - Math.floor(999 / 10));
  });
});
