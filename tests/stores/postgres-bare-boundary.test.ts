/**
 * A PostgreSQL store used only by a bare boundary (no host: every write is a transition, never a
 * `transact`) keeps its statistics like any other (docs/stores.md, "Hot statements and history").
 *
 * The bug this guards: the statistics keeper started on the store's first `transact` only, so a
 * bare boundary's store never analyzed its tables. Without statistics the planner took a
 * two-column prefix of another index for the attempt look-ups of every start and settlement, and
 * the functions' cached plans then read the scope's whole attempt history on each call: the
 * durable boundary bench fell from 396 to 149 executions per second over 6,000 executions.
 *
 * Invariants: after a burst of executions, with autovacuum off for the attempts table (so only the
 * keeper can analyze it), the table has been analyzed, and the attempt look-up the start and the
 * settlement make is then a primary-key probe touching a handful of buffers. The bare boundary's
 * sequencer, which nothing polls, delays its commit hints (the store's `journalHintDelayMs`) and
 * still seals every entry: none is left unsealed and the chain verifies.
 *
 * A store closed while its hint waits: close() lets the delayed seal run first (4 of 10 entries
 * were left unsealed before the delay existed, 10 of 10 with the delay before close() waited), so
 * nothing is left unsealed; `sealJournalNow` from another store then finds nothing to do and the
 * chain verifies whole.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createBoundary, createKeyring, sealJournalNow, verifyJournalIn, defineAction, defineConnector, generateSigningKey, requestDigest, signDecision, type ActionRequest, type Authority, type Store } from "../../src/index.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { statement } from "../../src/stores/postgres/postgres-exec.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";
import { explain } from "../helpers/pg-plans.js";
import { until } from "../helpers/wait.js";
import { REPO } from "../cli/helpers.js";

const server = await pgServerOrNull();
const scope = { tenantId: "bare", spaceId: "s" };
const key = generateSigningKey({ kid: "k" });
const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const authority: Authority = { ...scope, authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "u" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };
const noop = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
const action = defineAction({ id: "t.noop", version: "1", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });

/** Executes requests `from`..`from + count - 1` through a bare boundary on `store`, 8 at a time; each must succeed. */
async function executeMany(store: Store, from: number, count: number): Promise<void> {
  const boundary = createBoundary({ store, keyring, actions: [action], connectors: [noop], authority: () => authority, acceptedPolicyRefs: ["p1"] });
  let next = from;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < from + count) {
        const n = next++;
        const req: ActionRequest = { ...scope, action: "t.noop", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a1", params: { n }, idempotencyKey: `k${n}` };
        const a = await boundary.execute(req, signDecision(key, { result: "ALLOW", requestDigest: requestDigest(req), ...scope, authorityRef: "a1", policyRef: "p1" }));
        expect(a.state).toBe("SUCCEEDED");
      }
    }),
  );
}

describe.skipIf(server === null)("PostgreSQL store behind a bare boundary", () => {
  let db: FreshDatabase;
  let store: PostgresStore;
  let c: pg.Client;

  beforeAll(async () => {
    db = await freshDatabase();
    c = new pg.Client({ connectionString: db.url });
    c.on("error", () => undefined);
    await c.connect();
    await c.query("ALTER TABLE writ_attempts SET (autovacuum_enabled = false)");
    store = postgresStore({ url: db.url }, { analyzeEveryMs: 50 });
  });

  afterAll(async () => {
    await store?.close();
    await c?.end().catch(() => undefined);
    await db?.drop();
  });

  it("analyzes the tables its transitions write, so attempt look-ups stay primary-key probes", async () => {
    const total = 800;
    await executeMany(store, 0, total);
    // The server's counters reach pg_stat_user_tables within about a second; the keeper checks every 50 ms.
    const analyzed = async (): Promise<boolean> => {
      const r = await c.query<{ at: Date | null }>("SELECT coalesce(last_analyze, last_autoanalyze) AS at FROM pg_stat_user_tables WHERE relname = 'writ_attempts'");
      return r.rows[0]?.at != null;
    };
    const deadline = Date.now() + 15_000;
    while (!(await analyzed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await analyzed(), "the keeper analyzed writ_attempts").toBe(true);

    const last = await c.query<{ attempt_id: string }>("SELECT attempt_id FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1", [scope.tenantId, scope.spaceId]);
    const probe = await explain(c, statement("attempt_probe", "SELECT 1 FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3"), [scope.tenantId, scope.spaceId, last.rows[0]!.attempt_id]);
    expect(probe.nodes.map((n) => n.index).filter(Boolean), JSON.stringify(probe.nodes)).toEqual(["writ_attempts_pkey"]);
    expect(probe.buffers).toBeLessThan(20);

    const sealedBy = Date.now() + 5_000;
    while ((await store.transact((tx) => tx.listUnsealed(scope))).length > 0 && Date.now() < sealedBy) await new Promise((r) => setTimeout(r, 20));
    const v = await verifyJournalIn(store, keyring, scope);
    expect(v).toMatchObject({ ok: true, unsealed: 0, entries: total * 2, problems: [] });
  });

  it("a store closed while its commit hint waits seals first", async () => {
    const before = (await verifyJournalIn(store, keyring, scope)).entries + (await store.transact((tx) => tx.listUnsealed(scope))).length;
    const other = postgresStore({ url: db.url });
    await executeMany(other, 10_000, 5);
    await other.close(); // within the 20 ms the hint waits
    expect((await store.transact((tx) => tx.listUnsealed(scope))).length, "entries left unsealed by the closed store").toBe(0);
    expect(await sealJournalNow(store)).toBe(0);
    const v = await verifyJournalIn(store, keyring, scope);
    expect(v).toMatchObject({ ok: true, unsealed: 0, entries: before + 10, problems: [] });
  });

  it("close() waits for a hinted seal that never settles only until its bound, then closes", async () => {
    // Invariant: a listener's answer to a commit hint that never settles (a seal stuck on a lock, a
    // hung listener) holds close() back for journalHintDelayMs plus a second, not for ever; the
    // store is closed afterwards (a call is refused with STORE_CLOSED).
    const stuck = postgresStore({ url: db.url }, { journalHintDelayMs: 20 });
    stuck.onJournalAppend(() => new Promise<void>(() => undefined));
    await executeMany(stuck, 20_000, 1);
    const t0 = performance.now();
    let closed = false;
    const closing = stuck.close().then(() => (closed = true));
    await until(() => closed, "close() to resolve past its bound", 10_000);
    await closing;
    expect(performance.now() - t0, "close() waited for the stuck seal up to its bound").toBeGreaterThanOrEqual(1_000);
    await expect(stuck.transact(async () => 1)).rejects.toMatchObject({ code: "STORE_CLOSED" });
  });

  it("a script whose last act is awaiting close() right after an execution ends normally, its entries sealed", async () => {
    // Invariant: close() settles (and the process exits 0) even when nothing but the pending seal
    // is left on the event loop. The hint window runs on timers that keep no process alive; while
    // close() waited on a timer of the same kind, Node found its loop empty and exited 13 (an
    // unsettled top-level await) before the seal ran, leaving the execution's entries unsealed.
    const src = (rel: string): string => JSON.stringify(pathToFileURL(join(REPO, rel)).href);
    const exitScope = { tenantId: "bare-exit", spaceId: "s" };
    const code = `
      import { z } from "zod";
      import { createBoundary, createKeyring, defineAction, defineConnector, generateSigningKey, requestDigest, signDecision } from ${src("src/index.ts")};
      import { postgresStore } from ${src("src/stores/postgres/index.ts")};
      const scope = ${JSON.stringify(exitScope)};
      const key = generateSigningKey({ kid: "k" });
      const store = postgresStore({ url: process.env.WRIT_TEST_DB_URL });
      await store.migrate();
      const boundary = createBoundary({
        store, keyring: createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]),
        actions: [defineAction({ id: "t.noop", version: "1", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] })],
        connectors: [defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } })],
        authority: () => ({ ...scope, authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "u" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 }),
        acceptedPolicyRefs: ["p1"],
      });
      const req = { ...scope, action: "t.noop", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a1", params: { n: 1 }, idempotencyKey: "exit-1" };
      const a = await boundary.execute(req, signDecision(key, { result: "ALLOW", requestDigest: requestDigest(req), ...scope, authorityRef: "a1", policyRef: "p1" }));
      console.log(a.state);
      await store.close();
      console.log("closed");
    `;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: REPO, encoding: "utf8", timeout: 60_000, env: { ...process.env, WRIT_TEST_DB_URL: db.url } });
    expect({ status: r.status, stdout: r.stdout.trim().split("\n"), stderr: r.stderr.slice(-2000) }).toEqual({ status: 0, stdout: ["SUCCEEDED", "closed"], stderr: "" });
    expect((await store.transact((tx) => tx.listUnsealed(exitScope))).length, "entries the script left unsealed").toBe(0);
    const v = await verifyJournalIn(store, keyring, exitScope);
    expect(v).toMatchObject({ ok: true, unsealed: 0, problems: [] });
    expect(v.entries).toBeGreaterThan(0);
  });
});
