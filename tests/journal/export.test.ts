/**
 * The journal export writer (src/core/journal-export.ts; docs/archives.md, Offline verification).
 * Invariants: the text is the header line then the entries of the range it states, page by page;
 * an export of a pruned journal starts at its first live entry, with its checkpoints; entries
 * the archiver prunes after the header was read stop the export with `CONFLICT` (no file with a
 * hole); a bad fromSeq is refused.
 */
import { describe, expect, it } from "vitest";
import { memoryArchive } from "../../src/core/archive-format.js";
import { openJournalExport } from "../../src/core/journal-export.js";
import { appendJournal, archiveScope, createKeyring, generateSigningKey, memoryStore, nodeCryptoPort, sealJournalNow, type Scope, type Store } from "../../src/index.js";

const crypto = nodeCryptoPort();
const S: Scope = { tenantId: "t", spaceId: "s" };
const key = generateSigningKey({ kid: "export-key" });
const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const clock = { now: () => 1_767_225_600_000, setTimer: () => () => undefined };

async function journal(n: number): Promise<Store> {
  const store = memoryStore();
  await store.migrate();
  const drafts = Array.from({ length: n }, (_, i) => ({ id: `e-${i}`, type: "test.entry", at: 1, refs: {}, data: { i } }));
  await store.transact((tx) => appendJournal(tx, crypto, S, drafts));
  await sealJournalNow(store, S, { crypto });
  return store;
}

async function text(store: Store, fromSeq = 1, pageSize = 4): Promise<string> {
  let out = "";
  for await (const c of (await openJournalExport(store, keyring, S, fromSeq)).chunks(pageSize)) out += c.text;
  return out;
}

describe("openJournalExport", () => {
  it("writes the header, then the range page by page; a pruned journal exports from its first live entry", async () => {
    const store = await journal(10);
    const lines = (await text(store)).trimEnd().split("\n").map((l) => JSON.parse(l) as { seq?: number; hash?: string });
    expect(lines[0]).toMatchObject({ kind: "export", fromSeq: 1, throughSeq: 10, entries: 10, prevHash: null, checkpoints: [], keys: [] });
    expect(lines.slice(1).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    await archiveScope(store, S, { target: memoryArchive(), crypto, keyring, signingKey: key, clock, keepLiveMs: 0 });
    // The head stays; the export starts there, with the checkpoint the archiver signed and its key
    // (the entry before it is in the archive only: the header cannot state its hash).
    const live = (await text(store)).trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(live[0]).toMatchObject({ fromSeq: 10, throughSeq: 10, entries: 1, prevHash: null, checkpoints: [expect.objectContaining({ seq: 10 })], keys: [expect.objectContaining({ kid: key.kid })] });
    expect(live[1]).toMatchObject({ seq: 10, prevHash: lines[9]!.hash });
    expect(live).toHaveLength(2);
    await store.close();
  });

  it("stops with CONFLICT when the archiver prunes the range under it", async () => {
    const store = await journal(12);
    const exp = await openJournalExport(store, keyring, S);
    const chunks = exp.chunks(4);
    expect((await chunks.next()).value).toMatchObject({ entries: 0 });
    expect((await chunks.next()).value).toMatchObject({ entries: 4 });
    await archiveScope(store, S, { target: memoryArchive(), crypto, keyring, signingKey: key, clock, keepLiveMs: 0 });
    await expect(chunks.next()).rejects.toMatchObject({ code: "CONFLICT", message: expect.stringContaining("no longer holds seq 5") });
    await expect(openJournalExport(store, keyring, S, 0)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await store.close();
  });
});
