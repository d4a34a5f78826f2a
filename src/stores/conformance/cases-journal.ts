/** Conformance cases: the journal and its checkpoints. */
import assert from "node:assert/strict";
import type { JournalEntry } from "../../core/types.js";
import { assertRecord, plain, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { checkpoint, journalChain, journalEntry, newScope, T0, uid } from "./fixtures.js";

export const journalCases: StoreConformanceCase[] = [
  {
    // Invariant: the journal is append-only and gap-free per scope: an append must continue the
    // head (seq head + 1, + 2, …) with ids not present yet; a seq clash, a gap, an id clash (with
    // the journal or within the batch) is refused with CONFLICT and writes nothing of the batch.
    // Reads are ascending from fromSeq; journalIdsPresent reports the ids present.
    name: "journal: append continues the head; seq clash, gap and id clash are refused",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        await store.transact(async (tx) => {
          assert.equal(await tx.journalHead(scope), null);
          assert.deepStrictEqual(await tx.readJournal(scope), []);
          assert.equal((await tx.journalIdsPresent(scope, ["x"])).size, 0);
        });
        const chain = journalChain(scope, 3);
        const [e1, e2, e3] = chain as [JournalEntry, JournalEntry, JournalEntry];
        await store.transact((tx) => tx.insertJournal(scope, chain));
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 3, hash: e3.hash });
          assert.deepStrictEqual(plain(await tx.readJournal(scope)), plain(chain));
          assert.deepStrictEqual(plain(await tx.readJournal(scope, { fromSeq: 2 })), plain([e2, e3]));
          assert.deepStrictEqual(plain(await tx.readJournal(scope, { fromSeq: 2, limit: 1 })), plain([e2]));
          assert.deepStrictEqual(await tx.readJournal(scope, { fromSeq: 4 }), []);
          assert.deepStrictEqual([...(await tx.journalIdsPresent(scope, [e1.id, "missing", e3.id]))].sort(), [e1.id, e3.id].sort());
        });
        const refusals: Array<[string, JournalEntry[]]> = [
          ["seq clash", [journalEntry(scope, 3, e2.hash)]],
          ["restart at seq 1", [journalEntry(scope, 1, null)]],
          ["gap", [journalEntry(scope, 5, e3.hash)]],
          ["id clash with the journal", [journalEntry(scope, 4, e3.hash, { id: e1.id })]],
        ];
        const e4 = journalEntry(scope, 4, e3.hash);
        refusals.push(["id clash within the batch", [e4, journalEntry(scope, 5, e4.hash, { id: e4.id })]]);
        refusals.push(["gap inside the batch", [e4, journalEntry(scope, 6, e4.hash)]]);
        for (const [label, entries] of refusals) {
          await rejectsWithCode(
            store.transact((tx) => tx.insertJournal(scope, entries)),
            "CONFLICT",
            `journal append with ${label}`,
          );
        }
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 3, hash: e3.hash }, "refused appends wrote nothing");
          assert.equal((await tx.journalIdsPresent(scope, [e4.id])).size, 0, "refused batches wrote nothing");
        });
        await store.transact((tx) => tx.insertJournal(scope, [e4]));
        assertRecord((await store.transact((tx) => tx.readJournal(scope, { fromSeq: 4 })))[0], e4, "appended entry");
      });
    },
  },
  {
    // Invariant: 20 concurrent transactions that each lock the journal, read the head and append
    // the next entry leave one chain: seq 1..20 contiguous, no fork, each prevHash the previous
    // entry's hash, every entry written once.
    name: "journal: 20 concurrent appends leave no fork and no gap",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const written = await Promise.all(
          Array.from({ length: 20 }, () =>
            store.transact(async (tx) => {
              await tx.lock(scope, ["journal"]);
              const head = await tx.journalHead(scope);
              const e = journalEntry(scope, (head?.seq ?? 0) + 1, head?.hash ?? null);
              await tx.insertJournal(scope, [e]);
              return e.id;
            }),
          ),
        );
        const entries = await store.transact((tx) => tx.readJournal(scope));
        assert.deepStrictEqual(
          entries.map((e) => e.seq),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        let prev: string | null = null;
        for (const e of entries) {
          assert.equal(e.prevHash, prev, `entry ${e.seq} continues the chain`);
          prev = e.hash;
        }
        assert.deepStrictEqual(entries.map((e) => e.id).sort(), [...written].sort(), "every append is in the chain exactly once");
      });
    },
  },
  {
    // Invariant: checkpoints are stored as given and listed in seq order.
    name: "journal: checkpoints are stored and listed in seq order",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        assert.deepStrictEqual(await store.transact((tx) => tx.listCheckpoints(scope)), []);
        const cps = [checkpoint(scope, 5), checkpoint(scope, 2), checkpoint(scope, 9, { signature: uid("sig") })];
        await store.transact(async (tx) => {
          for (const cp of cps) await tx.insertCheckpoint(scope, cp);
        });
        const listed = await store.transact((tx) => tx.listCheckpoints(scope));
        assert.deepStrictEqual(plain(listed), plain([cps[1], cps[0], cps[2]]));
      });
    },
  },
  {
    // Invariant: the archive watermark starts at 0, moves only forward and never past the sealed
    // head; setting the same value again is a no-op; a refused move writes nothing; another scope's
    // watermark is its own; a rolled-back transaction leaves it where it was.
    name: "journal: the archive watermark moves forward only, up to the sealed head",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const other = newScope();
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(scope)), 0);
        await rejectsWithCode(store.transact((tx) => tx.setJournalArchivedThrough(scope, 1)), "CONFLICT", "a watermark past an empty journal");
        await store.transact((tx) => tx.insertJournal(scope, journalChain(scope, 4)));
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, 2));
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, 2));
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(scope)), 2);
        await rejectsWithCode(store.transact((tx) => tx.setJournalArchivedThrough(scope, 1)), "CONFLICT", "a watermark moved back");
        await rejectsWithCode(store.transact((tx) => tx.setJournalArchivedThrough(scope, 5)), "CONFLICT", "a watermark past the head");
        await rejectsWithCode(store.transact((tx) => tx.setJournalArchivedThrough(scope, 2.5)), "INVALID_ARGUMENT", "a fractional watermark");
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(scope)), 2, "refused moves wrote nothing");
        await assert.rejects(
          store.transact(async (tx) => {
            await tx.setJournalArchivedThrough(scope, 4);
            throw new Error("rolled back");
          }),
          /rolled back/,
        );
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(scope)), 2, "rolled back with its transaction");
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, 4));
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(scope)), 4);
        assert.equal(await store.transact((tx) => tx.journalArchivedThrough(other)), 0, "another scope's watermark");
      });
    },
  },
  {
    // Invariant: pruneJournal with writtenBefore deletes only the leading entries written before
    // it (at most `limit`): the first entry written at or after it stays, and every entry after it,
    // even an older one.
    name: "journal: prune with writtenBefore stops at the first entry written at or after it",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const chain = journalChain(scope, 8);
        chain[4]!.at = T0 + 100; // entry 5 is young; entry 6 (at T0 + 6) follows it
        await store.transact(async (tx) => {
          await tx.insertJournal(scope, chain);
          await tx.setJournalArchivedThrough(scope, 8);
        });
        const seqs = async (): Promise<number[]> => (await store.transact((tx) => tx.readJournal(scope))).map((e) => e.seq);
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 7, 2, T0 + 50)), 2, "a full batch of old entries");
        assert.deepStrictEqual(await seqs(), [3, 4, 5, 6, 7, 8]);
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 7, 10, T0 + 50)), 2, "up to the first young entry");
        assert.deepStrictEqual(await seqs(), [5, 6, 7, 8]);
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 7, 10, T0 + 50)), 0, "the young entry stays, and the older one after it");
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 7, 10, T0 + 101)), 3, "past it, all up to throughSeq");
        assert.deepStrictEqual(await seqs(), [8]);
      });
    },
  },
  {
    // Invariant: pruneJournal deletes the lowest live sealed entries, at most `limit` a call, only
    // at or below the archive watermark and never the sealed head (CONFLICT, nothing deleted);
    // reads then start at the first live seq, the head stays, and both appends and seals continue
    // the chain from it; a rolled-back prune deletes nothing; unsealed entries and checkpoints stay.
    name: "journal: prune deletes archived entries in bounded batches and keeps the head",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const chain = journalChain(scope, 6);
        await store.transact(async (tx) => {
          await tx.insertJournal(scope, chain);
          await tx.insertCheckpoint(scope, checkpoint(scope, 3));
          await tx.setJournalArchivedThrough(scope, 4);
        });
        const seqs = async (): Promise<number[]> => (await store.transact((tx) => tx.readJournal(scope))).map((e) => e.seq);
        await rejectsWithCode(store.transact((tx) => tx.pruneJournal(scope, 5, 10)), "CONFLICT", "a prune above the watermark");
        await store.transact((tx) => tx.setJournalArchivedThrough(scope, 6));
        await rejectsWithCode(store.transact((tx) => tx.pruneJournal(scope, 6, 10)), "CONFLICT", "a prune of the sealed head");
        await rejectsWithCode(store.transact((tx) => tx.pruneJournal(scope, 5, 0)), "INVALID_ARGUMENT", "a prune of no entries");
        assert.deepStrictEqual(await seqs(), [1, 2, 3, 4, 5, 6], "refused prunes deleted nothing");
        await assert.rejects(
          store.transact(async (tx) => {
            assert.equal(await tx.pruneJournal(scope, 5, 10), 5);
            throw new Error("rolled back");
          }),
          /rolled back/,
        );
        assert.deepStrictEqual(await seqs(), [1, 2, 3, 4, 5, 6], "a rolled-back prune deleted nothing");
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 5, 2)), 2, "one bounded batch");
        assert.deepStrictEqual(await seqs(), [3, 4, 5, 6]);
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 5, 100)), 3);
        assert.equal(await store.transact((tx) => tx.pruneJournal(scope, 5, 100)), 0, "nothing left to prune");
        const e6 = chain[5]!;
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 6, hash: e6.hash }, "the head is kept");
          assert.deepStrictEqual(plain(await tx.readJournal(scope, { fromSeq: 1 })), plain([e6]), "reads start at the first live seq");
          assert.deepStrictEqual(plain(await tx.readJournal(scope, { fromSeq: 6 })), plain([e6]));
          assert.equal((await tx.journalIdsPresent(scope, [chain[0]!.id, e6.id])).size, 1, "a pruned entry's id is gone");
          assert.equal((await tx.listCheckpoints(scope)).length, 1, "checkpoints are kept");
          assert.deepStrictEqual(await tx.journalHeads(scope.tenantId), [{ spaceId: scope.spaceId, seq: 6 }]);
        });
        // The chain continues from the kept head: an append, then a seal of an unsealed entry.
        const more = journalChain(scope, 1, { seq: 6, hash: e6.hash });
        await store.transact((tx) => tx.insertJournal(scope, more));
        const u = { ...scope, id: uid("u"), at: 1, type: "test.unsealed", refs: {}, data: null };
        await store.transact((tx) => tx.insertUnsealed(scope, [u]));
        await store.transact((tx) => tx.sealJournal(scope, [{ ...u, seq: 8, prevHash: more[0]!.hash, hash: uid("hash") }]));
        await rejectsWithCode(store.transact((tx) => tx.insertJournal(scope, [journalEntry(scope, 7, e6.hash)])), "CONFLICT", "a seq below the head after a prune");
        assert.deepStrictEqual(await seqs(), [6, 7, 8]);
        assert.equal((await store.transact((tx) => tx.journalHead(scope)))?.seq, 8);
      });
    },
  },
  {
    // Invariant: journalScopes lists the scopes with a sealed journal in (tenantId, spaceId) order,
    // pages after a given scope, and reports each one's head, first live entry (after a prune too)
    // and archive watermark; a scope with only unsealed entries is not listed.
    name: "journal: journalScopes lists sealed journals with head, first live entry and watermark",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const tenantId = uid("t");
        const a = { tenantId, spaceId: "a" };
        const b = { tenantId, spaceId: "b" };
        const c = { tenantId, spaceId: "c" };
        const ca = journalChain(a, 3);
        await store.transact(async (tx) => {
          await tx.insertJournal(a, ca);
          await tx.insertJournal(c, journalChain(c, 1));
          await tx.insertUnsealed(b, [{ ...b, id: uid("u"), at: 1, type: "test.unsealed", refs: {}, data: null }]);
          await tx.setJournalArchivedThrough(a, 2);
        });
        await store.transact((tx) => tx.pruneJournal(a, 2, 10));
        const mine = async (after?: { tenantId: string; spaceId: string }, limit = 1000) =>
          (await store.transact((tx) => tx.journalScopes(limit, after))).filter((s) => s.tenantId === tenantId);
        assert.deepStrictEqual(await mine(), [
          { tenantId, spaceId: "a", headSeq: 3, firstSeq: 3, firstAt: ca[2]!.at, archivedThrough: 2 },
          { tenantId, spaceId: "c", headSeq: 1, firstSeq: 1, firstAt: journalChain(c, 1)[0]!.at, archivedThrough: 0 },
        ]);
        assert.deepStrictEqual((await mine(a)).map((s) => s.spaceId), ["c"], "paged after a");
        const firstPage = await store.transact((tx) => tx.journalScopes(1));
        assert.equal(firstPage.length, 1, "the limit holds");
      });
    },
  },
];
