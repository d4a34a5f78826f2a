/**
 * Conformance cases: unsealed journal entries and their sealing (docs/journal.md). A transition
 * writes entries unsealed inside its own transaction; the sequencer later seals them under the
 * scope's journal lock. These cases hold every store to the same rules.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sealPending } from "../../core/journal.js";
import type { CryptoPort } from "../../core/ports.js";
import type { JournalEntry, Scope, UnsealedEntry } from "../../core/types.js";
import { CROSS_SCOPE_CODES, plain, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, journalEntry, newScope, uid } from "./fixtures.js";

/** Only what `sealPending` calls (SHA-256); the rest of the port is never reached here. */
const hashOnly: CryptoPort = {
  sha256: (data) => new Uint8Array(createHash("sha256").update(data).digest()),
  hmacSha256: () => {
    throw new Error("not used");
  },
  timingSafeEqual: () => false,
  generateEd25519: () => {
    throw new Error("not used");
  },
  signEd25519: () => {
    throw new Error("not used");
  },
  verifyEd25519: () => false,
};

function unsealed(scope: Scope, n: number, over: Partial<UnsealedEntry> = {}): UnsealedEntry {
  return { ...scope, id: uid("u"), at: T0 + n, type: "test.unsealed", refs: { n: String(n) }, data: { n, list: [1, "two", null] }, ...over };
}

/** `u` sealed at `seq` after `prevHash` (hash values are the caller's business; any string will do). */
function sealedAs(u: UnsealedEntry, seq: number, prevHash: string | null): JournalEntry {
  return { ...u, seq, prevHash, hash: uid("hash") };
}

/** Asserts `entries` is one chain from seq 1: contiguous, each linking to the one before. */
function assertOneChain(entries: readonly JournalEntry[], what: string): void {
  let prev: string | null = null;
  entries.forEach((e, i) => {
    assert.equal(e.seq, i + 1, `${what}: seq ${i + 1} in place`);
    assert.equal(e.prevHash, prev, `${what}: entry ${e.seq} links to the one before`);
    prev = e.hash;
  });
}

export const unsealedCases: StoreConformanceCase[] = [
  {
    // Invariant: an unsealed entry is stored at once and reported by listUnsealed (in the order
    // written) and journalIdsPresent, but never by readJournal or journalHead; an id already in
    // the scope (sealed, unsealed, or earlier in the batch) is skipped, not written twice.
    name: "journal: unsealed entries are stored, idempotent by id, and not part of the chain",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const [u1, u2, u3] = [unsealed(scope, 1), unsealed(scope, 2), unsealed(scope, 3)];
        assert.deepStrictEqual(await store.transact((tx) => tx.insertUnsealed(scope, [u1, u2, u1])), [u1.id, u2.id], "a repeat within the batch is skipped");
        assert.deepStrictEqual(await store.transact((tx) => tx.insertUnsealed(scope, [u2, u3])), [u3.id], "an id already unsealed is skipped");
        await store.transact(async (tx) => {
          assert.deepStrictEqual(plain(await tx.listUnsealed(scope)), plain([u1, u2, u3]));
          assert.deepStrictEqual(plain(await tx.listUnsealed(scope, { limit: 2 })), plain([u1, u2]));
          assert.deepStrictEqual([...(await tx.journalIdsPresent(scope, [u1.id, u3.id, "missing"]))].sort(), [u1.id, u3.id].sort());
          assert.deepStrictEqual(await tx.readJournal(scope), [], "unsealed entries are not read as chain entries");
          assert.equal(await tx.journalHead(scope), null, "nothing is sealed yet");
          const mine = (await tx.unsealedScopes(10_000)).filter((s) => s.tenantId === scope.tenantId && s.spaceId === scope.spaceId);
          assert.deepStrictEqual(mine, [{ ...scope, oldestAt: T0 + 1 }], "the scope is listed with its oldest unsealed entry");
        });
        await rejectsWithCode(store.transact((tx) => tx.insertJournal(scope, [journalEntry(scope, 1, null, { id: u2.id })])), "CONFLICT", "a sealed append reusing an unsealed id");
      });
    },
  },
  {
    // Invariant: sealJournal gives unsealed entries seqs that continue the sealed head, all or
    // nothing: a gap, a seq already sealed, an id that is sealed, unknown, or twice in the batch is
    // refused with CONFLICT and changes nothing. A sealed id is never written again unsealed.
    name: "journal: sealing continues the sealed head; a gap or an id that is not unsealed is refused",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const us = [1, 2, 3, 4].map((n) => unsealed(scope, n));
        const [u1, u2, u3, u4] = us as [UnsealedEntry, UnsealedEntry, UnsealedEntry, UnsealedEntry];
        await store.transact((tx) => tx.insertUnsealed(scope, us));
        const s1 = sealedAs(u1, 1, null);
        const s2 = sealedAs(u2, 2, s1.hash);
        await store.transact((tx) => tx.sealJournal(scope, [s1, s2]));
        await store.transact(async (tx) => {
          assert.deepStrictEqual(plain(await tx.readJournal(scope)), plain([s1, s2]));
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 2, hash: s2.hash });
          assert.deepStrictEqual(plain(await tx.listUnsealed(scope)), plain([u3, u4]), "sealed entries leave the unsealed list");
        });
        const refusals: Array<[string, JournalEntry[]]> = [
          ["a gap", [sealedAs(u3, 4, s2.hash)]],
          ["a seq already sealed", [sealedAs(u3, 2, s1.hash)]],
          ["an id already sealed", [sealedAs(u1, 3, s2.hash)]],
          ["an unknown id", [sealedAs(unsealed(scope, 9), 3, s2.hash)]],
          ["an id twice in the batch", [sealedAs(u3, 3, s2.hash), sealedAs(u3, 4, "x")]],
          ["a good entry then a bad one", [sealedAs(u3, 3, s2.hash), sealedAs(u1, 4, "x")]],
        ];
        for (const [label, entries] of refusals) {
          await rejectsWithCode(store.transact((tx) => tx.sealJournal(scope, entries)), "CONFLICT", `sealing with ${label}`);
        }
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.journalHead(scope), { seq: 2, hash: s2.hash }, "refused seals wrote nothing");
          assert.deepStrictEqual(plain(await tx.listUnsealed(scope)), plain([u3, u4]), "refused seals left the entries unsealed");
        });
        assert.deepStrictEqual(await store.transact((tx) => tx.insertUnsealed(scope, [u1, u2])), [], "a sealed id is not written again unsealed");
        assert.equal((await store.transact((tx) => tx.readJournal(scope))).length, 2);
      });
    },
  },
  {
    // Invariant: unsealed writes and seals roll back with their transaction.
    name: "journal: unsealed writes and seals roll back with their transaction",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const u1 = unsealed(scope, 1);
        await assert.rejects(
          store.transact(async (tx) => {
            await tx.insertUnsealed(scope, [u1]);
            throw new Error("roll back");
          }),
          /roll back/,
        );
        assert.deepStrictEqual(await store.transact((tx) => tx.listUnsealed(scope)), [], "a rolled-back unsealed write is gone");
        await store.transact((tx) => tx.insertUnsealed(scope, [u1]));
        await assert.rejects(
          store.transact(async (tx) => {
            await tx.sealJournal(scope, [sealedAs(u1, 1, null)]);
            throw new Error("roll back");
          }),
          /roll back/,
        );
        await store.transact(async (tx) => {
          assert.equal(await tx.journalHead(scope), null, "a rolled-back seal is gone");
          assert.deepStrictEqual(plain(await tx.listUnsealed(scope)), plain([u1]), "the entry is unsealed again");
        });
      });
    },
  },
  {
    // Invariant: unsealed entries stay in their scope: another scope neither lists nor seals
    // them, and an entry stamped with another scope is refused.
    name: "journal: unsealed entries are isolated by scope",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const a = newScope();
        const b = newScope();
        const u = unsealed(a, 1);
        await store.transact((tx) => tx.insertUnsealed(a, [u]));
        await store.transact(async (tx) => {
          assert.deepStrictEqual(await tx.listUnsealed(b), [], "unsealed entries across scopes");
          assert.equal((await tx.journalIdsPresent(b, [u.id])).size, 0, "unsealed ids across scopes");
        });
        await rejectsWithCode(store.transact((tx) => tx.insertUnsealed(b, [u])), CROSS_SCOPE_CODES, "an unsealed entry stamped with another scope");
        await rejectsWithCode(store.transact((tx) => tx.sealJournal(b, [sealedAs(u, 1, null)])), [...CROSS_SCOPE_CODES, "CONFLICT"], "sealing another scope's entry");
        await rejectsWithCode(store.transact((tx) => tx.sealJournal(b, [sealedAs({ ...u, ...b }, 1, null)])), "CONFLICT", "sealing an id that is unsealed only in another scope");
        assert.deepStrictEqual(await store.transact((tx) => tx.insertUnsealed(b, [{ ...u, ...b }])), [u.id], "the same id is free in another scope");
        assert.deepStrictEqual(plain(await store.transact((tx) => tx.listUnsealed(a))), plain([u]), "A's entry is untouched");
      });
    },
  },
  {
    // Invariant: 24 concurrent transitions write unsealed entries while 4 sequencer loops seal
    // the scope concurrently (each in its own transactions, under the journal lock): the result is
    // one chain, seq 1..N contiguous, no fork, and every entry sealed exactly once.
    name: "journal: concurrent writers and concurrent sequencers leave one chain, each entry sealed once",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const ids: string[] = [];
        let writing = true;
        const writers = Promise.all(
          Array.from({ length: 24 }, (_, i) =>
            store.transact(async (tx) => {
              const batch = [unsealed(scope, i), unsealed(scope, i)];
              ids.push(...batch.map((u) => u.id));
              await tx.insertUnsealed(scope, batch);
            }),
          ),
        ).finally(() => {
          writing = false;
        });
        const sequencers = Array.from({ length: 4 }, async () => {
          let sealed = 0;
          while (writing) sealed += await store.transact((tx) => sealPending(tx, hashOnly, scope, 5));
          return sealed;
        });
        await writers;
        const counts = await Promise.all(sequencers);
        let last = 0;
        do last = await store.transact((tx) => sealPending(tx, hashOnly, scope));
        while (last > 0);
        const entries = await store.transact((tx) => tx.readJournal(scope));
        assertOneChain(entries, "after concurrent sealing");
        assert.deepStrictEqual(entries.map((e) => e.id).sort(), [...ids].sort(), "every entry sealed exactly once");
        assert.ok(counts.reduce((x, y) => x + y, 0) <= ids.length, "no entry counted as sealed twice");
        assert.deepStrictEqual(await store.transact((tx) => tx.listUnsealed(scope)), []);
      });
    },
  },
];
