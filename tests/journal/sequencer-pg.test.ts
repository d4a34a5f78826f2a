/**
 * The journal sequencer on PostgreSQL, where commit order is not insertion order (docs/journal.md).
 *
 * Invariants checked:
 * - S1 out of id order: an entry whose transaction took the lower position but commits later is
 *   sealed by a later run; nothing is assumed sealed because a higher position is; both end in one
 *   chain that verifies, each exactly once.
 * - S2 concurrent sequencers (two stores, two pools, so two sequencers): concurrent writers and
 *   sequencers on one scope leave one chain, seq 1..N, no fork, and the seal counts add up to N
 *   (nothing sealed twice).
 * - S3 a real process SIGKILLed between its commits and their seal loses nothing: its committed
 *   entries are durable (unsealed), another process's sequencer seals them after the restart, and
 *   the chain verifies with exactly the committed entries. Its commits went through while the
 *   scope's journal lock was held elsewhere: no action transaction waits for the chain.
 * - S4 one sealer per scope across processes: of two running sequencers (two real processes), the
 *   one that claimed the scope seals it and the other never reads it to seal while the holder
 *   lives; when the holder is SIGKILLed its claim goes with its session, and the other process
 *   seals the scope's new entries and takes the claim over. The chain verifies, each entry once.
 * - S5 a store whose claims connection is terminated by the server learns it from the connection's
 *   end (it no longer believes it holds the claim), and its next poll claims the scope again on a
 *   new connection and seals the new entries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { appendJournal, readWholeJournal, sealPending, verifyStoredJournal } from "../../src/core/journal.js";
import { sequencerFor } from "../../src/core/sequencer.js";
import type { Scope } from "../../src/core/types.js";
import { createKeyring, nodeCryptoPort, postgresStore, systemClock, type PostgresStore } from "../../src/index.js";
import { advisoryKey } from "../../src/stores/postgres/postgres-locks.js";
import { sealerKey } from "../../src/stores/postgres/postgres-sealers.js";
import { killChild, reapChildren, spawnChild } from "../host-crash/fixtures/children.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";

const SEAL_CHILD = new URL("./fixtures/seal-child.ts", import.meta.url).pathname;
const crypto = nodeCryptoPort();
const keyring = createKeyring([]);
const server = await pgServerOrNull();
let scopeN = 0;
const newScope = (): Scope => ({ tenantId: `seq-${process.pid}-${++scopeN}`, spaceId: "s" });
const draft = (id: string, at = 1_700_000_000_000): Parameters<typeof appendJournal>[3][number] => ({ id, type: "test.entry", at, refs: {}, data: { id } });

describe.skipIf(server === null)("the sequencer on postgres", () => {
  let db: FreshDatabase;
  const stores: PostgresStore[] = [];
  const open = (): PostgresStore => {
    const s = postgresStore({ url: db.url }, { max: 8 });
    stores.push(s);
    return s;
  };
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    await reapChildren();
    await Promise.all(stores.map((s) => s.close()));
    await db.drop();
  });

  // S1
  it("seals a transaction that commits after a later one, out of id order, in a later run", async () => {
    const store = open();
    const scope = newScope();
    const seq = sequencerFor(store, crypto);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let lowWritten!: () => void;
    const lowIn = new Promise<void>((r) => (lowWritten = r));
    const low = store.transact(async (tx) => {
      await appendJournal(tx, crypto, scope, [draft("low")]);
      lowWritten();
      await gate; // held open: its row has the lower position but is not committed
    });
    await lowIn;
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("high")]));
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      const pos = await c.query<{ id: string; pos: string }>("SELECT id, pos FROM writ_journal WHERE tenant_id = $1 ORDER BY pos", [scope.tenantId]);
      // only the committed one is visible to another connection
      expect(pos.rows.map((r) => r.id)).toEqual(["high"]);
    } finally {
      await c.end();
    }
    await seq.seal(scope);
    expect((await readWholeJournal(store, scope)).map((e) => [e.seq, e.id])).toEqual([[1, "high"]]);
    release();
    await low;
    await seq.seal(scope);
    const entries = await readWholeJournal(store, scope);
    expect(entries.map((e) => [e.seq, e.id])).toEqual([
      [1, "high"],
      [2, "low"],
    ]);
    const c2 = new pg.Client({ connectionString: db.url });
    await c2.connect();
    try {
      const pos = await c2.query<{ id: string; pos: string }>("SELECT id, pos FROM writ_journal WHERE tenant_id = $1 ORDER BY pos", [scope.tenantId]);
      expect(pos.rows.map((r) => r.id)).toEqual(["low", "high"]); // "low" really had the lower position
    } finally {
      await c2.end();
    }
    const v = await verifyStoredJournal(store, crypto, keyring, scope, { now: Date.now(), sealWithinMs: 250 });
    expect(v).toMatchObject({ ok: true, entries: 2, unsealed: 0, problems: [] });
  });

  // S2
  it("two sequencers (two stores, two pools) racing on one scope leave one chain, each entry sealed once", async () => {
    const [a, b] = [open(), open()];
    const scope = newScope();
    const ids: string[] = [];
    let writing = true;
    const writers = Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const s = i % 2 === 0 ? a : b;
        const batch = [draft(`w${i}-0`), draft(`w${i}-1`)];
        ids.push(...batch.map((d) => d.id));
        return s.transact((tx) => appendJournal(tx, crypto, scope, batch));
      }),
    ).finally(() => {
      writing = false;
    });
    const loop = async (s: PostgresStore): Promise<number> => {
      let n = 0;
      while (writing) n += await s.transact((tx) => sealPending(tx, crypto, scope, 7));
      for (;;) {
        const k = await s.transact((tx) => sealPending(tx, crypto, scope, 7));
        if (k === 0) return n;
        n += k;
      }
    };
    const counts = await Promise.all([loop(a), loop(b), loop(a), loop(b)]);
    await writers;
    const rest = await loop(a);
    const entries = await readWholeJournal(a, scope);
    expect(entries.map((e) => e.seq)).toEqual(ids.map((_, i) => i + 1));
    expect(entries.map((e) => e.id).sort()).toEqual([...ids].sort());
    expect(counts.reduce((x, y) => x + y, rest)).toBe(ids.length); // no entry sealed twice
    const v = await verifyStoredJournal(b, crypto, keyring, scope, { now: Date.now(), sealWithinMs: 250 });
    expect(v).toMatchObject({ ok: true, entries: ids.length, unsealed: 0 });
  });

  // S3
  it("a process killed between its commits and their seal loses nothing; another process seals them", async () => {
    const store = open();
    const scope = newScope();
    // Hold the scope's journal lock, as a sequencer mid-run elsewhere would: the child's commits
    // must not wait for it, and its own sequencer cannot seal until it is released.
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock($1)", [String(advisoryKey(scope, "journal"))]);
    const env = { WRIT_SEAL_URL: db.url, WRIT_SEAL_TENANT: scope.tenantId, WRIT_SEAL_SPACE: scope.spaceId };
    const writer = spawnChild("seal-writer", { ...env, WRIT_SEAL_MODE: "commit", WRIT_SEAL_COUNT: "25" }, SEAL_CHILD);
    let restarted: ReturnType<typeof spawnChild> | null = null;
    try {
      await writer.waitForLine((l) => typeof l === "object" && l !== null && "done" in l, 60_000, "the writer's commits");
      const committed = writer.lines.flatMap((l) => (typeof l === "object" && l !== null && "committed" in l ? [String((l).committed)] : []));
      expect(committed).toHaveLength(25);
      await killChild(writer);
      await holder.query("COMMIT"); // the lock is free again; the writer is dead
      // Durable at commit: nothing lost. Most entries are not chained yet; a seal statement the
      // writer sent before it died may still run on the server once the lock is free (a seal is
      // one statement that checks the head it was computed on), so some may be. The read takes the
      // scope's journal lock first: each statement of a transaction reads its own snapshot, so a
      // seal committing between the two reads would show its entries in both (or in neither).
      const before = await store.transact(async (tx) => {
        await tx.lock(scope, ["journal"]);
        return [await tx.listUnsealed(scope), await tx.readJournal(scope)] as const;
      });
      expect([...before[0].map((u) => u.id), ...before[1].map((e) => e.id)].sort()).toEqual([...committed].sort());
      expect(before[0].length).toBeGreaterThan(0);
      // After the restart, another process's sequencer seals them within its bound.
      restarted = spawnChild("seal-sequencer", { ...env, WRIT_SEAL_MODE: "sequencer" }, SEAL_CHILD);
      await restarted.waitForLine((l) => typeof l === "object" && l !== null && "ready" in l, 60_000, "the restarted sequencer");
      const deadline = Date.now() + 30_000;
      while ((await store.transact((tx) => tx.listUnsealed(scope))).length > 0) {
        if (Date.now() > deadline) throw new Error("the restarted sequencer did not seal within 30 s");
        await new Promise((r) => setTimeout(r, 50));
      }
      const entries = await readWholeJournal(store, scope);
      expect(entries.map((e) => e.id).sort()).toEqual([...committed].sort());
      expect(entries.map((e) => e.seq)).toEqual(committed.map((_, i) => i + 1));
      const v = await verifyStoredJournal(store, crypto, keyring, scope, { now: Date.now(), sealWithinMs: 250 });
      expect(v).toMatchObject({ ok: true, entries: committed.length, unsealed: 0, problems: [] });
    } finally {
      await holder.end().catch(() => undefined);
      if (writer.alive()) await killChild(writer);
      if (restarted?.alive()) await killChild(restarted);
    }
  }, 120_000);

  // S4
  it("one sealer per scope: the other process leaves the scope to the claim's holder, and takes over when the holder is killed", async () => {
    const store = open(); // no sequencer here: the children seal
    const scope = newScope();
    // The holder polls every 250 ms, the other every 2 s: with the holder alive, the other never
    // sees an entry at two of its polls (its fallback's condition), however the polls drift.
    const env = { WRIT_SEAL_URL: db.url, WRIT_SEAL_TENANT: scope.tenantId, WRIT_SEAL_SPACE: scope.spaceId, WRIT_SEAL_MODE: "sequencer", WRIT_SEAL_COUNT_READS: "1" };
    const [k1, k2] = sealerKey(scope);
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    /** The application name of the session holding the scope's sealer claim, if any. */
    const holder = async (): Promise<string | null> => {
      const r = await admin.query<{ app: string }>(
        "SELECT a.application_name AS app FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid " +
          "WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND l.classid::bigint = $1 AND l.objid::bigint = $2 AND l.objsubid = 2",
        [k1 >>> 0, k2 >>> 0],
      );
      return r.rows[0]?.app ?? null;
    };
    const ids: string[] = [];
    const writeOne = async (): Promise<void> => {
      const id = `one-sealer-${ids.length}`;
      ids.push(id);
      await store.transact((tx) => appendJournal(tx, crypto, scope, [draft(id, Date.now())]));
    };
    const sealedAll = async (what: string): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while ((await store.transact((tx) => tx.listUnsealed(scope))).length > 0) {
        if (Date.now() > deadline) throw new Error(`${what}: not sealed within 20 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const readsOf = (c: ReturnType<typeof spawnChild>): number => Math.max(0, ...c.lines.flatMap((l) => (typeof l === "object" && l !== null && "reads" in l ? [Number(l.reads)] : [])));
    const a = spawnChild("seal-holder", { ...env, WRIT_SEAL_APP: "writ-seal-a", WRIT_SEAL_BOUND: "1000" }, SEAL_CHILD);
    let b: ReturnType<typeof spawnChild> | null = null;
    try {
      await a.waitForLine((l) => typeof l === "object" && l !== null && "ready" in l, 60_000, "sequencer a");
      await writeOne();
      await sealedAll("the first entry");
      expect(await holder()).toBe("writ-seal-a");
      b = spawnChild("seal-other", { ...env, WRIT_SEAL_APP: "writ-seal-b", WRIT_SEAL_BOUND: "8000" }, SEAL_CHILD);
      // An entry a second while b starts, so that a's claim is never idle long enough to be given up.
      let starting = true;
      const keepBusy = (async () => {
        while (starting) {
          await writeOne();
          await new Promise((r) => setTimeout(r, 1_000));
        }
      })();
      await b.waitForLine((l) => typeof l === "object" && l !== null && "ready" in l, 60_000, "sequencer b").finally(() => (starting = false));
      await keepBusy;
      // Entries across several of b's polls (every 2 s): with the claim logic gone, b would find
      // some of them unsealed and seal them.
      for (let i = 0; i < 20; i++) {
        await writeOne();
        await new Promise((r) => setTimeout(r, 250));
      }
      await sealedAll("entries while the holder lives");
      expect(readsOf(b)).toBe(0); // b left the scope to a
      expect(readsOf(a)).toBeGreaterThan(0);
      expect(await holder()).toBe("writ-seal-a");

      await killChild(a);
      for (let i = 0; i < 3; i++) await writeOne();
      await sealedAll("entries after the holder died");
      expect(readsOf(b)).toBeGreaterThan(0);
      const deadline = Date.now() + 20_000;
      while ((await holder()) !== "writ-seal-b") {
        if (Date.now() > deadline) throw new Error("b did not take the claim over within 20 s");
        await new Promise((r) => setTimeout(r, 100));
      }
      const entries = await readWholeJournal(store, scope);
      expect(entries.map((e) => e.id).sort()).toEqual([...ids].sort());
      expect(entries.map((e) => e.seq)).toEqual(ids.map((_, i) => i + 1));
      expect(await verifyStoredJournal(store, crypto, keyring, scope, { now: Date.now(), sealWithinMs: 8_000 })).toMatchObject({ ok: true, entries: ids.length, unsealed: 0 });
    } finally {
      await admin.end().catch(() => undefined);
      if (a.alive()) await killChild(a);
      if (b?.alive()) await killChild(b);
    }
  }, 120_000);

  // S5
  it("a claims connection that is lost takes its claims with it; the next poll claims again on a new one", async () => {
    const store = open();
    const scope = newScope();
    const seq = sequencerFor(store, crypto);
    const stop = seq.start({ clock: systemClock, sealWithinMs: 200 });
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    const [k1, k2] = sealerKey(scope);
    const holderPid = async (): Promise<number | null> =>
      (
        await admin.query<{ pid: number }>(
          "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND l.classid::bigint = $1 AND l.objid::bigint = $2 AND l.objsubid = 2",
          [k1 >>> 0, k2 >>> 0],
        )
      ).rows[0]?.pid ?? null;
    const sealedSoon = async (what: string): Promise<void> => {
      const deadline = Date.now() + 20_000;
      while ((await store.transact((tx) => tx.listUnsealed(scope))).length > 0) {
        if (Date.now() > deadline) throw new Error(`${what}: not sealed within 20 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    try {
      await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("c1", Date.now())]));
      await sealedSoon("before the loss");
      const first = await holderPid();
      expect(first).not.toBeNull();
      expect(store.journalSealers!.holds(scope)).toBe(true);
      await admin.query("SELECT pg_terminate_backend($1)", [first]);
      // Told by the connection's end: the claim goes at once. Checked at every turn of the event loop,
      // since the next poll may claim the scope again on a new connection tens of ms later (checks
      // 20 ms apart missed that window now and then).
      const until = Date.now() + 2_000;
      while (store.journalSealers!.holds(scope) && Date.now() < until) await new Promise((r) => setImmediate(r));
      expect(store.journalSealers!.holds(scope)).toBe(false);
      await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("c2", Date.now())]));
      await sealedSoon("after the loss");
      const second = await holderPid();
      expect(second).not.toBeNull();
      expect(second).not.toBe(first);
      expect(store.journalSealers!.holds(scope)).toBe(true);
      expect((await readWholeJournal(store, scope)).map((e) => e.id)).toEqual(["c1", "c2"]);
    } finally {
      await stop();
      await admin.end().catch(() => undefined);
    }
  });
});
