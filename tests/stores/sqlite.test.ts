/**
 * SQLite-specific behaviour: group commit (batching, isolation of a failing logical transaction,
 * acknowledgement only after the physical commit, commit failure), options, durability across
 * reopen, close. The Store contract itself is checked by the shared conformance suite.
 */
import Database from "better-sqlite3";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isWritError, WritError } from "../../src/core/errors.js";
import { appendJournal, readWholeJournal } from "../../src/core/journal.js";
import { sequencerFor } from "../../src/core/sequencer.js";
import type { StoreTx } from "../../src/core/store.js";
import { nodeCryptoPort } from "../../src/index.js";
import type { AttemptRecord, JournalEntry } from "../../src/core/types.js";
import { sqliteStore, type SqliteStore } from "../../src/stores/sqlite/index.js";
import { invocation, scopeA, TempDbs } from "./fixtures/sqlite-helpers.js";
import { beginInput, claimed } from "../../src/stores/conformance/cases-transitions.js";
import { newScope } from "../../src/stores/conformance/fixtures.js";
import { transitionsOf, type BatchMember } from "../../src/core/transitions.js";

const dbs = new TempDbs();
afterEach(() => dbs.cleanup());

/**
 * Group commit without the time limit, for tests that assert which transactions share a batch:
 * on a loaded machine the default 10 ms window could close a batch early.
 */
const untimed = { groupCommit: { maxBatchMs: 3_600_000 } };

function codeOf(r: PromiseSettledResult<unknown>): string | undefined {
  return r.status === "rejected" && isWritError(r.reason) ? r.reason.code : undefined;
}

async function ids(store: SqliteStore): Promise<string[]> {
  const list = await store.transact((tx) => tx.listInvocations(scopeA));
  return list.map((i) => i.invocationId).sort();
}

function insert(store: SqliteStore, id: string, action?: string): Promise<void> {
  return store.transact((tx) => tx.insertInvocation(scopeA, invocation(id, action === undefined ? {} : { action })));
}

/** Adds triggers that make SQLite fail on purpose: COMMIT (deferred foreign key) or the whole transaction (RAISE(ROLLBACK)). */
function addPoisonTriggers(path: string): void {
  const side = new Database(path);
  side.exec(`
    CREATE TABLE poison_parent (id INTEGER PRIMARY KEY);
    CREATE TABLE poison_child (parent INTEGER REFERENCES poison_parent (id) DEFERRABLE INITIALLY DEFERRED);
    CREATE TRIGGER poison_commit AFTER INSERT ON invocations WHEN NEW.action = 'poison.commit'
      BEGIN INSERT INTO poison_child VALUES (42); END;
    CREATE TRIGGER poison_rollback AFTER INSERT ON invocations WHEN NEW.action = 'poison.rollback'
      BEGIN SELECT RAISE(ROLLBACK, 'forced rollback of the whole transaction'); END;
  `);
  side.close();
}

describe("sqliteStore options", () => {
  it.each([
    [{ synchronous: "OFF" as never }, "synchronous"],
    [{ path: "" }, "path"],
    [{ groupCommit: { maxBatch: 0 } }, "groupCommit.maxBatch"],
    [{ groupCommit: { maxBatchMs: -1 } }, "groupCommit.maxBatchMs"],
    [{ groupCommit: "yes" as never }, "groupCommit"],
    [{ busyTimeoutMs: 1.5 }, "busyTimeoutMs"],
  ])("refuses %j with INVALID_OPTION naming the option", (opts, option) => {
    let err: unknown;
    try {
      sqliteStore({ path: ":memory:", ...opts });
    } catch (e) {
      err = e;
    }
    expect(isWritError(err, "INVALID_OPTION")).toBe(true);
    expect((err as WritError).details).toEqual({ option });
    expect((err as WritError).message).toContain(option);
  });

  it("defaults to .writ/writ.db (creating the directory) in WAL mode", async () => {
    const dir = mkdtempSync(join(tmpdir(), "writ-sqlite-cwd-"));
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const store = sqliteStore();
      expect(store.path).toBe(".writ/writ.db");
      await store.migrate();
      await store.close();
      expect(existsSync(join(dir, ".writ", "writ.db"))).toBe(true);
      const side = new Database(join(dir, ".writ", "writ.db"));
      expect(side.pragma("journal_mode", { simple: true })).toBe("wal");
      side.close();
    } finally {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("accepts every synchronous level and :memory:", async () => {
    for (const synchronous of ["NORMAL", "FULL", "EXTRA"] as const) {
      const store = dbs.track(sqliteStore({ path: ":memory:", synchronous }));
      await insert(store, `inv-${synchronous}`);
      expect(await ids(store)).toEqual([`inv-${synchronous}`]);
    }
  });
});

describe("group commit", () => {
  it("carries many concurrent logical transactions in few physical commits", async () => {
    const store = await dbs.open(untimed);
    await Promise.all(Array.from({ length: 100 }, (_, i) => insert(store, `inv-${String(i).padStart(3, "0")}`)));
    const stats = store.stats();
    expect(stats.logicalCommits).toBe(100);
    expect(stats.commits).toBeLessThanOrEqual(4);
    expect(stats.largestBatch).toBeGreaterThan(1);
    expect(stats.largestBatch).toBeLessThanOrEqual(64);
    expect((await ids(store)).length).toBe(100);
  });

  // Invariant: a batch of transitions (docs/stores.md, "Batches") rides one physical COMMIT on
  // SQLite, each member a logical transaction of its own: a member that fails (here a lost lease)
  // rolls back alone and the others commit together.
  it("one batch of eight begins is one physical commit; a member with a lost lease rolls back alone", async () => {
    const store = await dbs.open(untimed);
    const scope = newScope();
    const runs: Array<Awaited<ReturnType<typeof claimed>>> = [];
    for (let i = 0; i < 8; i++) runs.push(await claimed(store, scope));
    const members: BatchMember[] = runs.map((r, i) => ({ kind: "begin", scope, input: beginInput(scope, r.inv.invocationId, { fence: i === 5 ? { ...r.fence, token: "stale" } : r.fence }) }));
    const before = store.stats();
    const out = await transitionsOf(store).batch(members);
    const after = store.stats();
    expect(out.map((o) => o.ok)).toEqual([true, true, true, true, true, false, true, true]);
    expect(after.commits - before.commits).toBe(1);
    expect(after.logicalCommits - before.logicalCommits).toBe(7);
    expect(after.logicalRollbacks - before.logicalRollbacks).toBe(1);
    const started = await store.transact(async (tx) => Promise.all(runs.map(async (r) => (await tx.getSteps(scope, r.inv.invocationId)).length)));
    expect(started).toEqual([1, 1, 1, 1, 1, 0, 1, 1]);
  });

  it("commits each transaction alone with groupCommit: false", async () => {
    const store = await dbs.open({ groupCommit: false });
    await Promise.all(Array.from({ length: 20 }, (_, i) => insert(store, `inv-${i}`)));
    expect(store.stats()).toMatchObject({ commits: 20, logicalCommits: 20, largestBatch: 1 });
  });

  it("caps a batch at maxBatch", async () => {
    const store = await dbs.open({ groupCommit: { ...untimed.groupCommit, maxBatch: 10 } });
    await Promise.all(Array.from({ length: 50 }, (_, i) => insert(store, `inv-${i}`)));
    const stats = store.stats();
    expect(stats.largestBatch).toBe(10);
    expect(stats.commits).toBe(5);
  });

  it("closes a batch once maxBatchMs have passed since it began", async () => {
    const store = await dbs.open({ groupCommit: { maxBatchMs: 0 } });
    await Promise.all(Array.from({ length: 10 }, (_, i) => insert(store, `inv-${i}`)));
    expect(store.stats()).toMatchObject({ commits: 10, logicalCommits: 10, largestBatch: 1 });
  });

  it("acknowledges a transaction only after the physical commit of its whole batch", async () => {
    const store = await dbs.open(untimed);
    const commitsBefore = store.stats().commits;
    const events: string[] = [];
    await Promise.all(
      ["a", "b", "c"].map((id) =>
        store
          .transact(async (tx) => {
            events.push(`run ${id}`);
            await tx.insertInvocation(scopeA, invocation(id));
          })
          .then(() => events.push(`ack ${id} after ${store.stats().commits - commitsBefore} commit(s)`)),
      ),
    );
    expect(events).toEqual(["run a", "run b", "run c", "ack a after 1 commit(s)", "ack b after 1 commit(s)", "ack c after 1 commit(s)"]);
  });

  it("rolls back a failing logical transaction alone; its batch-mates commit", async () => {
    const store = await dbs.open(untimed);
    const boom = new Error("boom");
    const results = await Promise.allSettled([
      insert(store, "a"),
      store.transact(async (tx) => {
        await tx.insertInvocation(scopeA, invocation("b"));
        await tx.consumeDecision(scopeA, { ...scopeA, decisionId: "d-b", attemptId: "att-b", requestDigest: "x", consumedAt: 1 });
        throw boom;
      }),
      insert(store, "c"),
    ]);
    expect(store.stats()).toMatchObject({ commits: 1, logicalCommits: 2, logicalRollbacks: 1, largestBatch: 2 });
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBe(boom);
    expect(await ids(store)).toEqual(["a", "c"]);
    expect(await store.transact((tx) => tx.getConsumedDecision(scopeA, "d-b"))).toBeNull();
  });

  it("commits the rest of a batch whose first transaction failed", async () => {
    const store = await dbs.open(untimed);
    const results = await Promise.allSettled([
      store.transact(async (tx) => {
        await tx.insertInvocation(scopeA, invocation("x"));
        await tx.insertInvocation(scopeA, invocation("x")); // CONFLICT
      }),
      insert(store, "a"),
      insert(store, "b"),
    ]);
    expect(results.map(codeOf)).toEqual(["CONFLICT", undefined, undefined]);
    expect(await ids(store)).toEqual(["a", "b"]);
  });

  it("runs logical transactions strictly one after another even when they await", async () => {
    const store = await dbs.open();
    const authority = (n: number) => ({
      ...scopeA,
      authorityRef: "counter",
      principal: { type: "agent" as const, id: "a" },
      grantor: { type: "user" as const, id: "u" },
      actions: ["*"],
      constraints: { n },
      status: "active" as const,
      createdAt: 1,
      updatedAt: 1,
    });
    await store.transact((tx) => tx.putAuthority(scopeA, authority(0)));
    const bump = (tx: StoreTx) =>
      (async () => {
        const a = await tx.getAuthority(scopeA, "counter");
        await new Promise((r) => setTimeout(r, 2));
        await tx.putAuthority(scopeA, authority(((a?.constraints.n as number) ?? 0) + 1));
      })();
    await Promise.all(Array.from({ length: 10 }, () => store.transact(bump)));
    const final = await store.transact((tx) => tx.getAuthority(scopeA, "counter"));
    expect(final?.constraints.n).toBe(10);
  });

  it("rejects every transaction of a batch whose COMMIT fails, and keeps none of their writes", async () => {
    const store = await dbs.open(untimed);
    addPoisonTriggers(store.path);
    const commitsBefore = store.stats().commits;
    const results = await Promise.allSettled([insert(store, "a"), insert(store, "p", "poison.commit"), insert(store, "c")]);
    expect(results.map(codeOf)).toEqual(["STORE_ERROR", "STORE_ERROR", "STORE_ERROR"]);
    expect(store.stats().commits).toBe(commitsBefore);
    expect(await ids(store)).toEqual([]);
    await insert(store, "d");
    expect(await ids(store)).toEqual(["d"]);
  });

  it("without group commit, a failing COMMIT rejects only its own transaction", async () => {
    const store = await dbs.open({ groupCommit: false });
    addPoisonTriggers(store.path);
    const results = await Promise.allSettled([insert(store, "a"), insert(store, "p", "poison.commit"), insert(store, "c")]);
    expect(results.map(codeOf)).toEqual([undefined, "STORE_ERROR", undefined]);
    expect(await ids(store)).toEqual(["a", "c"]);
  });

  it("rejects the finished batch-mates when SQLite aborts the physical transaction itself", async () => {
    const store = await dbs.open(untimed);
    addPoisonTriggers(store.path);
    const results = await Promise.allSettled([insert(store, "a"), insert(store, "p", "poison.rollback"), insert(store, "c")]);
    expect(results.map(codeOf)).toEqual(["STORE_ERROR", "STORE_ERROR", undefined]);
    expect(await ids(store)).toEqual(["c"]);
  });
});

describe("group commit and the journal sequencer", () => {
  const drafts = (ids: string[]) => ids.map((id) => ({ id, type: "test.entry", at: 1, refs: {}, data: null }));
  const sealed = async (store: SqliteStore): Promise<Array<[number, string]>> => (await readWholeJournal(store, scopeA)).map((e) => [e.seq, e.id]);

  it("seals a batch's entries in the same COMMIT, and answers each caller after it", async () => {
    const store = await dbs.open(untimed);
    sequencerFor(store, nodeCryptoPort());
    const before = store.stats();
    const events: string[] = [];
    await Promise.all(
      ["a", "b", "c"].map((id) =>
        store
          .transact((tx) => appendJournal(tx, nodeCryptoPort(), scopeA, drafts([id])))
          .then(async () => events.push(`ack ${id}: ${store.stats().commits - before.commits} commit(s), unsealed ${(await store.transact((tx) => tx.listUnsealed(scopeA))).length}`)),
      ),
    );
    // Three transitions and one seal run share one physical COMMIT; every caller sees its entry sealed.
    expect(events).toEqual(["ack a: 1 commit(s), unsealed 0", "ack b: 1 commit(s), unsealed 0", "ack c: 1 commit(s), unsealed 0"]);
    expect(await sealed(store)).toEqual([
      [1, "a"],
      [2, "b"],
      [3, "c"],
    ]);
  });

  it("seals after the COMMIT when a limit ended the batch", async () => {
    const store = await dbs.open({ groupCommit: { ...untimed.groupCommit, maxBatch: 1 } });
    sequencerFor(store, nodeCryptoPort());
    const before = store.stats().commits;
    await store.transact((tx) => appendJournal(tx, nodeCryptoPort(), scopeA, drafts(["a"])));
    expect(store.stats().commits - before).toBe(2);
    expect(await sealed(store)).toEqual([[1, "a"]]);
  });

  it("seals nothing of a batch whose COMMIT failed; the entries of the next batch chain from the old head", async () => {
    const store = await dbs.open(untimed);
    const errors: unknown[] = [];
    sequencerFor(store, nodeCryptoPort(), (e) => errors.push(e));
    addPoisonTriggers(store.path);
    const results = await Promise.allSettled([
      store.transact((tx) => appendJournal(tx, nodeCryptoPort(), scopeA, drafts(["lost"]))),
      insert(store, "p", "poison.commit"),
    ]);
    expect(results.map(codeOf)).toEqual(["STORE_ERROR", "STORE_ERROR"]);
    await store.transact((tx) => appendJournal(tx, nodeCryptoPort(), scopeA, drafts(["kept"])));
    expect(await sealed(store)).toEqual([[1, "kept"]]);
    expect(await store.transact((tx) => tx.listUnsealed(scopeA))).toEqual([]);
  });
});

describe("read path", () => {
  // Invariant: Store.read answers from committed state on its own connection: it neither waits
  // for an open batch nor sees that batch's uncommitted writes, and it refuses to write.
  it("answers while a write transaction is open, without seeing its uncommitted writes", async () => {
    const store = await dbs.open(untimed);
    await insert(store, "committed");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    const writing = store.transact(async (tx) => {
      await tx.insertInvocation(scopeA, invocation("in-flight"));
      inside();
      await gate;
    });
    await entered;
    const seen = await store.read((tx) => tx.listInvocations(scopeA));
    expect(seen.map((i) => i.invocationId)).toEqual(["committed"]);
    release();
    await writing;
    expect((await store.read((tx) => tx.listInvocations(scopeA))).map((i) => i.invocationId).sort()).toEqual(["committed", "in-flight"]);
  });

  it("refuses writes", async () => {
    const store = await dbs.open();
    const [r] = await Promise.allSettled([store.read((tx) => tx.insertInvocation(scopeA, invocation("nope")))]);
    expect(codeOf(r)).toBe("STORE_ERROR");
    expect(await ids(store)).toEqual([]);
  });
});

describe("transactions", () => {
  it("queues writers of two stores over one file in one process instead of blocking on SQLite's lock", async () => {
    const path = dbs.path();
    // A busy timeout far shorter than the transactions below: only in-process queueing can pass.
    const a = dbs.track(sqliteStore({ path, busyTimeoutMs: 10 }));
    const b = dbs.track(sqliteStore({ path, busyTimeoutMs: 10 }));
    await Promise.all([a.migrate(), b.migrate()]);
    const slowInsert = (store: SqliteStore, id: string) =>
      store.transact(async (tx) => {
        await tx.insertInvocation(scopeA, invocation(id));
        await new Promise((r) => setTimeout(r, 30));
      });
    await Promise.all([slowInsert(a, "a1"), slowInsert(b, "b1"), slowInsert(a, "a2"), slowInsert(b, "b2")]);
    expect(await ids(a)).toEqual(["a1", "a2", "b1", "b2"]);
  });

  it("refuses use of a tx after its transaction ended", async () => {
    const store = await dbs.open();
    let leaked: StoreTx | undefined;
    await store.transact(async (tx) => {
      leaked = tx;
    });
    await expect(leaked?.getInvocation(scopeA, "a")).rejects.toMatchObject({ code: "INVALID_STATE" });
    await expect(leaked?.insertInvocation(scopeA, invocation("a"))).rejects.toMatchObject({ code: "INVALID_STATE" });
    expect(await ids(store)).toEqual([]);
  });

  it("migrates on the first transaction when migrate() was not called", async () => {
    const store = dbs.track(sqliteStore({ path: dbs.path() }));
    await insert(store, "a");
    expect(await ids(store)).toEqual(["a"]);
  });

  it("keeps documents and indexed columns consistent through claim and heartbeat", async () => {
    const store = await dbs.open();
    await insert(store, "a");
    const [claimed] = await store.transact((tx) => tx.claimInvocations({ owner: "w1", tokens: ["tok"], now: 2000, leaseMs: 100, limit: 1 }));
    expect(claimed).toMatchObject({ status: "running", leaseOwner: "w1", leaseToken: "tok", leaseExpiresAt: 2100, attemptCount: 1 });
    expect(await store.transact((tx) => tx.heartbeat("w1", 2050, 1000))).toBe(1);
    expect((await store.transact((tx) => tx.getInvocation(scopeA, "a")))?.leaseExpiresAt).toBe(3050);
    // The old expiry (2100) no longer makes it claimable: the column moved with the document.
    expect(await store.transact((tx) => tx.claimInvocations({ owner: "w2", tokens: ["t2"], now: 2200, leaseMs: 100, limit: 1 }))).toEqual([]);
    const [reclaimed] = await store.transact((tx) => tx.claimInvocations({ owner: "w2", tokens: ["t2"], now: 3050, leaseMs: 100, limit: 1 }));
    expect(reclaimed).toMatchObject({ leaseOwner: "w2", leaseToken: "t2", attemptCount: 2 });
  });

  it("wakes onWake listeners after a commit that made an invocation runnable", async () => {
    const store = await dbs.open();
    let wakes = 0;
    const off = store.onWake(() => wakes++);
    await store.transact((tx) => tx.insertInvocation(scopeA, invocation("r", { status: "running", leaseOwner: "w", leaseToken: "t", leaseExpiresAt: 1 })));
    expect(wakes).toBe(0);
    await insert(store, "q");
    expect(wakes).toBe(1);
    off();
    await insert(store, "q2");
    expect(wakes).toBe(1);
  });
});

describe("durability and close", () => {
  it("keeps every record across close and reopen, and continues sequences", async () => {
    const path = dbs.path();
    const first = sqliteStore({ path });
    const attempt: AttemptRecord = { ...scopeA, attemptId: "att-1", seq: 0, state: "SUCCEEDED", startedAt: 1 };
    const entry: JournalEntry = { ...scopeA, seq: 1, id: "j1", at: 1, type: "t", refs: {}, data: { x: 1 }, prevHash: null, hash: "h1" };
    await first.transact(async (tx) => {
      await tx.insertInvocation(scopeA, invocation("a"));
      expect(await tx.insertAttempt(scopeA, attempt)).toBe(1);
      await tx.insertJournal(scopeA, [entry]);
      await tx.putStep(scopeA, { ...scopeA, invocationId: "a", stepIndex: 0, stepName: "s", status: "succeeded", stepKey: "k", attemptId: "att-1", startedAt: 1 });
    });
    await first.close();

    const second = dbs.track(sqliteStore({ path }));
    await second.transact(async (tx) => {
      expect(await tx.getInvocation(scopeA, "a")).toEqual({ ...invocation("a"), rev: 1 });
      expect(await tx.getAttempt(scopeA, "att-1")).toEqual({ ...attempt, seq: 1 });
      expect(await tx.readJournal(scopeA)).toEqual([entry]);
      expect(await tx.journalHead(scopeA)).toEqual({ seq: 1, hash: "h1" });
      expect((await tx.getSteps(scopeA, "a")).map((s) => s.status)).toEqual(["succeeded"]);
      expect(await tx.insertAttempt(scopeA, { ...attempt, attemptId: "att-2" })).toBe(2);
    });
  });

  it("finishes transactions queued before close, then refuses with STORE_CLOSED", async () => {
    const store = await dbs.open();
    const pending = [insert(store, "a"), insert(store, "b")];
    const closing = store.close();
    expect(store.close()).toBe(closing);
    await Promise.all(pending);
    await closing;
    await expect(store.transact(async () => 1)).rejects.toMatchObject({ code: "STORE_CLOSED" });
    await expect(store.migrate()).rejects.toMatchObject({ code: "STORE_CLOSED" });
    await expect(store.schemaVersion()).rejects.toMatchObject({ code: "STORE_CLOSED" });
    const reopened = dbs.track(sqliteStore({ path: store.path }));
    expect(await ids(reopened)).toEqual(["a", "b"]);
  });
});
