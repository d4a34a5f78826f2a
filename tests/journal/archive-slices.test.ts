/**
 * The archiver works on a segment a slice at a time (docs/archives.md, "A pass beside the worker"):
 * it verifies, encodes and compares `SLICE_ENTRIES` entries, then yields (`breathe`) so a host's
 * event loop serves its claims in between. Invariants:
 * - The bytes written are exactly the one-piece format (`encodeSegment`), whatever the slicing, and
 *   they decode to the database's entries.
 * - The directory target, whose file operations now interleave: concurrent puts of one name each
 *   resolve and leave exactly one of the puts' bytes and no temporary file; a put that cannot
 *   write rejects naming the path and leaves nothing.
 * - Slicing judges the chain as a whole would: an edited entry and a missing one are refused at a
 *   slice's first entry, its last and inside one, naming the problem's kind, and the
 *   refusal archives nothing (no segment in the target, the watermark unmoved).
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  appendJournal,
  archiveScope,
  createKeyring,
  directoryArchive,
  generateSigningKey,
  nodeCryptoPort,
  readWholeJournal,
  sealJournalNow,
  type Clock,
  type JournalEntry,
  type Scope,
  type Store,
  type StoreTx,
} from "../../src/index.js";
import { decodeSegment, encodeSegment, memoryArchive } from "../../src/core/archive-format.js";
import { SLICE_ENTRIES } from "../../src/core/archiver.js";
import { memoryStore } from "../../src/stores/memory/index.js";

const crypto = nodeCryptoPort();
const T0 = 1_767_225_600_000;
const clock: Clock = { now: () => T0 + 60_000, setTimer: () => () => undefined };
const key = generateSigningKey({ kid: "slice-key" });
const ring = () => createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const A: Scope = { tenantId: "tenant-a", spaceId: "space-1" };
// Three slices and a part: the boundaries at SLICE_ENTRIES and 2 * SLICE_ENTRIES.
const N = SLICE_ENTRIES * 3 + 17;

async function filled(): Promise<Store> {
  const store = memoryStore();
  await store.migrate();
  const drafts = Array.from({ length: N }, (_, k) => ({ id: `e-${k + 1}`, type: "test.entry", at: T0 + k, refs: { n: String(k + 1) }, data: { i: k + 1, text: "é".repeat(k % 7) } }));
  await store.transact((tx) => appendJournal(tx, crypto, A, drafts));
  await sealJournalNow(store, A, { crypto });
  return store;
}

/** The store, its journal reads passed through `edit` (a database whose rows were tampered with). */
function tampered(store: Store, edit: (entries: JournalEntry[]) => JournalEntry[]): Store {
  const wrapTx = (tx: StoreTx): StoreTx =>
    new Proxy(tx, {
      get(t, k) {
        if (k === "readJournal") return async (...a: Parameters<StoreTx["readJournal"]>) => edit(await t.readJournal(...a));
        const v = (t as unknown as Record<PropertyKey, unknown>)[k];
        return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(t) : v;
      },
    });
  return new Proxy(store, {
    get(s, k) {
      if (k === "transact") return <T>(fn: (tx: StoreTx) => Promise<T>) => s.transact((tx) => fn(wrapTx(tx)));
      if (k === "read") return s.read === undefined ? undefined : <T>(fn: (tx: StoreTx) => Promise<T>) => s.read!((tx) => fn(wrapTx(tx)));
      const v = (s as unknown as Record<PropertyKey, unknown>)[k];
      return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(s) : v;
    },
  });
}

describe("the archiver's slices", () => {
  it("write exactly the one-piece format, yielding between slices", async () => {
    const store = await filled();
    const target = memoryArchive();
    let breaths = 0;
    const run = await archiveScope(store, A, { target, crypto, keyring: ring(), signingKey: key, clock, segmentEntries: N, prune: false, breathe: async () => void breaths++ });
    expect(run.segments.map((s) => [s.fromSeq, s.throughSeq])).toEqual([[1, N]]);
    // Four slices: verifying yields before each one after the first (3), encoding before each (4);
    // the comparison yields per megabyte, and this segment is smaller.
    expect(breaths).toBe(3 + 4);
    const [name] = [...target.objects.keys()];
    const bytes = target.objects.get(name!)!;
    const seg = decodeSegment(bytes, name!);
    expect(new TextDecoder().decode(bytes)).toBe(encodeSegment(seg.header, seg.entries));
    expect(seg.entries).toEqual(await readWholeJournal(store, A));
    expect(bytes.length).toBe(run.segments[0]!.bytes);
  });

  const cases: Array<{ name: string; kind: string; edit: (es: JournalEntry[]) => JournalEntry[] }> = [];
  for (const seq of [SLICE_ENTRIES + 1, 2 * SLICE_ENTRIES, SLICE_ENTRIES + 250]) {
    cases.push({ name: `an edited entry at seq ${seq}`, kind: "hash_mismatch", edit: (es) => es.map((e) => (e.seq === seq ? { ...e, data: { i: -1 } } : e)) });
    cases.push({ name: `a missing entry at seq ${seq}`, kind: "gap", edit: (es) => es.filter((e) => e.seq !== seq) });
  }
  for (const c of cases) {
    it(`refuse ${c.name} (${c.kind}) and archive nothing`, async () => {
      const store = await filled();
      const target = memoryArchive();
      const bad = tampered(store, c.edit);
      const err = await archiveScope(bad, A, { target, crypto, keyring: ring(), signingKey: key, clock, segmentEntries: N, prune: false, breathe: async () => undefined }).then(
        () => null,
        (e: unknown) => e as Error & { code?: string },
      );
      expect(err?.code).toBe("CONFLICT");
      expect(err?.message).toContain(`${c.kind}:`);
      expect(target.objects.size).toBe(0);
      expect(await store.transact((tx) => tx.journalArchivedThrough(A))).toBe(0);
    });
  }
});

describe("the directory archive target", () => {
  it("takes concurrent puts of one name whole, one of them, and leaves no temporary file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "writ-archive-dir-"));
    try {
      const target = directoryArchive(dir);
      const name = "t/s/0000000000000001-0000000000000002.jsonl";
      const bodies = Array.from({ length: 8 }, (_, i) => new TextEncoder().encode(`${String(i).repeat(200_000 + i)}\n`));
      await Promise.all(bodies.map((b) => target.put(name, b)));
      const got = await target.get(name);
      expect(got).not.toBeNull();
      expect(bodies.some((b) => b.length === got!.length && b.every((x, i) => x === got![i]))).toBe(true);
      expect(readdirSync(join(dir, "t", "s"))).toEqual(["0000000000000001-0000000000000002.jsonl"]);
      expect(await target.list("t/s/")).toEqual([name]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rejects a put it cannot write and leaves nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "writ-archive-dir-"));
    try {
      // The scope's folder is taken by a file: the put cannot create it.
      writeFileSync(join(dir, "t"), "not a folder");
      const target = directoryArchive(dir);
      await expect(target.put("t/s/0000000000000001-0000000000000001.jsonl", new Uint8Array([1]))).rejects.toThrow(/t/);
      expect(readdirSync(dir)).toEqual(["t"]);
      expect(await target.get("t/s/0000000000000001-0000000000000001.jsonl").catch(() => null)).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
