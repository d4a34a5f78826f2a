/**
 * The host's archiver (docs/archives.md). Invariants: `host.archive.runOnce()` archives every scope
 * with a sealed journal (signing a checkpoint of each head) and prunes it, counting bytes, entries,
 * segments and pruned entries for the metrics, with the lag and the oldest live entry as of the
 * pass; a started worker runs it on its own every `everyMs`; a host without a target archives
 * nothing and says so; a bad option is named.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { appendJournal, createHost, directoryArchive, generateSigningKey, memoryStore, nodeCryptoPort, sealJournalNow, type Scope, type Store } from "../../src/index.js";
import { metricsFor } from "../../src/server/metrics.js";
import { until, untilRead } from "../helpers/wait.js";

const crypto = nodeCryptoPort();
const S: Scope = { tenantId: "t1", spaceId: "s1" };
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function hostWith(store: Store, archive: Parameters<typeof createHost>[0]["archive"]) {
  return createHost({ store, actions: [], connectors: [], policy: { evaluate: () => ({ result: "deny", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] } as never, signingKey: generateSigningKey({ kid: "k1" }), ...(archive ? { archive } : {}) });
}

async function seed(store: Store, n: number, scope: Scope = S): Promise<void> {
  const drafts = Array.from({ length: n }, (_, i) => ({ id: `x-${i}`, type: "test.entry", at: Date.now(), refs: {}, data: { i } }));
  await store.transact((tx) => appendJournal(tx, crypto, scope, drafts));
  await sealJournalNow(store, scope, { crypto });
}

describe("host.archive", () => {
  it("archives every scope, prunes, and feeds the metrics", async () => {
    const store = memoryStore();
    await store.migrate();
    const dir = mkdtempSync(join(tmpdir(), "writ-host-archive-"));
    dirs.push(dir);
    const host = await hostWith(store, { target: directoryArchive(dir), keepLiveMs: 0 });
    await seed(store, 20);
    const runs = await host.archive.runOnce();
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ scope: S, archivedThrough: 20, pruned: 19, firstLiveSeq: 20 });
    const stats = host.archive.stats();
    expect(stats).toMatchObject({ entriesArchived: 20, segmentsWritten: 1, entriesPruned: 19, lag: 0 });
    expect(stats.bytesArchived).toBeGreaterThan(0);
    const text = metricsFor(host).render();
    expect(text).toContain(`writ_journal_archived_bytes_total ${stats.bytesArchived}`);
    expect(text).toContain("writ_journal_archive_lag_entries 0");
    expect(text).toMatch(/writ_journal_oldest_live_entry_age_seconds \d/);
    expect(readdirSync(join(dir, "t1", "s1"))).toHaveLength(1);
    await store.close();
  });

  // Invariant: one scope that cannot archive (here its segment writes fail) does not hold the
  // others back: they archive and prune in the same pass, and the pass then fails naming the scope.
  it("a scope that fails does not stop the others; the run names it", async () => {
    const store = memoryStore();
    await store.migrate();
    const dir = mkdtempSync(join(tmpdir(), "writ-host-archive-"));
    dirs.push(dir);
    const good = directoryArchive(dir);
    const broken = { ...good, put: async (name: string, data: Uint8Array) => (name.startsWith("t1/s1/") ? Promise.reject(new Error("disk full")) : good.put(name, data)) };
    const host = await hostWith(store, { target: broken, keepLiveMs: 0 });
    const other: Scope = { tenantId: "t1", spaceId: "s2" };
    await seed(store, 5);
    await seed(store, 7, other);
    await expect(host.archive.runOnce()).rejects.toThrow(/journal archiving failed for 1 of 2 scope\(s\), the others archived: t1\/s1: .*disk full/);
    expect(await store.transact((tx) => tx.journalArchivedThrough(other))).toBe(7);
    expect(await store.transact((tx) => tx.journalArchivedThrough(S))).toBe(0);
    expect(host.archive.stats()).toMatchObject({ entriesArchived: 7, segmentsWritten: 1, entriesPruned: 6, lag: 5 });
    await store.close();
  });

  // Invariant: stopping a worker ends its archiver's pass between prune batches instead of after
  // the backlog; what was pruned stays pruned and a later run prunes on from there.
  it("a worker's stop ends a long archive pass early; the next run goes on", async () => {
    const store = memoryStore();
    await store.migrate();
    const dir = mkdtempSync(join(tmpdir(), "writ-host-archive-"));
    dirs.push(dir);
    const host = await hostWith(store, { target: directoryArchive(dir), everyMs: 10, prunePauseMs: 50, pruneBatch: 1, keepLiveMs: 0 });
    await seed(store, 200); // 199 prune batches of one entry, 50 ms apart: about 10 s
    const worker = host.worker({ pollMs: 20 });
    worker.start();
    const firstLive = async (): Promise<number> => (await store.transact((tx) => tx.readJournal(S, { limit: 1 })))[0]!.seq;
    try {
      await untilRead(async () => (await firstLive()) >= 3, "the pass started pruning", 5000);
    } finally {
      await worker.stop();
    }
    const pruned = (await firstLive()) - 1;
    expect(pruned).toBeLessThan(199);
    expect(await store.transact((tx) => tx.journalArchivedThrough(S))).toBe(200);
    const [again] = await host.archive.runOnce();
    expect(again!.pruned).toBe(199 - pruned);
    expect(again!.firstLiveSeq).toBe(200);
    await store.close();
  });

  it("a started worker archives on its own; without a target nothing is archived", async () => {
    const store = memoryStore();
    await store.migrate();
    const dir = mkdtempSync(join(tmpdir(), "writ-host-archive-"));
    dirs.push(dir);
    const host = await hostWith(store, { target: directoryArchive(dir), everyMs: 20, prunePauseMs: 1, pruneBatch: 3, keepLiveMs: 0 });
    await seed(store, 10);
    const worker = host.worker({ pollMs: 20 });
    worker.start();
    try {
      await until(() => host.archive.stats().entriesPruned === 9, "the worker archived and pruned", 5000);
    } finally {
      await worker.stop();
    }
    expect(await store.transact((tx) => tx.journalArchivedThrough(S))).toBe(10);
    await store.close();

    const off = memoryStore();
    await off.migrate();
    const none = await hostWith(off, undefined);
    expect(none.archive.target).toBeNull();
    await expect(none.archive.runOnce()).rejects.toMatchObject({ code: "INVALID_OPTION" });
    await expect(hostWith(off, { everyMs: 0 })).rejects.toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("archive.everyMs") });

    // By default archived entries younger than 30 days stay in the database; keepLiveMs: 0 prunes them.
    const young = memoryStore();
    await young.migrate();
    const keptDir = mkdtempSync(join(tmpdir(), "writ-host-archive-"));
    dirs.push(keptDir);
    const kept = await hostWith(young, { target: directoryArchive(keptDir) });
    await seed(young, 5);
    expect((await kept.archive.runOnce())[0]).toMatchObject({ archivedThrough: 5, pruned: 0, firstLiveSeq: 1 });
    expect((await kept.archive.runOnce(undefined, { keepLiveMs: 0 }))[0]).toMatchObject({ pruned: 4, firstLiveSeq: 5 });
    await young.close();
    await off.close();
  });
});
