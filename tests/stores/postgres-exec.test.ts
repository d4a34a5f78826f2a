/**
 * One transaction's statements reach its connection one at a time (src/stores/postgres/postgres-exec.ts),
 * even when a caller issues several at once (`Promise.all` inside `transact`): node-postgres 8
 * queues such calls itself but deprecates it, and pg 9 refuses a query while another runs.
 *
 * Invariants, over a scripted connection that answers when told: never two statements in flight;
 * they are sent in call order and each caller gets its own answer; after a statement fails, those
 * queued behind it fail with STORE_ERROR without reaching the connection (the transaction is
 * aborted), while a ROLLBACK still goes through; once the exec is ended (before a ROLLBACK or the
 * connection's release) statements still waiting fail unsent. On a real server: a transaction whose
 * function fails while some of its statements still wait their turn leaves none of them behind
 * (before, a waiting INSERT went out after the ROLLBACK, in autocommit, and stayed).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { isWritError } from "../../src/core/errors.js";
import type { PgConnection, PgQuery, PgResult } from "../../src/stores/postgres/postgres-driver.js";
import { ConnectionExec, statement } from "../../src/stores/postgres/postgres-exec.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { invocation, newScope } from "../../src/stores/conformance/fixtures.js";
import { freshDatabase, type FreshDatabase } from "../helpers/pg.js";

function scripted(): { conn: PgConnection; sent: string[]; maxInFlight: () => number; answer: (fail?: boolean) => void } {
  const sent: string[] = [];
  const waiting: Array<{ resolve: (r: PgResult<never>) => void; reject: (e: Error) => void; text: string }> = [];
  let inFlight = 0;
  let max = 0;
  const conn = {
    query(q: PgQuery) {
      const text = typeof q === "string" ? q : q.text;
      sent.push(text);
      inFlight++;
      max = Math.max(max, inFlight);
      return new Promise((resolve, reject) => waiting.push({ resolve, reject, text }));
    },
    on: () => conn,
  } as unknown as PgConnection;
  return {
    conn,
    sent,
    maxInFlight: () => max,
    answer(fail = false) {
      const w = waiting.shift()!;
      inFlight--;
      if (fail) w.reject(Object.assign(new Error("boom"), { code: "23505" }));
      else w.resolve({ rows: [{ text: w.text }] as never[], rowCount: 1, command: "SELECT" });
    },
  };
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));

it("statements issued at once are sent one at a time, in call order, each answered to its caller", async () => {
  const c = scripted();
  const x = new ConnectionExec(c.conn, false, []);
  const calls = ["SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"].map((t, i) => x.rows<{ text: string }>(statement(`s${i}`, t), []));
  for (let i = 0; i < 4; i++) {
    await flush();
    expect(c.sent.length).toBe(i + 1);
    c.answer();
  }
  const answers = await Promise.all(calls);
  expect(answers.map((r) => r[0]!.text)).toEqual(["SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4"]);
  expect(c.maxInFlight()).toBe(1);
});

it("after a failed statement, those queued behind it fail with STORE_ERROR unsent; a ROLLBACK still goes", async () => {
  const c = scripted();
  const x = new ConnectionExec(c.conn, false, []);
  const first = x.rows(statement("a", "INSERT 1"), []);
  const second = x.rows(statement("b", "INSERT 2"), []);
  const third = x.count(statement("c", "UPDATE 3"), []);
  await flush();
  c.answer(true);
  await expect(first).rejects.toSatisfy((e: unknown) => isWritError(e));
  await expect(second).rejects.toMatchObject({ code: "STORE_ERROR", message: expect.stringContaining("aborted by an earlier error") });
  await expect(third).rejects.toMatchObject({ code: "STORE_ERROR" });
  expect(c.sent).toEqual(["INSERT 1"]);
  const rollback = x.command("ROLLBACK");
  await flush();
  c.answer();
  await expect(rollback).resolves.toBe("SELECT");
  expect(c.sent).toEqual(["INSERT 1", "ROLLBACK"]);
});

it("ending the exec fails the waiting statements unsent and settles when the one on the wire is answered", async () => {
  const c = scripted();
  const x = new ConnectionExec(c.conn, false, []);
  const onWire = x.rows(statement("a", "SELECT 1"), []);
  const waiting = x.rows(statement("b", "SELECT 2"), []);
  await flush();
  let ended = false;
  const end = x.end().then(() => (ended = true));
  await flush();
  expect(ended).toBe(false);
  c.answer();
  await end;
  await expect(onWire).resolves.toEqual([{ text: "SELECT 1" }]);
  await expect(waiting).rejects.toMatchObject({ code: "STORE_ERROR", message: expect.stringContaining("had ended") });
  expect(c.sent).toEqual(["SELECT 1"]);
});

let db: FreshDatabase;
let store: PostgresStore;
beforeAll(async () => {
  db = await freshDatabase();
  store = postgresStore({ url: db.url });
  await store.migrate();
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

it("a transaction that fails with statements still waiting leaves none of them written", async () => {
  const scope = newScope();
  const [a, b, c] = [invocation(scope), invocation(scope), invocation(scope)];
  await expect(
    store.transact((tx) => Promise.all([tx.insertInvocation(scope, a), tx.insertInvocation(scope, b), tx.insertInvocation(scope, c), tx.getInvocation(scope, "bad\u0000id")])),
  ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  // The next transactions on the pool's connections see none of the three.
  for (let i = 0; i < 3; i++) {
    const found = await store.transact(async (tx) => Promise.all([a, b, c].map(async (inv) => (await tx.getInvocation(scope, inv.invocationId)) !== null)));
    expect(found).toEqual([false, false, false]);
  }
});
