/**
 * Journal verification never throws (docs/security.md). On every store, rows are corrupted behind
 * the store's back (SQLite: the file; PostgreSQL: the table; memory: a store that hands out
 * corrupted rows): unparseable JSON, not an object, a seq of the wrong type, a missing field.
 * Invariants: `verifyStoredJournal` returns (never throws) with one `corrupt_row` finding per bad
 * row, naming its scope and seq; untouched rows after it still verify their hashes; over HTTP the
 * verify route answers 200 with the findings; the CLI exits 1 with the list (store and --file).
 */
import Database from "better-sqlite3";
import pg from "pg";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import type { Store } from "../../src/core/store.js";
import type { JournalEntry, Scope } from "../../src/core/types.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { KEYS } from "../boundary/fixture.js";
import { freshDatabase } from "../helpers/pg.js";
import { journalOf } from "./helpers.js";
import { crypto, grantAuthority, makeHostBench } from "../host/fixture.js";
import { call, startRig } from "../server/fixture.js";
import { json, workspace, writ } from "../cli/helpers.js";

const keyring = createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]);
const BAD_SEQS = [2, 3, 4, 5];

/** Writes a few invocations' worth of entries (more than 6) into a fresh scope of `store`. */
async function fill(store: Store): Promise<Scope> {
  const b = makeHostBench(store);
  await grantAuthority(b);
  for (let i = 0; i < 3; i++) await b.host.submit(b.request());
  await b.host.worker().runOnce();
  expect((await journalOf(store, b.scope)).length).toBeGreaterThan(6);
  return b.scope;
}

async function expectFindings(store: Store, scope: Scope): Promise<void> {
  const v = await verifyStoredJournal(store, crypto, keyring, scope);
  expect(v.ok).toBe(false);
  const corrupt = v.problems.filter((p) => p.kind === "corrupt_row");
  expect(corrupt.map((p) => p.seq)).toEqual(BAD_SEQS);
  for (const p of corrupt) expect(p.message).toContain(`${scope.tenantId}/${scope.spaceId}`);
  // Rows after the corrupt ones still verify: no hash mismatch is reported for them.
  expect(v.problems.filter((p) => p.kind === "hash_mismatch")).toEqual([]);
}

interface Corruptible {
  name: string;
  open(): Promise<{ store: Store; corrupt(scope: Scope): Promise<void>; close(): Promise<void> }>;
}

const stores: Corruptible[] = [
  {
    name: "sqlite",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "writ-corrupt-"));
      const path = join(dir, "writ.db");
      const store = sqliteStore({ path });
      await store.migrate();
      return {
        store,
        async corrupt(scope) {
          const db = new Database(path);
          const set = db.prepare("UPDATE journal SET doc = ? WHERE tenant_id = ? AND space_id = ? AND seq = ?");
          const docOf = (seq: number) => JSON.parse(db.prepare("SELECT doc FROM journal WHERE tenant_id = ? AND space_id = ? AND seq = ?").pluck().get(scope.tenantId, scope.spaceId, seq) as string) as Record<string, unknown>;
          const s4 = docOf(4);
          const s5 = docOf(5);
          set.run("{not json", scope.tenantId, scope.spaceId, 2);
          set.run("[1,2]", scope.tenantId, scope.spaceId, 3);
          set.run(JSON.stringify({ ...s4, seq: "four" }), scope.tenantId, scope.spaceId, 4);
          delete s5.hash;
          set.run(JSON.stringify(s5), scope.tenantId, scope.spaceId, 5);
          db.close();
        },
        async close() {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const db = await freshDatabase();
      const store = postgresStore({ url: db.url });
      await store.migrate();
      return {
        store,
        async corrupt(scope) {
          const c = new pg.Client({ connectionString: db.url });
          await c.connect();
          const q = (sql: string, seq: number) => c.query(sql, [scope.tenantId, scope.spaceId, seq]);
          // An entry's document is written once, unsealed; its seq and hash are in the chain table
          // (docs/journal.md, "Storage on PostgreSQL"). Each corruption edits the document of the
          // entry the chain puts at that seq; a field the document carries stands over the chain's.
          const where = "WHERE id = (SELECT id FROM writ_journal_chain c WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq = $3) AND tenant_id = $1 AND space_id = $2";
          await q(`UPDATE writ_journal SET doc = '"garbage"'::json ${where}`, 2);
          await q(`UPDATE writ_journal SET doc = '[1,2]'::json ${where}`, 3);
          await q(`UPDATE writ_journal SET doc = jsonb_set(doc::jsonb, '{seq}', '"four"')::json ${where}`, 4);
          await q(`UPDATE writ_journal SET doc = jsonb_set(doc::jsonb, '{hash}', 'null')::json ${where}`, 5);
          await c.end();
        },
        async close() {
          await store.close();
          await db.drop();
        },
      };
    },
  },
  {
    name: "memory",
    async open() {
      const inner = memoryStore();
      await inner.migrate();
      const bad = new Set<string>();
      // The memory store's rows live in its process: this store hands out corrupted copies of them.
      const spoil = (e: JournalEntry): JournalEntry => {
        if (!bad.has(`${e.tenantId}/${e.spaceId}`) || !BAD_SEQS.includes(e.seq)) return e;
        if (e.seq === 2) return { tenantId: e.tenantId, spaceId: e.spaceId, seq: 2, corrupt: "unparseable JSON" } as unknown as JournalEntry;
        if (e.seq === 3) return [1, 2] as unknown as JournalEntry;
        if (e.seq === 4) return { ...e, at: "later" } as unknown as JournalEntry;
        const { hash: _h, ...rest } = e;
        return rest as JournalEntry;
      };
      const store: Store = new Proxy(inner, {
        get(target, prop, receiver) {
          if (prop !== "transact" && prop !== "read") return Reflect.get(target, prop, receiver) as unknown;
          const orig = Reflect.get(target, prop, receiver) as ((fn: (tx: unknown) => unknown) => Promise<unknown>) | undefined;
          if (!orig) return undefined;
          return (fn: (tx: unknown) => unknown) =>
            orig.call(target, (tx: unknown) =>
              fn(new Proxy(tx as object, {
                get(t, p, r) {
                  const v = Reflect.get(t, p, r) as unknown;
                  if (p === "readJournal") return async (...a: unknown[]) => (await (v as (...x: unknown[]) => Promise<JournalEntry[]>).apply(t, a)).map(spoil);
                  return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(t) : v;
                },
              })),
            );
        },
      });
      return {
        store,
        async corrupt(scope) {
          bad.add(`${scope.tenantId}/${scope.spaceId}`);
        },
        close: () => inner.close(),
      };
    },
  },
];

for (const s of stores) {
  describe(`corrupted journal rows on ${s.name}`, () => {
    it("are reported as findings naming scope and seq, never thrown", async () => {
      const opened = await s.open();
      const { store } = opened;
      try {
        const scope = await fill(store);
        expect((await verifyStoredJournal(store, crypto, keyring, scope)).ok).toBe(true);
        await opened.corrupt(scope);
        await expectFindings(store, scope);
      } finally {
        await opened.close();
      }
    });
  });
}

describe("corrupted rows at the edges", () => {
  it("HTTP verify answers 200 with the findings", async () => {
    const rig = await startRig();
    try {
      const sub = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: (await import("../server/fixture.js")).refund(5) });
      expect(sub.status).toBe(202);
      await rig.work();
      const db = new Database(rig.dbPath);
      db.prepare("UPDATE journal SET doc = '{broken' WHERE tenant_id = 'acme' AND space_id = 'prod' AND seq = 2").run();
      db.close();
      const r = await call(rig, "GET", "/v1/spaces/prod/journal/verify", { key: "acme.operate" });
      expect(r.status, r.text).toBe(200);
      expect(r.json.ok).toBe(false);
      expect(r.json.problems).toEqual(expect.arrayContaining([expect.objectContaining({ seq: 2, kind: "corrupt_row" })]));
    } finally {
      await rig.close();
    }
  });

  it("the CLI exits 1 with the list, from the store and from a file", async () => {
    const ws = workspace();
    try {
      const sub = await writ(ws.dir, ["submit", "--action", "payments.refund", "--actor", "agent:support-bot", "--authority", "support-bot", "--params", '{"paymentId":"p","amount":1,"currency":"EUR"}', "--idempotency-key", "c-1", "--json"]);
      expect(sub.code, sub.stderr).toBe(0);
      const { invocation } = json<{ invocation: { tenantId: string; spaceId: string } }>(sub);
      const exported = await writ(ws.dir, ["journal", "export", "--out", "j.jsonl", "--tenant", invocation.tenantId, "--space", invocation.spaceId]);
      expect(exported.code, exported.stderr).toBe(0);
      const db = new Database(join(ws.dir, ".writ", "writ.db"));
      db.prepare("UPDATE journal SET doc = 'nonsense' WHERE seq = 1").run();
      db.close();
      const v = await writ(ws.dir, ["journal", "verify", "--json", "--tenant", invocation.tenantId, "--space", invocation.spaceId]);
      expect(v.code, v.stderr).toBe(1);
      expect(json<{ problems: Array<{ seq: number; kind: string }> }>(v).problems).toEqual(expect.arrayContaining([expect.objectContaining({ seq: 1, kind: "corrupt_row" })]));
      writeFileSync(join(ws.dir, "bad.jsonl"), "{\"seq\":1}\nnot json at all\n");
      const f = await writ(ws.dir, ["journal", "verify", "--file", "bad.jsonl", "--json"]);
      expect(f.code, f.stderr).toBe(1);
      expect(json<{ problems: Array<{ kind: string }> }>(f).problems.filter((p) => p.kind === "corrupt_row")).toHaveLength(2);
    } finally {
      ws.cleanup();
    }
  });
});
