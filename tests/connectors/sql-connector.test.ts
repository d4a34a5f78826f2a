/**
 * sqlConnector, one suite per target (SQLite in a temp file, PostgreSQL in a fresh database):
 * a statement runs once per step key, the dedupe row and the statement commit together, errors
 * map to permanent / transient / ambiguous, and a COMMIT without an answer is settled by calling
 * again with the same step key.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sqlConnector, type SqlConnector, type SqlConnectorOptions, type SqliteDatabaseLike, type SqlOperation, type SqlTarget } from "../../src/connectors/index.js";
import type { ConnectorContext, ConnectorReply } from "../../src/core/action.js";
import type { Json } from "../../src/core/types.js";
import type { PgPool, PgQuery } from "../../src/stores/postgres/index.js";
import { freshDatabase, type FreshDatabase, pgServerOrNull, testPool } from "../helpers/pg.js";
import { closedPort, connectorContext } from "./helpers.js";

const pgServer = await pgServerOrNull();

/** How a test injects a COMMIT failure: the commit happens and its answer is lost, or it never happens. */
type CommitFault = "applied" | "lost";

/** One target database, with a direct handle to inspect it. */
interface TargetBench {
  /** Positional placeholder n. */
  p(n: number): string;
  target(): SqlTarget;
  /** A target whose COMMIT fails as `fault` says. */
  faultyTarget(fault: CommitFault): SqlTarget;
  /** A target that cannot be reached or locked (connection refused, database locked). */
  unavailableTarget(): Promise<{ target: SqlTarget; release: () => Promise<void> }>;
  rows(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
  exec(sql: string): Promise<void>;
}

interface TargetFactory {
  name: "sqlite" | "postgres";
  skip: boolean;
  open(): Promise<TargetBench & { close(): Promise<void> }>;
}

const sqliteFactory: TargetFactory = {
  name: "sqlite",
  skip: false,
  async open() {
    const dir = mkdtempSync(join(tmpdir(), "writ-sqlconn-"));
    const path = join(dir, "ledger.db");
    const db = new Database(path);
    const faulty = (fault: CommitFault): SqliteDatabaseLike => ({
      prepare: (sql) =>
        sql !== "COMMIT"
          ? db.prepare(sql)
          : {
              reader: false,
              run: () => {
                if (fault === "applied") db.prepare("COMMIT").run();
                throw Object.assign(new Error(fault === "applied" ? "disk I/O error" : "database is locked"), { code: fault === "applied" ? "SQLITE_IOERR" : "SQLITE_BUSY" });
              },
              all: () => [],
              get: () => undefined,
            },
      get inTransaction() {
        return db.inTransaction;
      },
    });
    return {
      p: () => "?",
      target: () => ({ kind: "sqlite", path }),
      faultyTarget: (fault) => ({ kind: "sqlite", database: faulty(fault) }),
      async unavailableTarget() {
        // Another connection holds the write lock.
        const locker = new Database(path);
        locker.prepare("BEGIN IMMEDIATE").run();
        return {
          target: { kind: "sqlite", path, busyTimeoutMs: 1 },
          release: async () => {
            locker.prepare("ROLLBACK").run();
            locker.close();
          },
        };
      },
      rows: async (sql, params = []) => db.prepare(sql).all(...params) as Record<string, unknown>[],
      exec: async (sql) => void db.exec(sql),
      async close() {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

const postgresFactory: TargetFactory = {
  name: "postgres",
  skip: pgServer === null,
  async open() {
    const fresh: FreshDatabase = await freshDatabase({ empty: true });
    const pool = testPool({ connectionString: fresh.url, max: 4 });
    const faulty = (fault: CommitFault): PgPool => ({
      async connect() {
        const conn = await pool.connect();
        const wrapped = {
          query: async (q: PgQuery) => {
            if (q.text === "COMMIT") {
              if (fault === "applied") await conn.query(q);
              throw new Error("Connection terminated unexpectedly");
            }
            return conn.query(q);
          },
          release: (destroy?: boolean | Error) => conn.release(destroy),
          on: () => wrapped,
        };
        return wrapped;
      },
    });
    return {
      p: (n) => `$${n}`,
      target: () => ({ kind: "postgres", url: fresh.url, max: 2 }),
      faultyTarget: (fault) => ({ kind: "postgres", pool: faulty(fault) }),
      async unavailableTarget() {
        const url = new URL(fresh.url);
        url.port = String(await closedPort());
        return { target: { kind: "postgres", url: url.toString() }, release: async () => undefined };
      },
      rows: async (sql, params = []) => (await pool.query(sql, params)).rows as Record<string, unknown>[],
      exec: async (sql) => void (await pool.query(sql)),
      async close() {
        await pool.end();
        await fresh.drop();
      },
    };
  },
};

for (const factory of [sqliteFactory, postgresFactory]) {
  describe.skipIf(factory.skip)(`sqlConnector on ${factory.name}`, () => {
    let t: TargetBench & { close(): Promise<void> };
    const opened: SqlConnector[] = [];
    beforeAll(async () => {
      t = await factory.open();
    });
    afterAll(() => t.close());
    beforeEach(async () => {
      await t.exec("DROP TABLE IF EXISTS writ_sql_dedupe");
      await t.exec("DROP TABLE IF EXISTS items");
      await t.exec(factory.name === "postgres" ? "CREATE TABLE items (id serial PRIMARY KEY, name text UNIQUE NOT NULL)" : "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL)");
    });
    afterEach(async () => {
      for (const c of opened.splice(0)) await c.close();
    });

    const insert = (): SqlOperation => ({ sql: `INSERT INTO items (name) VALUES (${t.p(1)}) RETURNING id, name`, params: (input) => [(input as { name: string }).name] });
    function connector(target: SqlTarget = t.target(), extra: Record<string, SqlOperation> = {}, over: Partial<SqlConnectorOptions> = {}): SqlConnector {
      const c = sqlConnector({ id: "ledger", target, operations: { insert: insert(), ...extra }, ...over });
      opened.push(c);
      return c;
    }
    const run = async (c: SqlConnector, op: string, ctx: ConnectorContext): Promise<ConnectorReply> => c.operations[op]!(ctx);
    const ctxFor = (input: Json, over: Partial<ConnectorContext> = {}): ConnectorContext => connectorContext({ input, ...over });
    const count = async (name: string): Promise<number> => Number((await t.rows(`SELECT count(*) AS n FROM items WHERE name = ${t.p(1)}`, [name]))[0]!.n);
    const dedupeRow = async (key: string): Promise<Record<string, unknown> | undefined> => (await t.rows(`SELECT * FROM writ_sql_dedupe WHERE step_key = ${t.p(1)}`, [key]))[0];

    // Invariant: one step key, one execution; a repeat answers the recorded result.
    it("runs the statement once per step key; a second call returns the recorded result", async () => {
      const c = connector();
      const ctx = ctxFor({ name: "a" });
      const first = await run(c, "insert", ctx);
      expect(first).toEqual({ outcome: "success", externalRef: `sql:ledger:${ctx.idempotencyKey}`, output: { rows: [{ id: 1, name: "a" }], rowCount: 1 } });
      const again = await run(c, "insert", ctx);
      expect(again).toEqual(first);
      // A new connector (another process) answers from the table too.
      expect(await run(connector(), "insert", ctx)).toEqual(first);
      expect(await count("a")).toBe(1);
      const row = await dedupeRow(ctx.idempotencyKey);
      expect(row).toMatchObject({ connector: "ledger", operation: "insert", external_ref: first.outcome === "success" ? first.externalRef : "" });
      expect(JSON.parse(String(row!.result))).toEqual({ rows: [{ id: 1, name: "a" }], rowCount: 1 });
      // Another step key is another execution.
      expect(await run(c, "insert", ctxFor({ name: "b" }))).toMatchObject({ outcome: "success", output: { rows: [{ id: 2, name: "b" }] } });
    });

    // Concurrent calls with one step key (a recovered worker racing a slow one) run it once.
    it("concurrent calls with the same step key run the statement once", async () => {
      const ctx = ctxFor({ name: "race" });
      const [a, b] = await Promise.all([run(connector(), "insert", ctx), run(connector(), "insert", ctx)]);
      expect(a).toMatchObject({ outcome: "success" });
      expect(b).toEqual(a);
      expect(await count("race")).toBe(1);
    });

    // Invariant: first calls racing to create the dedupe table all run (whichever session's
    // CREATE loses the race to the catalog sees the table and goes on). Several rounds, each on a
    // dropped table, with eight processes' worth of connectors at once.
    it("first calls racing to create the dedupe table all succeed", async () => {
      for (let round = 0; round < 12; round++) {
        await t.exec("DROP TABLE IF EXISTS writ_sql_dedupe");
        const names = Array.from({ length: 8 }, (_, i) => `first-${round}-${i}`);
        const replies = await Promise.all(names.map((name) => run(connector(), "insert", ctxFor({ name }))));
        for (const r of replies) expect(r).toMatchObject({ outcome: "success" });
        for (const name of names) expect(await count(name)).toBe(1);
        for (const c of opened.splice(0)) await c.close();
      }
    });

    // externalRef names the effect from the result; rowCount for a write without RETURNING.
    it("externalRef from the result; rowCount of a plain write; named parameters (sqlite)", async () => {
      const c = connector(t.target(), {
        named: { sql: `INSERT INTO items (name) VALUES (${t.p(1)}) RETURNING id`, params: (input) => [(input as { name: string }).name], externalRef: (r) => `item:${JSON.stringify(r.rows[0]?.id)}` },
        rename: { sql: "UPDATE items SET name = name || '!'" },
      });
      expect(await run(c, "named", ctxFor({ name: "x" }))).toMatchObject({ outcome: "success", externalRef: "item:1" });
      await run(c, "insert", ctxFor({ name: "y" }));
      expect(await run(c, "rename", ctxFor({}))).toMatchObject({ outcome: "success", output: { rows: [], rowCount: 2 } });
      if (factory.name === "sqlite") {
        const n = connector(t.target(), { byName: { sql: "INSERT INTO items (name) VALUES (@name) RETURNING name", params: (input) => ({ name: (input as { name: string }).name }) } });
        expect(await run(n, "byName", ctxFor({ name: "z" }))).toMatchObject({ outcome: "success", output: { rows: [{ name: "z" }] } });
      } else {
        const r = await run(connector(t.target(), { byName: { sql: "SELECT 1", params: () => ({ a: 1 }) } }), "byName", ctxFor({}));
        expect(r).toEqual({ outcome: "permanent_failure", reason: expect.stringContaining("positional parameters") });
      }
    });

    // Constraint violations, syntax errors and unknown tables are definite: permanent, nothing
    // recorded, so the step key stays free.
    it("constraint violation, syntax error, unknown table -> permanent_failure, nothing recorded", async () => {
      const c = connector(t.target(), { syntax: { sql: "INSRT INTO items VALUES (1)" }, missing: { sql: "INSERT INTO nowhere VALUES (1)" } });
      await run(c, "insert", ctxFor({ name: "dup" }));
      const dupCtx = ctxFor({ name: "dup" });
      const dup = await run(c, "insert", dupCtx);
      expect(dup.outcome).toBe("permanent_failure");
      expect("reason" in dup && dup.reason).toMatch(factory.name === "postgres" ? /postgres 23505/ : /SQLITE_CONSTRAINT/);
      expect(await dedupeRow(dupCtx.idempotencyKey)).toBeUndefined();
      expect(await count("dup")).toBe(1);
      for (const op of ["syntax", "missing"]) {
        const r = await run(c, op, ctxFor({}));
        expect({ op, outcome: r.outcome }).toEqual({ op, outcome: "permanent_failure" });
      }
      const bad = await run(c, "insert", ctxFor({ name: null }));
      expect(bad.outcome).toBe("permanent_failure");
    });

    // Invariant: the dedupe row and the statement commit together. A failure after the statement,
    // inside the transaction, leaves neither; the step key is then free for a later call.
    it("a failure after the statement inside the transaction leaves neither the effect nor the dedupe row", async () => {
      const c = connector(t.target(), {
        refFails: {
          ...insert(),
          externalRef: () => {
            throw new Error("cannot name it");
          },
        },
      });
      const ctx = ctxFor({ name: "ghost" });
      const r = await run(c, "refFails", ctx);
      expect(r).toEqual({ outcome: "permanent_failure", reason: expect.stringContaining("cannot name it") });
      expect(await count("ghost")).toBe(0);
      expect(await dedupeRow(ctx.idempotencyKey)).toBeUndefined();
      expect(await run(c, "insert", ctx)).toMatchObject({ outcome: "success" });
      expect(await count("ghost")).toBe(1);
    });

    // A database that cannot be reached or locked: nothing started, transient; a retry with the
    // same step key applies the statement once.
    it("unreachable or locked database -> transient_failure; a retry applies it once", async () => {
      await run(connector(), "insert", ctxFor({ name: "warm" })); // creates the dedupe table
      const { target, release } = await t.unavailableTarget();
      const ctx = ctxFor({ name: "later" });
      const r = await run(connector(target), "insert", ctx);
      await release();
      expect(r.outcome).toBe("transient_failure");
      expect("reason" in r && r.reason).toMatch(factory.name === "postgres" ? /ECONNREFUSED/ : /SQLITE_BUSY/);
      expect("reason" in r && r.reason).not.toMatch(/postgres:\/\//);
      expect(await count("later")).toBe(0);
      expect(await run(connector(), "insert", ctx)).toMatchObject({ outcome: "success" });
      expect(await count("later")).toBe(1);
    });

    // A COMMIT whose answer is lost after it committed: ambiguous; the same step key then answers
    // from the dedupe table without running the statement again.
    it("COMMIT applied but unanswered -> ambiguous; the same step key then answers the recorded result", async () => {
      const ctx = ctxFor({ name: "c1" });
      const r = await run(connector(t.faultyTarget("applied")), "insert", ctx);
      expect(r.outcome).toBe("ambiguous");
      expect("reason" in r && r.reason).toContain("COMMIT");
      expect(await count("c1")).toBe(1);
      expect(await run(connector(), "insert", ctx)).toEqual({ outcome: "success", externalRef: `sql:ledger:${ctx.idempotencyKey}`, output: { rows: [{ id: 1, name: "c1" }], rowCount: 1 } });
      expect(await count("c1")).toBe(1);
    });

    // A COMMIT that failed without applying: PostgreSQL cannot know (no answer: ambiguous); SQLite
    // knows (the transaction is still open: rolled back, transient). Either way the same step key
    // then runs the statement exactly once.
    it("COMMIT lost before it applied -> nothing visible; the same step key then runs it once", async () => {
      const ctx = ctxFor({ name: "c2" });
      const r = await run(connector(t.faultyTarget("lost")), "insert", ctx);
      expect(r.outcome).toBe(factory.name === "postgres" ? "ambiguous" : "transient_failure");
      expect(await run(connector(), "insert", ctx)).toMatchObject({ outcome: "success" });
      expect(await count("c2")).toBe(1);
    });

    // ctx.signal and ctx.deadline: nothing starts once aborted or past the deadline.
    it("aborted or past the deadline -> transient_failure, nothing run", async () => {
      const ac = new AbortController();
      ac.abort();
      expect((await run(connector(), "insert", ctxFor({ name: "no" }, { signal: ac.signal }))).outcome).toBe("transient_failure");
      expect((await run(connector(), "insert", ctxFor({ name: "no" }, { deadline: Date.now() - 1 }))).outcome).toBe("transient_failure");
      expect(await count("no")).toBe(0);
    });

    // A step key recorded by another operation is not silently answered with its result.
    it("a step key recorded for another operation -> ambiguous", async () => {
      const c = connector(t.target(), { other: insert() });
      const ctx = ctxFor({ name: "o" });
      await run(c, "insert", ctx);
      expect((await run(c, "other", ctx)).outcome).toBe("ambiguous");
    });

    // params that throw are the caller's definite mistake.
    it("params that throw -> permanent_failure", async () => {
      const c = connector(t.target(), {
        bad: {
          sql: "SELECT 1",
          params: () => {
            throw new Error("no params");
          },
        },
      });
      expect(await run(c, "bad", ctxFor({}))).toEqual({ outcome: "permanent_failure", reason: expect.stringContaining("no params") });
    });

    if (factory.name === "postgres") {
      // The deadline becomes statement_timeout: a statement running past it is cancelled and
      // rolled back (transient).
      it("a statement running past the step deadline -> transient_failure (statement_timeout)", async () => {
        const c = connector(t.target(), { slow: { sql: "SELECT pg_sleep(5)" } });
        const r = await run(c, "slow", ctxFor({}, { deadline: Date.now() + 300 }));
        expect(r).toEqual({ outcome: "transient_failure", reason: expect.stringContaining("57014") });
      });

      // Values are made JSON: dates, bytes, 64-bit integers.
      it("row values become JSON", async () => {
        const c = connector(t.target(), { values: { sql: "SELECT '2030-01-02T03:04:05Z'::timestamptz AS at, '\\x0102'::bytea AS b, 9007199254740993::int8 AS big, 1.5::float8 AS f, '{\"k\":[1]}'::jsonb AS j" } });
        const r = await run(c, "values", ctxFor({}));
        expect(r).toMatchObject({ outcome: "success", output: { rows: [{ at: "2030-01-02T03:04:05.000Z", b: "AQI=", big: "9007199254740993", f: 1.5, j: { k: [1] } }] } });
      });
    }
  });
}

describe("sqlConnector options", () => {
  const op = { sql: "SELECT 1" };
  const base = { id: "ledger", target: { kind: "sqlite", path: "/tmp/x.db" }, operations: { a: op } };
  const SECRET = "pg-secret-password-123";
  const cases: [string, Record<string, unknown>, string][] = [
    ["bad id", { id: "" }, "id"],
    ["no target", { target: undefined }, "target"],
    ["bad kind", { target: { kind: "mysql" } }, "target.kind"],
    ["postgres without url or pool", { target: { kind: "postgres" } }, "target"],
    ["postgres with both", { target: { kind: "postgres", url: "postgres://x/y", pool: {} } }, "target"],
    ["bad postgres url", { target: { kind: "postgres", url: `mysql://u:${SECRET}@h/d` } }, "target.url"],
    ["bad pool", { target: { kind: "postgres", pool: {} } }, "target.pool"],
    ["bad max", { target: { kind: "postgres", url: "postgres://h/d", max: 0 } }, "target.max"],
    ["sqlite without path", { target: { kind: "sqlite" } }, "target"],
    ["bad database", { target: { kind: "sqlite", database: {} } }, "target.database"],
    ["bad busyTimeoutMs", { target: { kind: "sqlite", path: "x.db", busyTimeoutMs: -1 } }, "target.busyTimeoutMs"],
    ["no operations", { operations: {} }, "operations"],
    ["empty sql", { operations: { a: { sql: " " } } }, "operations.a.sql"],
    ["transaction control", { operations: { a: { sql: "COMMIT" } } }, "operations.a.sql"],
    ["bad params", { operations: { a: { ...op, params: [1] } } }, "operations.a.params"],
    ["bad externalRef", { operations: { a: { ...op, externalRef: "x" } } }, "operations.a.externalRef"],
    ["bad dedupeTable", { dedupeTable: "x; DROP TABLE y" }, "dedupeTable"],
    ["bad clock", { clock: { now: 1 } }, "clock"],
  ];
  // Construction validates every option and names the bad one, never echoing a URL or password.
  it.each(cases)("%s -> INVALID_OPTION naming the option", (_name, patch, option) => {
    let thrown: unknown;
    try {
      sqlConnector({ ...base, ...patch } as SqlConnectorOptions);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: "INVALID_OPTION", details: { option } });
    expect(String((thrown as Error).message)).not.toContain(SECRET);
  });

  it("a valid configuration opens nothing until first use", async () => {
    const c = sqlConnector({ ...base, target: { kind: "sqlite", path: join(tmpdir(), "writ-never-opened", "x.db") } });
    expect(Object.keys(c.operations)).toEqual(["a"]);
    await c.close();
  });
});
