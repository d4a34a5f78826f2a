/**
 * A process SIGKILLed while archiving the journal (docs/archives.md, Crash safety). Real processes,
 * SQLite and PostgreSQL. Kill points in a child archiver (fixtures/archive-child.ts):
 * - after-put: the segment is written (renamed into place), the watermark not moved yet;
 * - mid-prune: the watermark moved and the first small prune batch committed.
 * Then an archiver in this process runs again.
 *
 * Invariants: nothing is lost (every entry sealed before the kill is in the archive or the
 * database, with its hash); the killed state already verifies as one chain; after the rerun the
 * watermark is at the head, the database holds only the head, the segment left by the dead process
 * was adopted (not written twice), and the archives plus the database verify.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { archiveScope, directoryArchive, nodeCryptoPort, readArchive, readWholeJournal, sealJournalNow, systemClock, verifyJournalIn } from "../../src/index.js";
import { reapChildren, spawnChild } from "./fixtures/children.js";
import { STORE_KINDS } from "./fixtures/hosting.js";
import { SCOPES, requestFor } from "./fixtures/scenario.js";
import { makeWorld } from "./fixtures/world.js";

afterAll(async () => expect(await reapChildren()).toBe(0));

const ARCHIVE_CHILD = new URL("./fixtures/archive-child.ts", import.meta.url).pathname;
const SCOPE = SCOPES[0]!;
const crypto = nodeCryptoPort();

for (const kind of STORE_KINDS) {
  describe(`journal archiving survives a SIGKILL (${kind})`, () => {
    for (const point of ["after-put", "mid-prune"] as const) {
      it(`killed ${point}: nothing lost, the chain verifies, a rerun finishes`, { timeout: 60_000 }, async () => {
        const world = await makeWorld(kind);
        const dir = mkdtempSync(join(tmpdir(), "writ-archive-kill-"));
        try {
          await world.submit([0, 2, 4].map((n) => requestFor(n, "idem1")));
          await world.rescue({ deadlineMs: 20_000 });
          await sealJournalNow(world.store);
          const before = await readWholeJournal(world.store, SCOPE);
          expect(before.length).toBeGreaterThan(6);
          const child = spawnChild(`archive-${point}`, { ...world.childEnv(`archive-${point}`), WRIT_ARCHIVE_KILL: point, WRIT_ARCHIVE_DIR: dir }, ARCHIVE_CHILD);
          const exit = await child.exited;
          expect(exit.signal, child.stderr()).toBe("SIGKILL");
          expect(child.lines).toContainEqual({ type: "dying", point });

          const target = directoryArchive(dir);
          const watermark = await world.store.transact((tx) => tx.journalArchivedThrough(SCOPE));
          const live = await readWholeJournal(world.store, SCOPE);
          if (point === "after-put") {
            expect(watermark).toBe(0);
            expect(live.length).toBe(before.length);
          } else {
            expect(watermark).toBe(before.length);
            expect(live.length).toBeLessThan(before.length);
            expect(live.length).toBeGreaterThan(1);
          }
          // Nothing lost: every entry is in the archive or the database, unchanged.
          const held = new Map<number, string>();
          for (const s of await readArchive(target, SCOPE)) if (s.ok) for (const e of s.segment.entries) held.set(e.seq, e.hash);
          for (const e of live) held.set(e.seq, e.hash);
          expect(before.every((e) => held.get(e.seq) === e.hash)).toBe(true);
          const mid = await verifyJournalIn(world.store, world.keyring, SCOPE, { archive: target, crypto, sealWithinMs: 60_000 });
          expect(mid.problems).toEqual([]);

          const run = await archiveScope(world.store, SCOPE, { target, crypto, keyring: world.keyring, signingKey: world.key, clock: systemClock });
          if (point === "after-put") expect(run.segments.map((s) => s.adopted)).toEqual([true]);
          expect(run).toMatchObject({ archivedThrough: before.length, firstLiveSeq: before.length });
          expect(readdirSync(join(dir, SCOPE.tenantId, SCOPE.spaceId))).toHaveLength(1);
          const after = await verifyJournalIn(world.store, world.keyring, SCOPE, { archive: target, crypto, sealWithinMs: 60_000 });
          expect(after.problems).toEqual([]);
          expect(after).toMatchObject({ ok: true, entries: before.length, headSeq: before.length });
        } finally {
          await world.close();
          rmSync(dir, { recursive: true, force: true });
        }
      });
    }
  });
}
