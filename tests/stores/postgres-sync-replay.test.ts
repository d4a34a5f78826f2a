/**
 * An admission that finds its idempotency key taken answers the invocation it found only once
 * that invocation is as durable as a fresh admission (docs/deploying-postgres.md, "What holds per
 * fault"), on a private PostgreSQL instance (tests/helpers/pg-instance.ts) whose synchronous
 * standby never answers (`synchronous_standby_names` naming no server): every commit that wrote
 * the WAL waits.
 *
 * The found invocation may be committed on the primary and not on its synchronous standby: a
 * commit whose wait for the standby was cancelled (as here, with `pg_cancel_backend`), or one
 * that crash recovery replayed after the primary was killed during that wait, is visible at once.
 * The cluster nemesis once caught a replay that acknowledged such an invocation 16 ms before a
 * failover, which then lost it (C7).
 *
 * Invariants:
 * - without synchronous replication, a replay answers at once (`created: false`, the invocation
 *   it found);
 * - with a synchronous standby that has not confirmed the found invocation, the replay does not
 *   answer: its commit waits for the standby (one backend in the `SyncRep` wait);
 * - once nothing is waited for (the standby requirement lifted), it answers the invocation it
 *   found, unchanged;
 * - the same holds for a replay through an admission with its claim (the hand-off), which claims
 *   nothing.
 */
import { afterAll, describe, expect, it } from "vitest";
import { transitionsOf } from "../../src/core/transitions.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { invocation, newScope } from "../../src/stores/conformance/fixtures.js";
import { instanceSql as sql, postgresBinaries, setAndReload, startPgInstance, type PgInstance } from "../helpers/pg-instance.js";
import { untilRead } from "../helpers/wait.js";

const bins = postgresBinaries();
// Never skipped silently: where no binaries exist the reason is printed (and CI fails).
if (bins.dir === null) console.warn(`[pg-sync-replay] skipped: ${bins.reason}`);
const suite = bins.dir === null && process.env.CI !== "true" ? describe.skip : describe;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let instance: PgInstance | null = null;
let store: PostgresStore | null = null;
afterAll(async () => {
  await store?.close().catch(() => undefined);
  await instance?.close();
}, 60_000);

suite("an admission replay on PostgreSQL with a synchronous standby", () => {
  it("answers the invocation it found only once its commit is confirmed as a fresh admission's would be", async () => {
    const primary = (instance = await startPgInstance());
    await primary.createDatabase("writ");
    const s = (store = postgresStore({ url: primary.url("writ") }, { max: 4, analyzeEveryMs: 0 }));
    await s.migrate();
    const t = transitionsOf(s);
    const scope = newScope();
    const waiting = async (): Promise<number> => (await sql<{ n: string }>(primary, "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event = 'SyncRep'")).map((r) => Number(r.n))[0] ?? 0;
    const standby = (names: string | null): Promise<void> => setAndReload(primary, "synchronous_standby_names", names, names ?? "");
    /** Starts a replay, sees it wait for the standby and not answer, lifts the requirement; its answer. */
    const heldUntilLifted = async <R>(what: string, start: () => Promise<R>): Promise<R> => {
      let answered = false;
      const replaying = start().then((r) => {
        answered = true;
        return r;
      });
      await untilRead(async () => (await waiting()) === 1, `${what} to wait for the standby`, 20_000, 50);
      await sleep(500);
      expect(answered).toBe(false);
      await standby(null);
      return replaying;
    };

    // Without synchronous replication a replay answers at once.
    const plain = invocation(scope, { idempotencyKey: "plain" });
    expect(await t.admit(scope, { invocation: plain, entries: [] })).toEqual({ created: true });
    const again = await t.admit(scope, { invocation: invocation(scope, { idempotencyKey: "plain" }), entries: [] });
    expect(again.created === false && again.existing.invocationId).toBe(plain.invocationId);

    // A standby that never confirms: the admission's commit waits; cancelling that wait leaves the
    // invocation committed here and not confirmed by the standby.
    await standby("nobody");
    const first = invocation(scope, { idempotencyKey: "k" });
    const admitting = t.admit(scope, { invocation: first, entries: [] });
    await untilRead(async () => (await waiting()) === 1, "the admission to wait for the standby", 20_000, 50);
    await sql(primary, "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'");
    expect(await admitting).toEqual({ created: true });
    expect(await waiting()).toBe(0);

    // The replay finds it, and waits for the standby before it answers; with nothing to wait for
    // any more, it answers the invocation it found.
    const r = await heldUntilLifted("the replay", () => t.admit(scope, { invocation: invocation(scope, { idempotencyKey: "k" }), entries: [] }));
    expect(r.created).toBe(false);
    expect(r.created === false && r.existing.invocationId).toBe(first.invocationId);
    expect(r.created === false && r.existing.idempotencyKey).toBe("k");

    // The same for a replay through an admission with its claim (the hand-off to an idle worker):
    // it finds the invocation, claims nothing, and waits for the standby before it answers.
    await standby("nobody");
    const c = await heldUntilLifted("the replay with a claim", () =>
      t.admitClaimed!(scope, { invocation: invocation(scope, { idempotencyKey: "k" }), entries: [] }, { owner: "w", tokens: ["tok"], now: Date.now(), leaseMs: 30_000, limit: 1 }, []),
    );
    expect(c.created === false && c.existing.invocationId).toBe(first.invocationId);
  }, 120_000);
});
