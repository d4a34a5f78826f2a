/**
 * The pruner against a writer that journals about an ended invocation while holding its row, on
 * PostgreSQL with real concurrent transactions (docs/retention.md, "What holds a row").
 *
 * Invariant: a late writer (a completion arriving for an ended invocation locks the invocation's
 * row, journals its evidence and commits) that holds a member's row while the pruner's delete
 * waits for it wins: the delete reads the journal again after its locks, sees the entry, and rolls
 * back; the member keeps every row and the batch goes again without it, so its batch-mate goes.
 * The pruner's re-read, if it came before its locks, would miss the entry (the read committed
 * snapshot of a statement that ran before the writer committed) and delete the member.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRetention } from "../../src/core/retention.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { ALL_GONE, ALL_PRESENT, rowsOf, seedInvocation, settings } from "../../src/stores/conformance/cases-retention.js";
import { T0, newScope, uid } from "../../src/stores/conformance/fixtures.js";
import { freshDatabase, type FreshDatabase } from "../helpers/pg.js";
import { untilRead } from "../helpers/wait.js";

const DAY = 86_400_000;

describe("retention on PostgreSQL: a writer holding a member's row", () => {
  let db: FreshDatabase;
  let store: PostgresStore;
  let watcher: pg.Client;
  beforeAll(async () => {
    db = await freshDatabase();
    store = postgresStore({ url: db.url }, { max: 4, applicationName: "writ-retention-race" });
    watcher = new pg.Client({ connectionString: db.url });
    await watcher.connect();
  });
  afterAll(async () => {
    await watcher?.end();
    await store?.close();
    await db?.drop();
  });

  it("commits its entry while the delete waits: the delete rolls back and goes again without that member", async () => {
    const scope = newScope();
    const now = T0 + 1000 * DAY;
    const a = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY });
    const b = await seedInvocation(store, scope, { status: "succeeded", updatedAt: now - 3 * DAY + 1 });
    await store.transact((tx) => tx.setJournalArchivedThrough(scope, b.seqs[1]!));

    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    // The late writer: locks `a`'s row, waits until the pruner waits for that lock, journals, commits.
    const writer = store.transact(async (tx) => {
      await tx.getInvocation(scope, a.inv.invocationId, { forUpdate: true });
      locked();
      await released;
      await tx.insertUnsealed(scope, [{ ...scope, id: uid("entry"), at: now, type: "completion.evidence", refs: { invocationId: a.inv.invocationId }, data: {} }]);
    });
    await isLocked;
    const pruning = runRetention(store, settings({ batchSize: 10 }), { now });
    // The pruner's delete is blocked on the row lock the writer holds.
    await untilRead(
      async () => Number((await watcher.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")).rows[0]!.n) >= 1,
      "the pruner's delete waiting for the writer's row lock",
    );
    release();
    await writer;
    const report = await pruning;

    const rows = await store.transact(async (tx) => [await rowsOf(tx, scope, a.inv, a.decisionId), await rowsOf(tx, scope, b.inv, b.decisionId)]);
    expect(rows[0], "the member the writer journaled about keeps every row").toEqual(ALL_PRESENT);
    expect(rows[1], "its batch-mate went").toEqual(ALL_GONE);
    expect(report.held.not_archived).toBeGreaterThanOrEqual(1);
  });
});
