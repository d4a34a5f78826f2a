/**
 * A host with a data key on PostgreSQL (docs/security.md, "Sealed values and the hot path"): every
 * runtime host (`writ serve`, `writ worker`) has one. Invariants:
 * - when no action marks anything sensitive, the host runs the store's own transitions beneath the
 *   sealing store (its `writ_t_*` statements and batches), and what the invocations leave is what
 *   they leave without a data key: succeeded, one call each, a journal that verifies;
 * - when an action marks something sensitive, the host still runs them, with the sensitive param
 *   and step output sealed before the store sees them (nowhere in clear in any table) and opened
 *   when read back; the connector gets the clear value;
 * - a sensitive admission handed to an idle worker is written sealed in the one statement that
 *   admits and claims it, and the worker runs it with the clear value;
 * - an early completion (arrived while the call was in flight) is stored sealed whole even when
 *   nothing is sensitive, and the settle that applies it at parking (a settle running code in its
 *   transaction) reads it through the sealing store: the step's output is the original result,
 *   never the envelope;
 * - the sealing store and the store beneath it share one journal sequencer;
 * - a batch given to the sealed store's transitions applies its plain members through the store's
 *   own batch, in order, and a settle running code or an advance whose action this process never
 *   saw through the sealing store, each answering alone.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAction } from "../../src/core/action.js";
import { SEALED_FIELD, sealedStore } from "../../src/core/sealing.js";
import { createKeyring } from "../../src/core/keyring.js";
import { verifyStoredJournal, sealScopesNow } from "../../src/core/journal.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import { sequencerFor } from "../../src/core/sequencer.js";
import type { AdmitInput, BatchMember } from "../../src/core/transitions.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { localDataKey } from "../../src/runtime/data-key-file.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { beginInput, claimed, entry } from "../../src/stores/conformance/cases-transitions.js";
import { newScope } from "../../src/stores/conformance/fixtures.js";
import { countStatements, freshDatabase, type FreshDatabase, listenFirst, testPool } from "../helpers/pg.js";
import { withTransitions } from "../helpers/stores.js";
import { untilRead } from "../helpers/wait.js";
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
  const pool = testPool({ connectionString: db.url, max: 6 });
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
const HOT = new Set(["writ_t_admit", "writ_t_admit_claimed", "writ_t_claim", "writ_t_claim_next", "writ_t_begin", "writ_t_advance", "writ_t_settle", "writ_t_record", "writ_t_batch"]);
const ownTransitionStatements = (counts: Map<string, number>): number => [...counts].filter(([k]) => HOT.has(k)).reduce((s, [, n]) => s + n, 0);

/** The invocation's row as stored, as JSON text. */
async function invocationRow(url: string, invocationId: string | undefined): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return JSON.stringify((await c.query("SELECT doc FROM writ_invocations WHERE invocation_id = $1", [invocationId])).rows);
  } finally {
    await c.end();
  }
}

const plainActions = actions.filter((a) => a.sensitive === undefined || a.sensitive.length === 0);
/** Two steps, the first one's token sensitive: its output is written by the advance to the second. */
const secretTwo = defineAction({
  id: "secret.two",
  version: "1",
  params: z.object({ n: z.number(), card: z.string() }),
  idempotent: true,
  sensitive: ["/params/card", "/outputs/a/token"],
  steps: [
    { name: "a", connector: "c", operation: "a" },
    { name: "b", connector: "c", operation: "b", input: ({ outputs }) => ({ fromA: outputs.a ?? null }) },
  ],
});

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

  it("runs them with sensitive values sealed on the way in and opened on the way out", async () => {
    const { store, counts, url, close } = await countedStore();
    try {
      const b = makeHostBench(store, { dataKey: dataKey(), actions: [...actions, secretTwo] });
      await grantAuthority(b);
      const CARD = "4111-SEALED-TRANSITIONS-0007";
      const TOKEN = "tok-SEALED-TRANSITIONS-OUTPUT";
      // The invocation's row as the admission wrote it, read while its call runs (a settle writes it again).
      const atCall: string[] = [];
      b.replies.set("a", async (ctx) => {
        atCall.push(await invocationRow(url, ctx.invocationId));
        return { outcome: "success", externalRef: "ref-sealed", output: { token: TOKEN, last4: "0007" } };
      });
      counts.clear();
      const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      // The connector got the clear value, through the store's own transitions.
      expect(b.calls[0]?.request.params).toMatchObject({ card: CARD });
      expect(counts.get("writ_t_admit") ?? 0).toBe(1);
      expect(counts.get("writ_t_begin") ?? 0).toBe(1);
      expect(counts.get("writ_t_settle") ?? 0).toBe(1);
      // Two steps: the first one's sensitive output is sealed by the advance to the second.
      b.replies.set("b", { outcome: "success", externalRef: "ref-b", output: { done: true } });
      const two = await b.host.submit(b.request({ action: "secret.two", params: { n: 2, card: CARD } }));
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(counts.get("writ_t_advance") ?? 0).toBe(1);
      // At rest: the invocation's param and the step's output are envelopes, nowhere in clear.
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const inv = JSON.stringify((await c.query("SELECT doc FROM writ_invocations WHERE invocation_id = $1", [invocation.invocationId])).rows);
        const steps = JSON.stringify((await c.query("SELECT * FROM writ_steps WHERE invocation_id = $1", [invocation.invocationId])).rows);
        const twoSteps = JSON.stringify((await c.query("SELECT * FROM writ_steps WHERE invocation_id = $1 AND step_index = 0", [two.invocation.invocationId])).rows);
        expect(twoSteps).toContain(SEALED_FIELD);
        expect(inv).toContain(SEALED_FIELD);
        expect(atCall).toHaveLength(2);
        for (const row of atCall) {
          expect(row).toContain(SEALED_FIELD);
          expect(row).not.toContain(CARD);
        }
        expect(steps).toContain(SEALED_FIELD);
        expect(steps).toContain("0007");
        const tables = (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.t);
        for (const t of tables) {
          const all = (await c.query<{ j: string | null }>(`SELECT string_agg(row_to_json(x)::text, '') AS j FROM "${t}" x`)).rows[0]!.j ?? "";
          expect(all, t).not.toContain(CARD);
          expect(all, t).not.toContain(TOKEN);
        }
      } finally {
        await c.end();
      }
      // Read back through the host's store, they open to the originals.
      const read = await b.host.context.o.store.transact(async (tx) => ({ inv: await tx.getInvocation(b.scope, invocation.invocationId), steps: await tx.getSteps(b.scope, invocation.invocationId) }));
      expect(read.inv?.request.params).toMatchObject({ card: CARD });
      expect(read.steps[0]?.output).toEqual({ token: TOKEN, last4: "0007" });
      // The second step got the first one's output in clear.
      expect(b.calls[2]?.input).toMatchObject({ fromA: { token: TOKEN, last4: "0007" } });
    } finally {
      await close();
    }
  });

  it("hands a sensitive admission to an idle worker sealed, and the worker gets it opened", async () => {
    const { store, counts, url, close } = await countedStore();
    const b = makeHostBench(store, { dataKey: dataKey() });
    const worker = b.host.worker({ pollMs: 3_600_000, concurrency: 1 });
    try {
      await grantAuthority(b);
      const CARD = "4111-SEALED-HANDOFF-0042";
      // The row as the admission wrote it, read while its call runs (a settle writes it again).
      const atCall: string[] = [];
      b.replies.set("a", async (ctx) => {
        atCall.push(await invocationRow(url, ctx.invocationId));
        return { outcome: "success", externalRef: `ref-${ctx.invocationId}` };
      });
      // LISTEN in effect before the worker starts: its claims and reads are the test's to count.
      await listenFirst(store as Store & { onWake(cb: () => void): () => void; listening(): Promise<void> }); // until the store closes
      worker.start();
      // The worker's first claim found nothing: it sleeps, and takes the next admission in its commit.
      await untilRead(async () => (counts.get("writ_t_claim_next") ?? 0) + (counts.get("writ_t_claim") ?? 0) > 0 && worker.inFlight() === 0, "the worker's first, empty claim");
      // The sealing layer passes the claim's answer of the next run time on: the worker sleeps on
      // it, with no read of its own (one would be sent within milliseconds of the claim's answer).
      await new Promise((r) => setTimeout(r, 200));
      expect(counts.get("writ_next_run_at") ?? 0, "reads of the next run time after the empty claim").toBe(0);
      // (This pool counts a statement when it is sent: the claim may not have answered yet, so
      // the first admission may still go the plain way; the next one, after a run, is handed off.)
      let invocation: { invocationId: string } | undefined;
      for (let n = 0; n < 5 && (counts.get("writ_t_admit_claimed") ?? 0) === 0; n++) {
        await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
        invocation = (await b.host.submit(b.request({ action: "secret.pay", params: { n, card: CARD }, idempotencyKey: `handoff-${n}` }))).invocation;
        const id = invocation.invocationId;
        await untilRead(async () => (await b.host.get(b.scope, id))?.status === "succeeded", `invocation ${n} succeeded`, 20_000);
      }
      expect(counts.get("writ_t_admit_claimed") ?? 0).toBe(1);
      expect(b.calls.at(-1)?.request.params).toMatchObject({ card: CARD });
      expect(b.calls.at(-1)?.request.idempotencyKey).toBe(`handoff-${b.calls.length - 1}`);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      try {
        const inv = JSON.stringify((await c.query("SELECT doc FROM writ_invocations WHERE invocation_id = $1", [invocation!.invocationId])).rows);
        expect(inv).toContain(SEALED_FIELD);
        expect(inv).not.toContain(CARD);
        expect(atCall.at(-1)).toContain(SEALED_FIELD);
        expect(atCall.at(-1)).not.toContain(CARD);
      } finally {
        await c.end();
      }
    } finally {
      await worker.stop();
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

  it("shares one journal sequencer with the store beneath it (two raced each other's seals on every hint)", async () => {
    const { store, close } = await countedStore();
    try {
      const crypto = nodeCryptoPort();
      const plain = sealedStore(store, dataKey(), { get: () => undefined, empty: true });
      const secret = sealedStore(store, dataKey(), { get: () => ["/params/card"], empty: false });
      expect(sequencerFor(plain, crypto)).toBe(sequencerFor(store, crypto));
      expect(sequencerFor(secret, crypto)).toBe(sequencerFor(store, crypto));
    } finally {
      await close();
    }
  });

  it("splits a batch: plain members through the store's own batch in order, a settle running code (or an advance of an unknown action) through the sealing store", async () => {
    const { store, close } = await countedStore();
    try {
      const seen: BatchMember["kind"][][] = [];
      // The inner store's batch, recorded (its other transitions are its own).
      const recorded = withTransitions(store, (o) => new Proxy(o, { get: (t, p) => (p === "batch" ? (ms: BatchMember[]) => (seen.push(ms.map((m) => m.kind)), t.batch(ms)) : (Reflect.get(t, p) as unknown)) }));
      // The conformance fixtures' action marks its first step's token sensitive.
      const sealed = sealedStore(recorded, dataKey(), { get: (id) => (id === "payments.refund" ? ["/outputs/step-0/token"] : undefined), empty: false });
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
      expect((await t.begin(scope, inC)).started).toBe(true);
      const TOKEN = "tok-BATCH-MEMBER-SEALED";
      const settleC = { fence: c.fence, step: { ...inC.step, status: "succeeded" as const, endedAt: inC.step.startedAt, externalRef: "ref-c", output: { token: TOKEN, n: 1 } }, attempt: { ...inC.attempt, state: "SUCCEEDED" as const }, idempotency: { ...inC.idempotency, state: "succeeded" as const }, invocation: { ...c.inv, status: "succeeded" as const }, entries: [entry(scope, `settle:${c.inv.invocationId}`)] };
      let withinTx: StoreTx | null = null;
      const settleA = { fence: a.fence, step: { ...inA.step, status: "succeeded" as const, endedAt: inA.step.startedAt }, attempt: { ...inA.attempt, state: "SUCCEEDED" as const }, idempotency: { ...inA.idempotency, state: "succeeded" as const }, invocation: { ...a.inv, status: "succeeded" as const }, entries: [entry(scope, `settle:${a.inv.invocationId}`)], within: async (tx: StoreTx) => void (withinTx = tx) };
      const out = await t.batch([
        { kind: "settle", scope, input: settleC },
        { kind: "settle", scope, input: settleA },
        { kind: "begin", scope, input: { ...inD, fence: { ...d.fence, token: "stale" } } },
        // An invocation this process never admitted, claimed or began: its action is unknown.
        { kind: "advance", scope, input: { fence: { ...d.fence, invocationId: "inv_never_seen" }, done: { ...inD.step, invocationId: "inv_never_seen", status: "succeeded" }, next: { ...inD.step, invocationId: "inv_never_seen", stepIndex: 1 }, entries: [] } },
        // Malformed: no invocation to seal. It runs the generic way and fails there, alone.
        { kind: "admit", scope, input: { entries: [] } as unknown as AdmitInput },
      ]);
      expect(out).toHaveLength(5);
      expect(out[4]).toMatchObject({ ok: false });
      // The store's own batch got the plain settle and the begin, in their order; the settle with
      // code and the advance ran the sealing way (the advance fails there: no such invocation
      // holds that lease).
      expect(seen).toEqual([["settle", "begin"]]);
      expect(out[3]).toMatchObject({ ok: false });
      expect(out[0]).toMatchObject({ ok: true });
      // The plain settle's sensitive output reached the table sealed, and reads back opened
      // through the transitions (the prepare read) and through the sealing store.
      const raw = await store.transact((tx) => tx.getSteps(scope, c.inv.invocationId));
      expect(JSON.stringify(raw)).toContain(SEALED_FIELD);
      expect(JSON.stringify(raw)).not.toContain(TOKEN);
      const prepared = await t.prepare(scope, { invocationId: c.inv.invocationId, authorityRef: "auth" });
      expect(prepared.steps[0]?.output).toEqual({ token: TOKEN, n: 1 });
      expect((await sealed.transact((tx) => tx.getSteps(scope, c.inv.invocationId)))[0]?.output).toEqual({ token: TOKEN, n: 1 });
      // A begin that finds the settled step (its expectation is stale) answers it opened, in a batch too.
      const [found] = await t.batch([{ kind: "begin", scope, input: beginInput(scope, c.inv.invocationId) }]);
      expect(found).toMatchObject({ ok: true, value: { started: false } });
      const foundSteps = (found as { value: { found: { steps: Array<{ output?: unknown }> } } }).value.found.steps;
      expect(foundSteps[0]?.output).toEqual({ token: TOKEN, n: 1 });
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
