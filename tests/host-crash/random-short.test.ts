/**
 * A short randomized crash run in the main suite (the long one is tests/long/host-random.long.test.ts):
 * 40 invocations of every action shape (one and two steps, idempotent and not, compensated) and
 * connector outcome (success, transient failure, permanent failure, ambiguous), three worker
 * processes on PostgreSQL, a random worker SIGKILLed and restarted every 0.3-0.8 s, a few times.
 *
 * Invariants checked at the end (fixtures/invariants.ts): no non-idempotent effect twice; nothing
 * stuck; idempotent effects exactly once per step key (the provider honours keys); the journal
 * verifies in every scope; unknown outcomes have open reconciliation records; every effect is
 * known to the host and no success is phantom; nothing is lost to archiving and retention (I8):
 * the workers archive the journal into one shared directory and prune ended work at a 600 ms
 * window while they are killed; every acknowledged invocation is present or pruned with evidence
 * (admitted and ended in the journal, every entry naming it archived), an effect of a pruned
 * invocation precedes its end, and the archives plus the database verify as one chain in every
 * scope. The run prints how many invocations and journal entries were pruned, how many pruning
 * transactions and segment writes ran and how many kills landed inside one, and asserts that
 * pruning happened. The seed is printed; WRIT_SEED replays the workload and the kill plan.
 *
 * Every invocation runs in one scope, so the workers' takeovers of interrupted attempts contend
 * for one attempt counter and one journal: the run also asserts that PostgreSQL detected no
 * deadlock in its database (`pg_stat_database.deadlocks` did not grow; docs/stores.md, "Lock
 * order"). A first test shows that counter does see a deadlock when one happens.
 */
import pg from "pg";
import { afterAll, expect, it } from "vitest";
import { freshDatabase } from "../helpers/pg.js";
import { SEED } from "../helpers/seed.js";
import { reapChildren, sleep } from "./fixtures/children.js";
import { pgDeadlocks, runSoak } from "./fixtures/soak.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

it("pg_stat_database.deadlocks counts a deadlock provoked between two sessions", async () => {
  const db = await freshDatabase();
  const [a, b] = [new pg.Client({ connectionString: db.url }), new pg.Client({ connectionString: db.url })];
  try {
    await a.connect();
    await b.connect();
    const before = await pgDeadlocks(db.url);
    await a.query("CREATE TABLE t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 0), (2, 0)");
    await a.query("BEGIN");
    await b.query("BEGIN");
    await a.query("UPDATE t SET n = 1 WHERE id = 1");
    await b.query("UPDATE t SET n = 1 WHERE id = 2");
    // Each now waits for the row the other holds: PostgreSQL aborts one with 40P01.
    const outcomes = await Promise.allSettled([a.query("UPDATE t SET n = 2 WHERE id = 2"), b.query("UPDATE t SET n = 2 WHERE id = 1")]);
    const codes = outcomes.map((o) => (o.status === "rejected" ? (o.reason as { code?: string }).code : "ok"));
    expect(codes.sort()).toEqual(["40P01", "ok"]);
    await a.query("ROLLBACK");
    await b.query("ROLLBACK");
    await a.end();
    await b.end();
    let after = before;
    for (let i = 0; i < 10 && after === before; i++) {
      await sleep(300);
      after = await pgDeadlocks(db.url);
    }
    expect(after - before).toBe(1);
  } finally {
    await Promise.allSettled([a.end(), b.end()]);
    await db.drop();
  }
});

it(`40 invocations, 3 workers on PostgreSQL, random SIGKILLs (seed ${SEED})`, async () => {
  console.log(`[host-random-short] seed=${SEED} (replay: WRIT_SEED=${SEED})`);
  const r = await runSoak({ kind: "postgres", seed: SEED, invocations: 40, workers: 3, killEveryMs: [300, 800], maxKills: 6, deadlineMs: 90_000, oneScope: true, lifecycle: true });
  expect(r.report.violations).toEqual([]);
  expect(r.settled).toBe(true);
  expect(r.report.invocations + r.report.pruned, "acknowledged invocations present or pruned with evidence").toBe(40);
  expect(r.kills).toBeGreaterThan(0);
  expect(r.reclaims, "kills that interrupted work in flight").toBeGreaterThan(0);
  expect(r.deadlocks, "deadlocks PostgreSQL detected in the run's database").toBe(0);
  // Not vacuous: the workers archived and pruned during the run.
  expect(r.report.pruned, "acknowledged invocations pruned (with evidence)").toBeGreaterThan(0);
  expect(r.report.prunedEntries, "archived journal entries pruned from the database").toBeGreaterThan(0);
  expect(r.batches.invocations ?? 0, "pruning transactions that deleted invocations").toBeGreaterThan(0);
}, 150_000);
