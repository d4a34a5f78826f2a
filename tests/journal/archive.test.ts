/**
 * Journal archives on every store (docs/archives.md). Invariants:
 * - Round trip: archiving writes each closed segment (through a signed checkpoint), moves the
 *   watermark only after the segment read back, prunes the database up to the watermark but never
 *   the head; the archives and the database verify as one chain, and the chain continues after a
 *   prune (new entries link to the kept head).
 * - Each tampering of the archive is named by verify with its stable kind and the segment: a
 *   missing, misplaced (reordered), edited, truncated or unreadable segment, a checkpoint whose
 *   signature fails; a tail cut below the last checkpoint is `truncated`; a segment behind the
 *   watermark that is gone is `segment_missing`.
 * - A notification subscription's cursor holds the prune.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendJournal,
  archiveScope,
  checkpointJournal,
  createKeyring,
  directoryArchive,
  generateSigningKey,
  nodeCryptoPort,
  readArchive,
  readWholeJournal,
  sealJournalNow,
  verifyArchivedChain,
  verifyJournalIn,
  type Clock,
  type JournalVerification,
  type Scope,
  type Store,
} from "../../src/index.js";
import { allStoreFactories } from "../helpers/stores.js";

const crypto = nodeCryptoPort();
const T0 = 1_767_225_600_000;
const clock: Clock = { now: () => T0 + 60_000, setTimer: () => () => undefined };
const key = generateSigningKey({ kid: "archive-key" });
const ring = () => createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const A: Scope = { tenantId: "tenant-a", spaceId: "space-1" };

async function append(store: Store, from: number, n: number): Promise<void> {
  const drafts = Array.from({ length: n }, (_, k) => ({ id: `e-${from + k}`, type: "test.entry", at: T0 + from + k, refs: { n: String(from + k) }, data: { i: from + k } }));
  await store.transact((tx) => appendJournal(tx, crypto, A, drafts));
  await sealJournalNow(store, A, { crypto });
}

function kindsOf(v: JournalVerification): string[] {
  return [...new Set(v.problems.map((p) => p.kind))].sort();
}

for (const factory of allStoreFactories()) {
  describe(`journal archives (${factory.name})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let dir: string;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
      dir = mkdtempSync(join(tmpdir(), "writ-archive-"));
    });
    afterAll(async () => {
      await cleanup();
      rmSync(dir, { recursive: true, force: true });
    });
    const archiveDir = () => join(dir, "archives");

    it("archives closed segments, prunes to the watermark but keeps the head, and verifies as one chain", async () => {
      const target = directoryArchive(archiveDir());
      await append(store, 1, 12);
      expect((await checkpointJournal(store, key, A, { clock, crypto }))?.seq).toBe(12);
      await append(store, 13, 28);
      expect((await checkpointJournal(store, key, A, { clock, crypto }))?.seq).toBe(40);
      await append(store, 41, 5);
      const run = await archiveScope(store, A, { target, crypto, keyring: ring(), segmentEntries: 15, pruneBatch: 7 });
      expect(run.segments.map((s) => [s.fromSeq, s.throughSeq, s.adopted])).toEqual([
        [1, 12, false],
        [13, 40, false],
      ]);
      expect(run).toMatchObject({ archivedThrough: 40, headSeq: 45, pruned: 40, firstLiveSeq: 41, heldBy: null });
      expect((await readWholeJournal(store, A)).map((e) => e.seq)).toEqual([41, 42, 43, 44, 45]);
      const whole = await verifyJournalIn(store, ring(), A, { archive: target, clock, crypto, sealWithinMs: 60_000 });
      expect(whole.problems).toEqual([]);
      expect(whole).toMatchObject({ ok: true, entries: 45, headSeq: 45, archive: { segments: 2, archivedThrough: 40, firstLiveSeq: 41 } });
      // Without the archive the database alone still verifies, from its first live entry.
      const live = await verifyJournalIn(store, ring(), A, { clock, crypto, sealWithinMs: 60_000 });
      expect(live).toMatchObject({ ok: true, entries: 5, headSeq: 45 });
      // The chain goes on from the kept head; a run with the signing key closes everything sealed.
      await append(store, 46, 4);
      const again = await archiveScope(store, A, { target, crypto, keyring: ring(), signingKey: key, clock });
      expect(again.segments.map((s) => [s.fromSeq, s.throughSeq])).toEqual([[41, 49]]);
      expect(again).toMatchObject({ archivedThrough: 49, headSeq: 49, pruned: 8, firstLiveSeq: 49, heldBy: "head" });
      const all = await verifyJournalIn(store, ring(), A, { archive: target, clock, crypto, sealWithinMs: 60_000 });
      expect(all.problems).toEqual([]);
      expect(all).toMatchObject({ ok: true, entries: 49, archive: { segments: 3, archivedThrough: 49, firstLiveSeq: 49 } });
      // Nothing more is closed: a run again does nothing.
      expect((await archiveScope(store, A, { target, crypto, keyring: ring() })).segments).toEqual([]);
    });

    describe("tampering is named", () => {
      const segFiles = (d: string): string[] => readdirSync(join(d, A.tenantId, A.spaceId)).sort().map((n) => join(d, A.tenantId, A.spaceId, n));
      async function verifyTampered(tamper: (files: string[], d: string) => void): Promise<JournalVerification> {
        const copy = mkdtempSync(join(tmpdir(), "writ-archive-t-"));
        try {
          cpSync(archiveDir(), copy, { recursive: true });
          tamper(segFiles(copy), copy);
          return await verifyJournalIn(store, ring(), A, { archive: directoryArchive(copy), clock, crypto, sealWithinMs: 60_000 });
        } finally {
          rmSync(copy, { recursive: true, force: true });
        }
      }
      const lines = (f: string): string[] => readFileSync(f, "utf8").trimEnd().split("\n");
      const write = (f: string, ls: string[]): void => writeFileSync(f, ls.join("\n") + "\n");

      it("a missing segment, in the middle, first or behind the watermark", async () => {
        const mid = await verifyTampered((f) => rmSync(f[1]!));
        expect(kindsOf(mid)).toEqual(["segment_missing"]);
        expect(mid.problems[0]).toMatchObject({ seq: 13 });
        const first = await verifyTampered((f) => rmSync(f[0]!));
        expect(kindsOf(first)).toEqual(["segment_missing"]);
        expect(first.problems[0]).toMatchObject({ seq: 1 });
        const last = await verifyTampered((f) => rmSync(f[2]!));
        expect(kindsOf(last)).toContain("segment_missing");
        expect(last.ok).toBe(false);
      });

      it("reordered segments (contents swapped) are misplaced", async () => {
        const v = await verifyTampered((f) => {
          const a = readFileSync(f[0]!);
          writeFileSync(f[0]!, readFileSync(f[1]!));
          writeFileSync(f[1]!, a);
        });
        expect(kindsOf(v)).toContain("segment_misplaced");
        expect(v.problems.filter((p) => p.kind === "segment_misplaced").map((p) => p.segment)).toHaveLength(2);
      });

      it("an edited entry names its segment", async () => {
        const v = await verifyTampered((f) => {
          const ls = lines(f[1]!);
          const e = JSON.parse(ls[3]!) as { data: unknown };
          e.data = { i: "edited" };
          ls[3] = JSON.stringify(e);
          write(f[1]!, ls);
        });
        expect(kindsOf(v)).toEqual(["hash_mismatch"]);
        expect(v.problems[0]!.segment).toMatch(/0000000000000013-0000000000000040\.jsonl$/);
      });

      it("a truncated segment, an unreadable one, a failing checkpoint signature", async () => {
        const cut = await verifyTampered((f) => write(f[1]!, lines(f[1]!).slice(0, -3)));
        expect(kindsOf(cut)).toContain("segment_truncated");
        const junk = await verifyTampered((f) => writeFileSync(f[0]!, "not json\n"));
        expect(kindsOf(junk)).toEqual(["segment_corrupt"]);
        const sig = await verifyTampered((f) => {
          const ls = lines(f[0]!);
          const h = JSON.parse(ls[0]!) as { checkpoints: Array<{ signature: string }> };
          const s = h.checkpoints[0]!.signature;
          h.checkpoints[0]!.signature = s.slice(0, -4) + (s.endsWith("AAAA") ? "BBBB" : "AAAA");
          ls[0] = JSON.stringify(h);
          write(f[0]!, ls);
        });
        expect(kindsOf(sig)).toEqual(["checkpoint_signature"]);
        expect(sig.problems[0]!.segment).toMatch(/0000000000000001-0000000000000012\.jsonl$/);
      });

      it("a tail cut below the last checkpoint", async () => {
        await append(store, 50, 3);
        await checkpointJournal(store, key, A, { clock, crypto });
        const target = directoryArchive(archiveDir());
        const live = await readWholeJournal(store, A);
        const [checkpoints, watermark] = await store.transact(async (tx) => [await tx.listCheckpoints(A), await tx.journalArchivedThrough(A)] as const);
        const whole = verifyArchivedChain(crypto, ring(), A, await readArchive(target, A), live, checkpoints, watermark);
        expect(whole.ok).toBe(true);
        const cut = verifyArchivedChain(crypto, ring(), A, await readArchive(target, A), live.slice(0, -2), checkpoints, watermark);
        expect(kindsOf(cut)).toEqual(["truncated"]);
        expect(cut.problems[0]).toMatchObject({ seq: 52 });
      });
    });

    it("a notification subscription's cursor holds the prune", async () => {
      const B: Scope = { tenantId: "tenant-b", spaceId: "space-1" };
      const target = directoryArchive(join(dir, "b"));
      const drafts = Array.from({ length: 10 }, (_, k) => ({ id: `b-${k}`, type: "test.entry", at: T0 + k, refs: {}, data: null }));
      await store.transact((tx) => appendJournal(tx, crypto, B, drafts));
      await sealJournalNow(store, B, { crypto });
      await store.transact(async (tx) => {
        await tx.putSubscription({ subscriptionId: "sub-b", tenantId: B.tenantId, url: "https://example.invalid/hook", events: ["invocation.succeeded"], format: "json", secret: "whsec_x", enabled: true, createdAt: T0, updatedAt: T0 } as never);
        await tx.putNotifyCursor("sub-b", B.spaceId, 4);
      });
      const run = await archiveScope(store, B, { target, crypto, keyring: ring(), signingKey: key, clock });
      expect(run).toMatchObject({ archivedThrough: 10, pruned: 4, firstLiveSeq: 5, heldBy: "notifications" });
      expect((await verifyJournalIn(store, ring(), B, { archive: target, clock, crypto, sealWithinMs: 60_000 })).ok).toBe(true);
    });
  });
}
