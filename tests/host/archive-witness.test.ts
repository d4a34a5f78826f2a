/**
 * The archiver publishes checkpoints to witnesses (docs/archives.md, Checkpoint witnesses).
 * Invariants: a host configured with a file witness and an HTTP witness archives, and both hold
 * each checkpoint it signed (counted in the metrics); the chain then agrees with them, and a
 * history rewritten and re-signed with the same key is `witness_mismatch` against each; an
 * unreachable HTTP witness leaves the background archiver archiving, is counted each pass, logged
 * once per outage without the token in its URL, and is shown the checkpoints it missed once it
 * answers; bad witness options are refused naming the option.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { memoryArchive } from "../../src/core/archive-format.js";
import { checkConfig } from "../../src/config/define-config.js";
import {
  appendJournal,
  askWitnesses,
  createHost,
  createKeyring,
  fileWitness,
  generateSigningKey,
  httpWitness,
  memoryStore,
  nodeCryptoPort,
  readArchive,
  sealJournalNow,
  verifyArchivedChain,
  witnessProblems,
  type CheckpointWitness,
  type Scope,
  type Store,
} from "../../src/index.js";
import { metricsFor } from "../../src/server/metrics.js";
import { memoryLogger } from "../server/fixture.js";
import { until } from "../helpers/wait.js";
import { witnessServer } from "../helpers/witness-server.js";

const crypto = nodeCryptoPort();
const S: Scope = { tenantId: "t1", spaceId: "s1" };
const key = generateSigningKey({ kid: "archiver-key" });
const ring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
const policy = { evaluate: () => ({ result: "deny", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] } as never;

async function seed(store: Store, tag: string, n: number): Promise<void> {
  const drafts = Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, type: "test.entry", at: Date.now(), refs: {}, data: { tag, i } }));
  await store.transact((tx) => appendJournal(tx, crypto, S, drafts));
  await sealJournalNow(store, S, { crypto });
}

/** What the witnesses say about the chain in `store` and its archive (the archives and the database as one). */
async function findings(store: Store, archive: ReturnType<typeof memoryArchive>, witnesses: CheckpointWitness[]) {
  const [entries, checkpoints, watermark] = await store.transact(async (tx) => [await tx.readJournal(S, { limit: 10_000 }), await tx.listCheckpoints(S), await tx.journalArchivedThrough(S)] as const);
  const segments = await readArchive(archive, S);
  const chain = verifyArchivedChain(crypto, ring, S, segments, entries, checkpoints, watermark);
  expect(chain.problems).toEqual([]);
  const hashes = new Map<number, string>();
  for (const s of segments) if (s.ok) for (const e of s.segment.entries) hashes.set(e.seq, e.hash);
  for (const e of entries) hashes.set(e.seq, e.hash);
  return witnessProblems(crypto, ring, S, hashes, chain.headSeq, await askWitnesses(witnesses, S));
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "writ-archive-witness-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the archiver publishes checkpoints to witnesses", () => {
  it("a file and an HTTP witness hold every checkpoint; a rewritten history is witness_mismatch", async () => {
    const w = witnessServer();
    const url = await w.listen();
    try {
      const file = fileWitness(join(dir, "honest.jsonl"));
      const http = httpWitness(url);
      const store = memoryStore();
      await store.migrate();
      const archive = memoryArchive();
      const host = createHost({ store, actions: [], connectors: [], policy, signingKey: key, archive: { target: archive, witnesses: [file, http], keepLiveMs: 0 } });
      await seed(store, "honest", 12);
      const [run] = await host.archive.runOnce();
      expect(run).toMatchObject({ archivedThrough: 12, witnesses: { published: 2, failed: [] } });
      expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([12]);
      expect(w.held.map((c) => c.seq)).toEqual([12]);

      // The next pass signs the new head and publishes that one; nothing is shown twice.
      await seed(store, "honest-more", 5);
      expect((await host.archive.runOnce())[0]).toMatchObject({ archivedThrough: 17, witnesses: { published: 2, failed: [] } });
      expect((await host.archive.runOnce())[0]).toMatchObject({ witnesses: { published: 0, failed: [] } });
      expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([12, 17]);
      expect(w.held.map((c) => c.seq)).toEqual([12, 17]);
      expect(host.archive.stats()).toMatchObject({ witnessPublished: 4, witnessFailures: 0 });
      const metrics = metricsFor(host).render();
      expect(metrics).toContain("writ_journal_witness_published_total 4");
      expect(metrics).toContain("writ_journal_witness_failures_total 0");
      expect(await findings(store, archive, [file, http])).toEqual([]);

      // The same key, another history (every hash consistent, freshly signed and archived): each witness names it.
      const forged = memoryStore();
      await forged.migrate();
      const forgedArchive = memoryArchive();
      const rewriter = createHost({ store: forged, actions: [], connectors: [], policy, signingKey: key, archive: { target: forgedArchive, keepLiveMs: 0 } });
      await seed(forged, "rewritten", 17);
      await rewriter.archive.runOnce();
      const found = await findings(forged, forgedArchive, [file, http]);
      expect(found.map((p) => [p.kind, p.witness, p.seq])).toEqual([
        ["witness_mismatch", file.name, 12],
        ["witness_mismatch", file.name, 17],
        ["witness_mismatch", http.name, 12],
        ["witness_mismatch", http.name, 17],
      ]);
      await store.close();
      await forged.close();
    } finally {
      await w.close();
    }
  });

  it("an unreachable HTTP witness: the background archiver goes on, the failure is counted and logged once, and it catches up", async () => {
    // A port nothing listens on yet; the witness comes up on it later.
    const w = witnessServer();
    const port = Number(new URL(await w.listen()).port);
    await w.close();
    const http = httpWitness(`http://127.0.0.1:${port}/witness?token=s3cret-token`);
    const file = fileWitness(join(dir, "beside.jsonl"));
    const store = memoryStore();
    await store.migrate();
    const log = memoryLogger();
    const host = createHost({ store, actions: [], connectors: [], policy, signingKey: key, logger: log, archive: { target: memoryArchive(), witnesses: [http, file], everyMs: 10, keepLiveMs: 0 } });
    await seed(store, "a", 6);
    const worker = host.worker({ pollMs: 20 });
    worker.start();
    try {
      await until(() => host.archive.stats().witnessFailures >= 1, "the first failed publication");
      // Archiving went on: the segment is written, the watermark moved, the file witness took it.
      expect(await store.transact((tx) => tx.journalArchivedThrough(S))).toBe(6);
      expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([6]);
      await seed(store, "b", 4);
      await until(() => host.archive.stats().entriesArchived === 10 && host.archive.stats().witnessFailures >= 3, "archiving on while the witness is down");
      expect((await file.checkpoints(S)).map((c) => c.seq)).toEqual([6, 10]);
      const failed = log.lines.filter((l) => l.includes("witness"));
      expect(failed).toHaveLength(1);
      expect(failed[0]).toContain(`http://127.0.0.1:${port}/witness`);
      expect(failed[0]).toContain("could not be reached");
      expect(log.lines.join("\n")).not.toContain("s3cret");
      expect(metricsFor(host).render()).toMatch(/writ_journal_witness_failures_total [1-9]/);

      // The witness comes up: the next pass shows it both checkpoints it missed, oldest first, and logs the recovery.
      await w.listen(port);
      await until(() => w.held.length === 2, "the witness caught up");
      expect(w.held.map((c) => c.seq)).toEqual([6, 10]);
      await until(() => log.lines.some((l) => l.includes("works again")), "the recovery logged");
    } finally {
      await worker.stop();
      await w.close();
      await store.close();
    }
  });

  it("bad witness options are refused naming the option", async () => {
    const store = memoryStore();
    await store.migrate();
    const base = { store, actions: [], connectors: [], policy, signingKey: key };
    const hostRefused = (archive: Parameters<typeof createHost>[0]["archive"]): unknown => {
      try {
        createHost({ ...base, archive });
      } catch (e) {
        return e;
      }
      throw new Error("accepted");
    };
    expect(hostRefused({ target: memoryArchive(), witnesses: [{ name: "x" } as never] })).toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("archive.witnesses[0] must be a CheckpointWitness") });
    expect(hostRefused({ target: memoryArchive(), witnesses: "w.jsonl" as never })).toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("archive.witnesses must be a list") });
    expect(hostRefused({ witnesses: [fileWitness(join(dir, "w.jsonl"))] })).toMatchObject({ code: "INVALID_OPTION", message: expect.stringContaining("archive.witnesses need archiving on") });
    await store.close();

    const config = { actions: [], connectors: [], policy: { cedar: { policies: "" } } };
    const refused = (archive: unknown): string => {
      try {
        checkConfig({ ...config, archive }, "writ.config.ts");
      } catch (e) {
        expect(e).toMatchObject({ code: "INVALID_OPTION" });
        return (e as Error).message;
      }
      throw new Error("accepted");
    };
    expect(refused({ witnesses: "w.jsonl" })).toContain("archive.witnesses must be a list");
    expect(refused({ witnesses: ["w.jsonl", "ftp://example.com/w"] })).toContain("archive.witnesses[1] must be a file path or an http(s) URL");
    expect(refused({ witnesses: [""] })).toContain("archive.witnesses[0] must be a file path or an http(s) URL");
    const creds = refused({ witnesses: ["https://user:hunter2@witness.example/cp"] });
    expect(creds).toContain("archive.witnesses[0] must not hold credentials");
    expect(creds).not.toContain("hunter2");
    expect(refused({ witnesses: [{ name: "half" }] })).toContain("archive.witnesses[0] must be a CheckpointWitness");
    expect(refused({ enabled: false, witnesses: ["w.jsonl"] })).toContain("archive.witnesses need archiving on");
    expect(() => checkConfig({ ...config, archive: { witnesses: ["w.jsonl", "file:/tmp/w.jsonl", "https://witness.example/cp?token=t", fileWitness(join(dir, "x.jsonl"))] } }, "writ.config.ts")).not.toThrow();
  });
});
