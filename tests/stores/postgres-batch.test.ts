/**
 * PostgreSQL batches (docs/stores.md, "Batches"): concurrent write transitions travel together in
 * `writ_batch` statements, and each member still answers alone; the sequencer seals several
 * scopes in one round (one read, one `writ_batch` of seals).
 *
 * Invariants:
 * - calls that arrive while a batch is in flight go together: 24 concurrent begins take far
 *   fewer statements than 24 (counted on the store's own pool, by statement name);
 * - a member refused by the server (lost lease) or by the client (text PostgreSQL cannot store, in
 *   a value or inside an array) fails alone; the others start, numbered without gaps;
 * - `batchMax: 1` sends every call in its own statement (no `writ_batch`);
 * - with `batchesInFlight: 2`, two `writ_batch` statements are on their way at once, and every
 *   member answers as with one (refused ones alone, the others numbered without gaps);
 * - seals of several scopes in one statement apply alone: a stale head answers false, a seal of
 *   entries already sealed fails with CONFLICT, the others seal, and every chain verifies;
 * - `claimPrepared` (the claim with each invocation's prepare read, one statement) answers what
 *   `claim` and then `prepare` answer: the same steps, authority, approval (with its rev) and breakers;
 * - a claim queued beside write transitions rides in their `writ_batch` statement and commit: it
 *   claims what is queued, the admission of its own batch included (the claim goes last), while a
 *   begin refused for a lost lease fails alone, and the others start;
 * - a batch statement that never reaches the server fails every member with its error, writes
 *   nothing, and the queue keeps working; a member the server rolled back for a deadlock runs again
 *   alone and succeeds, the others of its batch once each.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isWritError, type Store } from "../../src/index.js";
import { transitionsOf } from "../../src/core/transitions.js";
import { chain, sealScopesNow, verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import { generateSigningKey } from "../../src/index.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { beginInput, claimed } from "../../src/stores/conformance/cases-transitions.js";
import { T0, approval, authority, invocation, newScope, step } from "../../src/stores/conformance/fixtures.js";
import { entry } from "../../src/stores/conformance/cases-transitions.js";
import { freshDatabase, type FreshDatabase, testPool } from "../helpers/pg.js";

/**
 * Faults injected into the next `writ_batch` statement: `fail` rejects it as a broken connection
 * would (nothing reaches the server); `deadlock` drops member `n` from what the server receives
 * and answers for it what PostgreSQL answers for a member its deadlock detector rolled back.
 */
type BatchFault = { kind: "fail" } | { kind: "deadlock"; member: number };

/** A pool that counts the statements its clients run, by prepared-statement name, and injects `fault`. */
function countingPool(url: string, pairBatches = false): { pool: pg.Pool; counts: Map<string, number>; fault: { next: BatchFault | null }; batches: { now: number; most: number } } {
  const pool = testPool({ connectionString: url, max: 4 });
  const counts = new Map<string, number>();
  const fault: { next: BatchFault | null } = { next: null };
  /** `writ_batch` statements on their way now, and the most at once. */
  const batches = { now: 0, most: 0 };
  /**
   * With `pairBatches`, a `writ_batch` statement that finds none other on its way waits up to 5 s
   * for a second one before it goes: whether two overlap then depends on the store sending them at
   * once, not on how fast this machine's connections open and answer.
   */
  let arrived: (() => void) | null = null;
  const pair = async (): Promise<void> => {
    if (!pairBatches) return;
    if (arrived !== null) {
      arrived();
      arrived = null;
      return;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        arrived = null;
        resolve();
      }, 5_000);
      arrived = () => {
        clearTimeout(t);
        resolve();
      };
    });
  };
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => Promise<{ rows: Array<{ out: unknown[] }> }>;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = async (...a: unknown[]) => {
      const q = a[0] as { name?: string; values?: unknown[] } | string;
      const name = typeof q === "object" && q !== null && typeof q.name === "string" ? q.name : "other";
      counts.set(name, (counts.get(name) ?? 0) + 1);
      const f = fault.next;
      if (name === "writ_t_batch" && f === null) {
        batches.now += 1;
        try {
          await pair();
          batches.most = Math.max(batches.most, batches.now);
          return await query(...a);
        } finally {
          batches.now -= 1;
        }
      }
      if (name !== "writ_t_batch" || f === null || typeof q !== "object") return query(...a);
      fault.next = null;
      if (f.kind === "fail") throw Object.assign(new Error("injected: connection lost before the batch reached the server"), { code: "08006" });
      const calls = JSON.parse(String(q.values![0])) as unknown[];
      const kept = calls.filter((_, i) => i !== f.member);
      const r = await query({ ...q, values: [JSON.stringify(kept)] });
      r.rows[0]!.out.splice(f.member, 0, { state: "40P01", message: "deadlock detected" });
      return r;
    };
  });
  return { pool, counts, fault, batches };
}

describe("postgres batches", () => {
  let db: FreshDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  async function run(batchMax: number, batchesInFlight = 1): Promise<{ counts: Map<string, number>; results: PromiseSettledResult<unknown>[]; seqs: number[]; mostAtOnce: number }> {
    const { pool, counts, batches } = countingPool(db.url, batchesInFlight > 1);
    const store: Store = postgresStore({ pool }, { batchMax, batchesInFlight, analyzeEveryMs: 0 });
    try {
      const scope = newScope();
      const runs = [];
      for (let i = 0; i < 24; i++) runs.push(await claimed(store, scope));
      const inputs = runs.map((r, i) => {
        const input = beginInput(scope, r.inv.invocationId, { fence: i === 5 ? { ...r.fence, token: "stale" } : r.fence });
        // A NUL in a step's connector: PostgreSQL text cannot hold it, the client refuses this member.
        if (i === 9) input.step = { ...input.step, connector: "bad\u0000connector" };
        // A lone surrogate inside an array (a journal entry's type): refused by the client as well,
        // whether the call goes in a batch or alone (where it once went to the driver, which sent U+FFFD).
        if (i === 13) input.entries = input.entries.map((e, k) => (k === 0 ? { ...e, type: "bad\ud800type" } : e));
        return input;
      });
      counts.clear();
      const t = transitionsOf(store);
      const results = await Promise.allSettled(inputs.map((input) => t.begin(scope, input)));
      const seqs = results.flatMap((r) => (r.status === "fulfilled" && r.value.started ? [r.value.seq] : []));
      return { counts: new Map(counts), results, seqs, mostAtOnce: batches.most };
    } finally {
      await store.close();
      await pool.end();
    }
  }

  /** Member 5 (stale lease), member 9 (a NUL) and member 13 (a lone surrogate) fail alone; the 21 others start, numbered 1..21. */
  function expectAloneFailures(results: PromiseSettledResult<unknown>[], seqs: number[]): void {
    const r5 = results[5]!;
    expect(r5.status === "rejected" && isWritError(r5.reason, "LEASE_LOST")).toBe(true);
    for (const i of [9, 13]) {
      const r = results[i]!;
      expect(r.status === "rejected" && isWritError(r.reason, "INVALID_ARGUMENT")).toBe(true);
    }
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(21);
    expect([...seqs].sort((a, b) => a - b)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  }

  it("24 concurrent begins go in a few writ_batch statements; the refused ones fail alone", async () => {
    const { counts, results, seqs } = await run(32);
    const batches = counts.get("writ_t_batch") ?? 0;
    const singles = counts.get("writ_t_begin") ?? 0;
    console.log(`[postgres-batch] 24 concurrent begins: ${batches} writ_batch + ${singles} single statements`);
    expect(batches).toBeGreaterThan(0);
    expect(batches + singles).toBeLessThanOrEqual(6);
    expectAloneFailures(results, seqs);
  });

  it("with two batches in flight, 24 concurrent begins answer as with one: the refused ones fail alone, the others number without gaps", async () => {
    // batchMax 4: the first call goes alone, the next 23 queue; two batches of 4 then leave at once.
    const { counts, results, seqs, mostAtOnce } = await run(4, 2);
    console.log(`[postgres-batch] batchesInFlight 2: ${counts.get("writ_t_batch") ?? 0} writ_batch + ${counts.get("writ_t_begin") ?? 0} single statements, ${mostAtOnce} batches at once`);
    expect(mostAtOnce).toBe(2);
    expectAloneFailures(results, seqs);
  });

  it("batchMax 1 sends each call alone", async () => {
    const { counts, results, seqs } = await run(1);
    expect(counts.get("writ_t_batch") ?? 0).toBe(0);
    expect(counts.get("writ_t_begin")).toBe(22); // the NUL and the lone-surrogate members never reach the server
    expectAloneFailures(results, seqs);
  });

  it("seals of several scopes go in one round and apply alone", async () => {
    const { pool, counts } = countingPool(db.url);
    const store: Store = postgresStore({ pool }, { analyzeEveryMs: 0 });
    const crypto = nodeCryptoPort();
    try {
      const t = transitionsOf(store);
      const [a, b, c] = [newScope(), newScope(), newScope()];
      for (const sc of [a, b, c]) {
        for (let i = 0; i < 2; i++) {
          const inv = invocation(sc);
          await t.admit(sc, { invocation: inv, entries: [entry(sc, `submitted:${inv.invocationId}`)] });
        }
      }
      counts.clear();
      // A repeated scope shares its outcome; three scopes, one read and one batch of seals.
      const out = await sealScopesNow(store, crypto, [a, b, a]);
      expect(out).toEqual([{ ok: true, value: 2 }, { ok: true, value: 2 }, { ok: true, value: 2 }]);
      expect(counts.get("writ_t_read_unsealed_many")).toBe(1);
      expect(counts.get("writ_t_batch")).toBe(1);
      // One statement: a stale head (false), a re-seal of sealed entries (CONFLICT), a good seal of c.
      const sealedA = await store.transact((tx) => tx.readJournal(a));
      const [readC] = await t.readUnsealedMany!([c], 100);
      const goodC = chain(crypto, c, readC!.head, readC!.entries);
      const res = await t.sealIfHeadMany!([
        { scope: a, headSeq: 0, entries: sealedA },
        { scope: a, headSeq: 2, entries: sealedA },
        { scope: c, headSeq: 0, entries: goodC },
      ]);
      expect(res[0]).toEqual({ ok: true, value: false });
      expect(!res[1]!.ok && isWritError(res[1]!.error, "CONFLICT")).toBe(true);
      expect(res[2]).toEqual({ ok: true, value: true });
      const key = generateSigningKey({ kid: "k" });
      const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
      for (const sc of [a, b, c]) {
        const v = await verifyStoredJournal(store, crypto, keyring, sc);
        expect(v.ok, JSON.stringify(v)).toBe(true);
        expect((await store.transact((tx) => tx.readJournal(sc))).map((e) => e.seq)).toEqual([1, 2]);
      }
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("claimPrepared answers what claim and prepare answer, in one statement", async () => {
    const { pool, counts } = countingPool(db.url);
    const store: Store = postgresStore({ pool }, { analyzeEveryMs: 0 });
    try {
      const t = transitionsOf(store);
      const scope = newScope();
      const auth = authority(scope);
      const ap = approval(scope);
      await store.transact(async (tx) => {
        await tx.putAuthority(scope, auth);
        await tx.putApproval(scope, ap);
        await tx.putBreaker(scope, { ...scope, connector: "c", operation: "a", state: "open", failures: 2, openedAt: T0, openUntil: T0 + 1000, updatedAt: T0 });
      });
      const plain = invocation(scope, { request: { ...invocation(scope).request, authorityRef: auth.authorityRef } });
      const gated = invocation(scope, { approvalId: ap.approvalId, request: { ...invocation(scope).request, authorityRef: auth.authorityRef } });
      for (const inv of [plain, gated]) await t.admit(scope, { invocation: inv, entries: [] });
      // A step row of a previous attempt, so the steps are not empty.
      await store.transact((tx) => tx.putStep(scope, step(scope, gated.invocationId, 0, { status: "failed" })));
      const targets = [{ connector: "c", operation: "a" }, { connector: "c", operation: "b" }];
      counts.clear();
      const { claimed } = await t.claimPrepared!({ owner: "w", tokens: Array.from({ length: 500 }, (_, i) => `tok${i}`), now: T0 + 10, leaseMs: 60_000, limit: 500 }, targets);
      expect(counts.get("writ_t_claim_next")).toBe(1);
      expect(counts.get("writ_t_prepare_2") ?? 0).toBe(0);
      const mine = claimed.filter((c) => c.invocation.tenantId === scope.tenantId);
      expect(mine.map((c) => c.invocation.invocationId).sort()).toEqual([plain.invocationId, gated.invocationId].sort());
      for (const { invocation: inv, prepared } of mine) {
        expect(inv.status).toBe("running");
        expect(prepared.invocation).toEqual({ status: "running", leaseOwner: "w", leaseToken: inv.leaseToken });
        const again = await t.prepare(scope, { invocationId: inv.invocationId, authorityRef: inv.request.authorityRef, ...(inv.approvalId ? { approvalId: inv.approvalId } : {}), breakers: targets });
        expect(prepared).toEqual(again);
        expect(prepared.authority?.authorityRef).toBe(auth.authorityRef);
        expect(prepared.breakers.map((b) => b?.state ?? null)).toEqual(["open", null]);
      }
      const g = mine.find((c) => c.invocation.invocationId === gated.invocationId)!.prepared;
      expect(g.approval?.approvalId).toBe(ap.approvalId);
      expect(g.steps.map((x) => x.status)).toEqual(["failed"]);
      expect(mine.find((c) => c.invocation.invocationId === plain.invocationId)!.prepared.approval).toBeNull();
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("a claim that takes fewer than it could answers the next run time, read after it; one that takes all it could does not read it", async () => {
    // A database of its own: the next run time spans every scope.
    const own = await freshDatabase();
    const { pool, counts } = countingPool(own.url);
    const store: Store = postgresStore({ pool }, { analyzeEveryMs: 0 });
    try {
      await store.migrate();
      const t = transitionsOf(store);
      const scope = newScope();
      const other = newScope();
      const due = invocation(scope);
      const soon = invocation(other, { runAt: T0 + 5_000 });
      const mid = invocation(scope, { runAt: T0 + 7_000 });
      const later = invocation(scope, { runAt: T0 + 9_000 });
      for (const inv of [due, soon, mid, later]) await t.admit({ tenantId: inv.tenantId, spaceId: inv.spaceId }, { invocation: inv, entries: [] });
      const claim = (now: number, limit: number, tokens = limit) =>
        t.claimPrepared!({ owner: "w", tokens: Array.from({ length: tokens }, (_, i) => `k${now}.${i}`), now, leaseMs: 60_000, limit }, []);
      counts.clear();
      // Took all it could (1 of 1): no read, no answer.
      const full = await claim(T0 + 10, 1);
      expect(full.claimed.map((c) => c.invocation.invocationId)).toEqual([due.invocationId]);
      expect("nextRunAt" in full).toBe(false);
      // Took nothing of 4: the earliest queued run time, of any scope.
      expect(await claim(T0 + 10, 4)).toEqual({ claimed: [], nextRunAt: T0 + 5_000 });
      // One token for a limit of four: what it could take is one, and it took it (no answer).
      const one = await claim(T0 + 6_000, 4, 1);
      expect(one.claimed.map((c) => c.invocation.invocationId)).toEqual([soon.invocationId]);
      expect("nextRunAt" in one).toBe(false);
      // What the claim itself took is not queued any more: the next is the one after it.
      const took = await claim(T0 + 7_000, 4);
      expect(took.claimed.map((c) => c.invocation.invocationId)).toEqual([mid.invocationId]);
      expect(took.nextRunAt).toBe(T0 + 9_000);
      const last = await claim(T0 + 9_000, 4);
      expect(last.claimed.map((c) => c.invocation.invocationId)).toEqual([later.invocationId]);
      expect(last.nextRunAt).toBeNull();
      // One statement each.
      expect(counts.get("writ_t_claim_next")).toBe(5);
    } finally {
      await store.close();
      await pool.end();
      await own.drop();
    }
  });

  it("a claim rides in the batch of the transitions queued with it; a refused member fails alone", async () => {
    const { pool, counts } = countingPool(db.url);
    const store: Store = postgresStore({ pool }, { analyzeEveryMs: 0 });
    try {
      const t = transitionsOf(store);
      const scope = newScope();
      const runs = [];
      for (let i = 0; i < 4; i++) runs.push(await claimed(store, scope));
      const waiting = [invocation(scope), invocation(scope)];
      for (const inv of waiting) await t.admit(scope, { invocation: inv, entries: [] });
      const inputs = runs.map((r, i) => beginInput(scope, r.inv.invocationId, { fence: i === 2 ? { ...r.fence, token: "stale" } : r.fence }));
      counts.clear();
      // The first begin goes alone; what is queued while it is on its way (three begins and the
      // claim) goes together in the next statement.
      const first = t.begin(scope, inputs[0]!);
      // Sent once the event loop has run what it holds (it may be the turn in which the last
      // admission landed: the store's batches wait for that turn's end, docs/stores.md).
      for (let i = 0; i < 1_000 && !counts.has("writ_t_begin"); i++) await new Promise((r) => setImmediate(r));
      const begins = Promise.allSettled([first, ...inputs.slice(1).map((input) => t.begin(scope, input))]);
      const late = invocation(scope);
      const admitted = t.admit(scope, { invocation: late, entries: [] });
      waiting.push(late);
      const claim = t.claimPrepared!({ owner: "w2", tokens: Array.from({ length: 50 }, (_, i) => `t${i}`), now: T0 + 10, leaseMs: 60_000, limit: 50 }, []);
      const [results, got, adm] = await Promise.all([begins, claim, admitted]);
      expect(adm.created).toBe(true);
      expect(counts.get("writ_t_begin")).toBe(1);
      expect(counts.get("writ_t_batch")).toBe(1);
      expect(counts.get("writ_t_claim_next") ?? 0).toBe(0);
      // It took fewer than it asked for: the next run time came with it.
      expect("nextRunAt" in got).toBe(true);
      const mine = got.claimed.filter((c) => c.invocation.tenantId === scope.tenantId);
      expect(mine.map((c) => c.invocation.invocationId).sort()).toEqual(waiting.map((w) => w.invocationId).sort());
      for (const c of mine) expect(c.prepared.invocation).toEqual({ status: "running", leaseOwner: "w2", leaseToken: c.invocation.leaseToken });
      const r2 = results[2]!;
      expect(r2.status === "rejected" && isWritError(r2.reason, "LEASE_LOST")).toBe(true);
      expect(results.filter((r) => r.status === "fulfilled" && r.value.started)).toHaveLength(3);
      // What the batch claimed is committed: the claimed rows are running under w2.
      for (const c of mine) expect((await store.transact((tx) => tx.getInvocation(scope, c.invocation.invocationId)))?.leaseOwner).toBe("w2");
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("a failed batch statement fails its members only; a deadlocked member runs again alone", async () => {
    const { pool, counts, fault } = countingPool(db.url);
    const store: Store = postgresStore({ pool }, { analyzeEveryMs: 0 });
    try {
      const t = transitionsOf(store);
      const scope = newScope();
      const runs = [];
      for (let i = 0; i < 6; i++) runs.push(await claimed(store, scope));
      const inputs = runs.map((r) => beginInput(scope, r.inv.invocationId, { fence: r.fence }));
      const ids = (xs: typeof inputs) => xs.map((x) => x.consumed.decisionId);
      const consumed = async (decisionIds: string[]) =>
        (await Promise.all(decisionIds.map((d) => store.transact((tx) => tx.getConsumedDecision(scope, d))))).filter((x) => x !== null).length;

      // The batch never reaches the server: all three members fail with the connection error.
      fault.next = { kind: "fail" };
      await expect(t.batch(inputs.slice(0, 3).map((input) => ({ kind: "begin" as const, scope, input })))).rejects.toThrow(/connection lost/);
      expect(await consumed(ids(inputs.slice(0, 3)))).toBe(0);
      // Concurrent single calls coalesced into the failing statement each reject with its error
      // (a call that went alone, in its own statement, is not hit); the queue goes on.
      fault.next = { kind: "fail" };
      const hit = await Promise.allSettled(inputs.slice(3).map((input) => t.begin(scope, input)));
      const rejected = hit.flatMap((h, i) => (h.status === "rejected" ? [i + 3] : []));
      expect(rejected.length, "members of the failed batch").toBeGreaterThanOrEqual(2);
      for (const i of rejected) expect(String((hit[i - 3] as PromiseRejectedResult).reason)).toMatch(/connection lost/);
      expect(await consumed(rejected.map((i) => inputs[i]!.consumed.decisionId))).toBe(0);
      expect(hit.every((h) => h.status === "rejected" || h.value.started)).toBe(true);

      // A member rolled back by a deadlock: retried alone, started; the others started once.
      counts.clear();
      fault.next = { kind: "deadlock", member: 1 };
      const again = await t.batch(inputs.slice(0, 3).map((input) => ({ kind: "begin" as const, scope, input })));
      expect(fault.next, "the fault was used").toBeNull();
      expect(again.map((o) => o.ok && (o.value as { started: boolean }).started)).toEqual([true, true, true]);
      expect(counts.get("writ_t_batch")).toBe(1);
      expect(counts.get("writ_t_begin")).toBe(1);
      expect(await consumed(ids(inputs.slice(0, 3)))).toBe(3);
    } finally {
      await store.close();
      await pool.end();
    }
  });
});
