/**
 * Checkpoint witnesses (docs/archives.md, Checkpoint witnesses). Invariants: a checkpoint published
 * to a file witness and to an HTTP endpoint witness is read back from both; a journal that agrees
 * with what they hold verifies clean; a history rewritten and re-signed with the same key (every
 * hash and the database's checkpoints consistent) is named `witness_mismatch` by each witness; a
 * journal cut below a witnessed head is `witness_ahead`; a forged witnessed checkpoint is
 * `witness_invalid`; a witness that cannot be read is `witness_unreachable`.
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { askWitnesses, publishCheckpoint, witnessProblems, type CheckpointWitness } from "../../src/core/witness.js";
import { fileWitness, httpWitness } from "../../src/node/witness.js";
import { witnessServer } from "../helpers/witness-server.js";
import { appendJournal, checkpointJournal, createKeyring, generateSigningKey, memoryStore, nodeCryptoPort, readWholeJournal, sealJournalNow, type Scope, type Store } from "../../src/index.js";

const crypto = nodeCryptoPort();
const key = generateSigningKey({ kid: "witness-key" });
const ring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const S: Scope = { tenantId: "t", spaceId: "s" };
const clock = { now: () => 1_767_225_600_000, setTimer: () => () => undefined };

async function journal(tag: string, n: number): Promise<Store> {
  const store = memoryStore();
  await store.migrate();
  const drafts = Array.from({ length: n }, (_, i) => ({ id: `e-${i}`, type: "test.entry", at: 1, refs: {}, data: { tag, i } }));
  await store.transact((tx) => appendJournal(tx, crypto, S, drafts));
  await sealJournalNow(store, S, { crypto });
  return store;
}

async function findings(store: Store, witnesses: CheckpointWitness[]) {
  const entries = await readWholeJournal(store, S);
  const hashes = new Map(entries.map((e) => [e.seq, e.hash]));
  return witnessProblems(crypto, ring, S, hashes, entries[entries.length - 1]?.seq ?? 0, await askWitnesses(witnesses, S));
}

describe("checkpoint witnesses", () => {
  let dir: string;
  let url: string;
  const w = witnessServer();
  const held = w.held;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "writ-witness-"));
    url = await w.listen();
  });
  afterAll(async () => {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("names a rewritten history, a cut journal, a forged head and an unreachable witness", async () => {
    const file = fileWitness(join(dir, "w.jsonl"));
    const http = httpWitness(url);
    const honest = await journal("honest", 8);
    const cp = (await checkpointJournal(honest, key, S, { clock, crypto }))!;
    expect(await publishCheckpoint([file, http], cp)).toEqual([]);
    expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([8]);
    expect(held.map((c) => c.seq)).toEqual([8]);
    expect(await findings(honest, [file, http])).toEqual([]);

    // Rewritten with the same key: a consistent chain with its own fresh checkpoint.
    const rewritten = await journal("rewritten", 10);
    await checkpointJournal(rewritten, key, S, { clock, crypto });
    const rw = await findings(rewritten, [file, http]);
    expect(rw.map((p) => [p.kind, p.witness])).toEqual([
      ["witness_mismatch", file.name],
      ["witness_mismatch", http.name],
    ]);

    const cut = await journal("honest", 5);
    expect((await findings(cut, [file])).map((p) => p.kind)).toEqual(["witness_ahead"]);

    const forged = join(dir, "forged.jsonl");
    writeFileSync(forged, readFileSync(join(dir, "w.jsonl"), "utf8").replace(cp.headHash, "sha256:forged"));
    expect((await findings(honest, [fileWitness(forged)])).map((p) => p.kind)).toEqual(["witness_invalid"]);
    expect((await findings(honest, [httpWitness("http://127.0.0.1:1/none")])).map((p) => p.kind)).toEqual(["witness_unreachable"]);
    for (const s of [honest, rewritten, cut]) await s.close();
  });

  // Invariant: a process killed inside an append leaves a torn last line; the file witness reads
  // past it (that checkpoint was never taken) and the next append cuts it off first, so the
  // witness keeps working instead of failing on "not JSON" forever.
  it("a file witness survives an append cut short by a crash", async () => {
    const path = join(dir, "torn.jsonl");
    const file = fileWitness(path);
    const j = await journal("torn", 4);
    const cp = (await checkpointJournal(j, key, S, { clock, crypto }))!;
    await file.publish(cp);
    appendFileSync(path, JSON.stringify(cp).slice(0, 40)); // the crash: half a line, no newline
    expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([4]);
    await file.publish(cp);
    expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([4, 4]);
    expect(readFileSync(path, "utf8").split("\n")).toHaveLength(3); // two whole lines and the final "": the torn one is gone
    expect(await findings(j, [file])).toEqual([]);
    await j.close();
  });
});
