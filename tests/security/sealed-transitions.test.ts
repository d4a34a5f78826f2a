/**
 * A host with a data key on PostgreSQL (docs/security.md, "Sealed values and the hot path"): every
 * runtime host (`writ serve`, `writ worker`) has one. Invariants:
 * - when no action marks anything sensitive, the host runs the store's own transitions beneath the
 *   sealing store (its `writ_t_*` statements and batches), and what the invocations leave is what
 *   they leave without a data key: succeeded, one call each, a journal that verifies;
 * - when an action marks something sensitive, no transition of the store runs (they would write
 *   its values in clear): the generic composition over the sealing store does, and the sensitive
 *   value is nowhere in clear in the database;
 * - an early completion (arrived while the call was in flight) is stored sealed whole even when
 *   nothing is sensitive, and the settle that applies it at parking (a settle running code in its
 *   transaction) reads it through the sealing store: the step's output is the original result,
 *   never the envelope;
 * - a batch given to the sealed store's transitions applies its plain members through the store's
 *   own batch, in order, and a settle running code through the sealing store, each answering alone.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { SEALED_FIELD, sealedStore } from "../../src/core/sealing.js";
import { createKeyring } from "../../src/core/keyring.js";
import { verifyStoredJournal, sealScopesNow } from "../../src/core/journal.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import { transitionsOf, type BatchMember } from "../../src/core/transitions.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { localDataKey } from "../../src/runtime/data-key-file.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { beginInput, claimed, entry } from "../../src/stores/conformance/cases-transitions.js";
import { newScope } from "../../src/stores/conformance/fixtures.js";
import { countStatements, freshDatabase, type FreshDatabase } from "../helpers/pg.js";
import { actions, grantAuthority, makeHostBench } from "../host/fixture.js";

const dirs: string[] = [];
const dataKey = () => {
  const d = mkdtempSync(join(tmpdir(), "writ-sealed-t-"));
  dirs.push(d);
  return localDataKey(join(d, "data-key.json"));
};
const dbs: FreshDatabase[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const db of dbs) await db.drop();
});

/** A PostgreSQL store over a pool that counts its statements by prepared-statement name. */
async function countedStore(): Promise<{ store: Store; counts: Map<string, number>; url: string; close: () => Promise<void> }> {
  const db = await freshDatabase();
  dbs.push(db);
  const pool = new pg.Pool({ connectionString: db.url, max: 6 });
  const counts = countStatements(pool);
  const store = postgresStore({ pool }, { analyzeEveryMs: 0 });
  await store.migrate();
  return {
    store,
    counts,
    url: db.url,
    async close() {
      await store.close();
      await pool.end();
    },
  };
}

/**
 * Statements of the store's own hot transitions: admissions, claims, begins, settles and their
 * batches (the journal's seals run beneath any store and are not counted).
 */
const HOT = new Set(["writ_t_admit", "writ_t_admit_claimed", "writ_t_claim", "writ_t_claim_json", "writ_t_begin", "writ_t_advance", "writ_t_settle", "writ_t_record", "writ_t_batch"]);
const ownTransitionStatements = (counts: Map<string, number>): number => [...counts].filter(([k]) => HOT.has(k)).reduce((s, [, n]) => s + n, 0);

const plainActions = actions.filter((a) => a.sensitive === undefined || a.sensitive.length === 0);

describe("a host with a data key on postgres", () => {
  it("runs the store's own transitions when nothing is sensitive, and the same outcomes", async () => {
    const { store, counts, close } = await countedStore();
    try {
      const b = makeHostBench(store, { dataKey: dataKey(), actions: plainActions });
      await grantAuthority(b);
      expect(b.host.context.o.store.transitions, "the sealing store offers the store's transitions").toBeDefined();
      counts.clear();
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await b.host.submit(b.request({ params: { n: i } }))).invocation.invocationId);
      const worker = b.host.worker();
      const ran: string[] = [];
      for (let i = 0; i < 4 && ran.length < 4; i++) ran.push(...(await worker.runOnce()));
      expect(ran).toEqual(["succeeded", "succeeded", "succeeded", "succeeded"]);
      for (const id of ids) expect((await b.host.get(b.scope, id))?.status).toBe("succeeded");
      expect(b.calls).toHaveLength(4);
      // Admission, claim, begin and settle of four invocations went through the store's functions
      // (some of them in batches: at least one statement per invocation and stage, at most that).
      expect(ownTransitionStatements(counts)).toBeGreaterThanOrEqual(4);
      expect(counts.get("writ_t_admit") ?? 0).toBe(4);
      const crypto = nodeCryptoPort();
      await sealScopesNow(store, crypto, [b.scope]);
      expect((await verifyStoredJournal(store, crypto, createKeyring(), b.scope)).problems).toEqual([]);
    } finally {
      await close();
    }
  });

  it("runs none of them when an action marks something sensitive, and seals that value", async () => {
    const { store, counts, url, close } = await countedStore();
    try {
      const b = makeHostBench(store, { dataKey: dataKey() });
      await grantAuthority(b);
      expect(b.host.context.o.store.transitions, "no store transition may write a sensitive value").toBeUndefined();
      counts.clear();
      const CARD = "4111-SEALED-TRANSITIONS-0007";
      const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls[0]?.request.params).toMatchObject({ card: CARD });
      expect(ownTransitionStatements(counts)).toBe(0);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const row = await c.query<{ doc: unknown }>("SELECT doc FROM writ_invocations WHERE invocation_id = $1", [invocation.invocationId]);
        expect(JSON.stringify(row.rows[0]!.doc)).toContain(SEALED_FIELD);
        expect(JSON.stringify(row.rows[0]!.doc)).not.toContain(CARD);
      } finally {
        await c.end();
      }
    } finally {
      await close();
    }
  });

  it("applies an early completion through the sealing store when nothing is sensitive", async () => {
    const { store, counts, url, close } = await countedStore();
    try {
      const b = makeHostBench(store, { dataKey: dataKey(), actions: plainActions });
      await grantAuthority(b);
      const TOKEN = "tok-EARLY-COMPLETION-SEALED-WHOLE";
      let early = "";
      let earlyRows = "";
      const completionRows = async (): Promise<string> => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          return JSON.stringify((await c.query("SELECT * FROM writ_completions")).rows);
        } finally {
          await c.end();
        }
      };
      b.replies.set("a", async () => {
        // Arrives while the call is in flight: kept as early until the step parks.
        early = JSON.stringify(await b.host.complete(b.scope, { connector: "c", externalRef: "op_early", outcome: "success", result: { token: TOKEN, ok: 4 } }));
        earlyRows = await completionRows();
        return { outcome: "accepted", externalRef: "op_early" };
      });
      counts.clear();
      const { invocation } = await b.host.submit(b.request({ action: "long.one", params: { n: 9 } }));
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(early).toBe(JSON.stringify({ disposition: "early" }));
      // The transitions around it were the store's own; the early row was sealed whole (its action
      // unknown), and nothing of the action is sensitive, so the applied row may hold it in clear.
      expect(ownTransitionStatements(counts)).toBeGreaterThan(0);
      expect(earlyRows).toContain("op_early");
      expect(earlyRows).toContain(SEALED_FIELD);
      expect(earlyRows).not.toContain(TOKEN);
      expect(await completionRows()).toContain("op_early");
      // The settle that applied it opened it: the step's output is the original result, which a
      // settle reading the row beneath the sealing store would have taken as the envelope.
      const steps = await b.host.context.o.store.transact((tx) => tx.getSteps(b.scope, invocation.invocationId));
      expect(steps[0]?.output).toEqual({ token: TOKEN, ok: 4 });
      expect((await b.host.get(b.scope, invocation.invocationId))?.result).toEqual({ a: { token: TOKEN, ok: 4 } });
    } finally {
      await close();
    }
  });

  it("splits a batch: plain members through the store's own batch in order, a settle running code through the sealing store", async () => {
    const { store, close } = await countedStore();
    try {
      const own = transitionsOf(store);
      const seen: BatchMember["kind"][][] = [];
      // The inner store's batch, recorded (its other transitions are its own).
      const recorded: Store = new Proxy(store, {
        get(t, k) {
          if (k === "transitions") return new Proxy(own, { get: (o, p) => (p === "batch" ? (ms: BatchMember[]) => (seen.push(ms.map((m) => m.kind)), o.batch(ms)) : (Reflect.get(o, p) as unknown)) });
          const v = Reflect.get(t, k) as unknown;
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      });
      const sealed = sealedStore(recorded, dataKey(), { get: () => undefined, empty: true });
      const t = sealed.transitions!;
      expect(t).toBeDefined();
      const scope = newScope();
      const a = await claimed(store, scope);
      const c = await claimed(store, scope);
      const d = await claimed(store, scope);
      const inA = beginInput(scope, a.inv.invocationId, { fence: a.fence });
      const inC = beginInput(scope, c.inv.invocationId, { fence: c.fence });
      const inD = beginInput(scope, d.inv.invocationId, { fence: d.fence });
      expect((await t.begin(scope, inA)).started).toBe(true);
      let withinTx: StoreTx | null = null;
      const settleA = { fence: a.fence, step: { ...inA.step, status: "succeeded" as const, endedAt: inA.step.startedAt }, attempt: { ...inA.attempt, state: "SUCCEEDED" as const }, idempotency: { ...inA.idempotency, state: "succeeded" as const }, invocation: { ...a.inv, status: "succeeded" as const }, entries: [entry(scope, `settle:${a.inv.invocationId}`)], within: async (tx: StoreTx) => void (withinTx = tx) };
      const out = await t.batch([
        { kind: "begin", scope, input: inC },
        { kind: "settle", scope, input: settleA },
        { kind: "begin", scope, input: { ...inD, fence: { ...d.fence, token: "stale" } } },
      ]);
      // The store's own batch got the two begins, in their order; the settle ran the sealing way.
      expect(seen).toEqual([["begin", "begin"]]);
      expect(out[0]).toMatchObject({ ok: true, value: { started: true } });
      expect(out[1]).toMatchObject({ ok: true });
      // A begin under a stale lease fails alone, in its place.
      expect(out[2]).toMatchObject({ ok: false });
      expect(withinTx, "the settle's code ran in a transaction of the sealing store").not.toBeNull();
      const inv = await store.transact((tx) => tx.getInvocation(scope, a.inv.invocationId));
      expect(inv?.status).toBe("succeeded");
    } finally {
      await close();
    }
  });
});
