/**
 * Completion results at rest (docs/security.md). Invariants, on SQLite and PostgreSQL:
 * - a completion (`host.complete`, the webhook route's core) of a handed-off step whose output is
 *   sensitive leaves no sensitive value in clear anywhere in the SQLite file and WAL or in any
 *   PostgreSQL table, whether it arrives after the parking or early (before the step parks);
 * - an early completion's stored row holds its result sealed (whole: its action is not known yet),
 *   and when the step parks the host applies the original: the step output opens to the clear
 *   value through the sealing store while API answers stay redacted.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SEALED_FIELD } from "../../src/core/sealing.js";
import type { Store } from "../../src/core/store.js";
import { localDataKey } from "../../src/runtime/data-key-file.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { freshDatabase } from "../helpers/pg.js";
import { grantAuthority, makeHostBench } from "../host/fixture.js";

const CARD = "4111-SECRET-CARD-4417";
const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "writ-rest-cmp-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Rest {
  name: string;
  open(): Promise<{ store: Store; raw: () => Promise<string>; completionRows: () => Promise<string>; close: () => Promise<void> }>;
}

const rests: Rest[] = [
  {
    name: "sqlite",
    async open() {
      const path = join(tmp(), "writ.db");
      const store = sqliteStore({ path });
      await store.migrate();
      return {
        store,
        raw: async () => [path, `${path}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f).toString("latin1")).join(""),
        async completionRows() {
          const db = new Database(path, { readonly: true, fileMustExist: true });
          try {
            return JSON.stringify(db.prepare("SELECT * FROM completions").all());
          } finally {
            db.close();
          }
        },
        close: () => store.close(),
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const db = await freshDatabase();
      const store = postgresStore({ url: db.url });
      await store.migrate();
      const query = async (sql: string): Promise<string> => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          const tables = sql === "*" ? (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.t) : [sql];
          let all = "";
          for (const t of tables) all += (await c.query<{ j: string }>(`SELECT coalesce(string_agg(row_to_json(x)::text, ''), '') AS j FROM "${t}" x`)).rows[0]!.j;
          return all;
        } finally {
          await c.end();
        }
      };
      return {
        store,
        raw: () => query("*"),
        completionRows: () => query("writ_completions"),
        async close() {
          await store.close();
          await db.drop();
        },
      };
    },
  },
];

for (const r of rests) {
  describe(`completion results at rest on ${r.name}`, () => {
    it("a completion after parking: no sensitive value in clear in the database; the host reads the original", async () => {
      const { store, raw, close } = await r.open();
      try {
        const TOKEN = `tok-SECRET-COMPLETION-${r.name}-1`;
        const b = makeHostBench(store, { dataKey: localDataKey(join(tmp(), "data-key.json")) });
        await grantAuthority(b);
        b.replies.set("a", { outcome: "accepted", externalRef: "op_rest1" });
        const { invocation } = await b.host.submit(b.request({ action: "secret.long", params: { n: 1, card: CARD } }));
        expect(await b.host.worker().runOnce()).toEqual(["parked"]);
        expect(await b.host.complete(b.scope, { connector: "c", externalRef: "op_rest1", outcome: "success", result: { token: TOKEN, ok: 2 } })).toMatchObject({ disposition: "applied", status: "succeeded" });
        expect((await b.host.get(b.scope, invocation.invocationId))?.result).toEqual({ a: { token: "[REDACTED]", ok: 2 } });
        const steps = await b.host.context.o.store.transact((tx) => tx.getSteps(b.scope, invocation.invocationId));
        expect(steps[0]?.output).toEqual({ token: TOKEN, ok: 2 });
        const text = await raw();
        expect(text).toContain("op_rest1"); // the search reads the rows that hold the completion
        expect(text).not.toContain(TOKEN);
        expect(text).not.toContain(CARD);
      } finally {
        await close();
      }
    });

    it("an early completion is stored sealed whole, then applied with its original value at parking", async () => {
      const { store, completionRows, close } = await r.open();
      try {
        const TOKEN = `tok-SECRET-COMPLETION-${r.name}-2`;
        const b = makeHostBench(store, { dataKey: localDataKey(join(tmp(), "data-key.json")) });
        await grantAuthority(b);
        let early = "";
        b.replies.set("a", async () => {
          // Arrives while the call is in flight: kept as early until the step parks.
          try {
            expect(await b.host.complete(b.scope, { connector: "c", externalRef: "op_rest2", outcome: "success", result: { token: TOKEN, ok: 3 } })).toEqual({ disposition: "early" });
            early = await completionRows();
          } catch (e) {
            early = `failed: ${String(e)}`;
          }
          return { outcome: "accepted", externalRef: "op_rest2" };
        });
        const { invocation } = await b.host.submit(b.request({ action: "secret.long", params: { n: 2, card: CARD } }));
        const ran = await b.host.worker().runOnce();
        expect(early).toContain("op_rest2");
        expect(ran).toEqual(["succeeded"]);
        expect(early).toContain(SEALED_FIELD);
        expect(early).not.toContain(TOKEN);
        const after = await completionRows();
        expect(after).toContain("op_rest2");
        expect(after).not.toContain(TOKEN);
        // The host applied the original (the step output opens to it); answers stay redacted.
        const steps = await b.host.context.o.store.transact((tx) => tx.getSteps(b.scope, invocation.invocationId));
        expect(steps[0]?.output).toEqual({ token: TOKEN, ok: 3 });
        expect((await b.host.get(b.scope, invocation.invocationId))?.result).toEqual({ a: { token: "[REDACTED]", ok: 3 } });
        const [c] = await b.host.context.o.store.transact((tx) => tx.listCompletions(b.scope, "c", "op_rest2"));
        expect(c).toMatchObject({ disposition: "applied", invocationId: invocation.invocationId, result: { token: TOKEN, ok: 3 } });
        // Without the data key the row is only an envelope at the sensitive pointer.
        const [sealed] = await store.transact((tx) => tx.listCompletions(b.scope, "c", "op_rest2"));
        expect(typeof ((sealed!.result as { token: Record<string, unknown> }).token)[SEALED_FIELD]).toBe("string");
        expect((sealed!.result as { ok: number }).ok).toBe(3);
      } finally {
        await close();
      }
    });
  });
}
