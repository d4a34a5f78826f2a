/**
 * Crash durability of the boundary with real processes (issue "Durable stores"): a child process
 * runs boundary executions (8 at once, one- and two-step actions, every outcome, retries and
 * replays) on a durable store and reports each one after `execute()` resolved; the test SIGKILLs
 * it at a moment drawn from the seed, reopens the store and checks the invariants stated in
 * tests/crash/invariants.ts:
 *
 * (1) every execution reported committed is stored with the reported outcome, its idempotency
 *     record agreeing; reported checkpoints exist; nothing an earlier kill left changes; keys
 *     re-executed by a later child answer from what the killed one left;
 * (2) nothing half-written is visible: gap-free attempt numbers, consumption iff execution,
 *     idempotency records that match the latest execution of their key, in-flight executions
 *     (at most the child's concurrency per kill) exactly as their last whole transaction left
 *     them, settled ones with their step checkpoints, a journal holding exactly the entries the
 *     attempts imply with every ref pointing at an existing record;
 * (3) the journal of every scope verifies (chain and signed checkpoints).
 *
 * Three kills per store, each a fresh child on the same store (so later children start from what
 * a crash left). `tests/long/boundary-crash.long.test.ts` runs many more. Replay a run's choices
 * with WRIT_SEED=<seed> (printed); the kill moment is then the same count of reported executions.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { createKeyring, generateSigningKey } from "../../src/index.js";
import { pgServerOrNull } from "../helpers/pg.js";
import { SEED } from "../helpers/seed.js";
import { killAllChildren, liveChildren, spawnChild } from "./child.js";
import { crashCycles, type CycleSummary } from "./cycles.js";
import { checkCrash, takeSnapshot } from "./invariants.js";
import { onFreshPostgres, onTempSqlite, sqliteTarget } from "./targets.js";

const server = await pgServerOrNull();
const KILLS = 3;
/** About 20 s per store on an idle machine; generous, since a loaded one (CI) runs children slower. */
const TIMEOUT_MS = 180_000;

afterEach(async () => {
  await killAllChildren();
  expect(liveChildren()).toBe(0);
});

/** Every cycle ran and found nothing; the workload covered every outcome. */
function expectClean(summaries: CycleSummary[], kills: number): void {
  expect(summaries.map((s) => s.problems)).toEqual(Array.from({ length: kills }, () => []));
  const states = new Set(summaries.flatMap((s) => Object.keys(s.states)));
  for (const st of ["SUCCEEDED", "FAILED", "UNKNOWN", "HANDED_OFF", "DUPLICATE", "REFUSED"]) expect(states).toContain(st);
  // Every child after the first re-executed keys a killed one left behind.
  for (const s of summaries.slice(1)) expect(s.revisitsReported).toBeGreaterThan(0);
}

describe("boundary crash durability (real processes, SIGKILL)", () => {
  it(`sqlite (WAL, synchronous=FULL, group commit): ${KILLS} kills`, async () => {
    const summaries = await onTempSqlite((target) => crashCycles({ target, kills: KILLS, seed: SEED, reports: [200, 300], log: console.log }));
    expectClean(summaries, KILLS);
  }, TIMEOUT_MS);

  it.skipIf(server === null)(`postgres: ${KILLS} kills`, async () => {
    const summaries = await onFreshPostgres((target) => crashCycles({ target, kills: KILLS, seed: SEED, reports: [200, 300], log: console.log }));
    expectClean(summaries, KILLS);
  }, TIMEOUT_MS);

  // A check that cannot fail proves nothing: damage a crashed store in the ways the invariants
  // forbid and require each to be reported.
  it("the checks catch a lost report, a consumption without its attempt, a stale idempotency record and a broken journal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "writ-crash-"));
    const path = join(dir, "writ.db");
    const key = generateSigningKey({ kid: "crash-key" });
    const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
    try {
      const child = spawnChild({
        WRIT_CRASH_STORE: "sqlite",
        WRIT_CRASH_TARGET: path,
        WRIT_CRASH_RUN: "0",
        WRIT_CRASH_SEED: String(SEED),
        WRIT_CRASH_CONCURRENCY: "8",
        WRIT_CRASH_KEY: JSON.stringify(key),
        WRIT_CRASH_REVISIT: "[]",
      });
      try {
        await child.waitForReports(150, 60_000);
      } finally {
        await child.kill();
      }
      const base = sqliteTarget(path);
      const store = await base.open();
      await store.close(); // recovers the WAL into the file, so that copies are whole
      const check = async (damage: (db: Database.Database) => void): Promise<string[]> => {
        const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.db`);
        copyFileSync(path, copy);
        const db = new Database(copy);
        damage(db);
        db.close();
        const target = sqliteTarget(copy);
        const s = await target.open();
        try {
          return checkCrash({ snap: await takeSnapshot(s, target, keyring), prev: null, reports: child.reports, checkpoints: child.checkpoints, expectations: new Map(), concurrency: 8 });
        } finally {
          await s.close();
        }
      };
      const succeeded = child.reports.find((r) => r.state === "SUCCEEDED")!;
      expect(await check(() => undefined)).toEqual([]);
      const lost = (await check((db) => db.prepare("DELETE FROM attempts WHERE attempt_id = ?").run(succeeded.attemptId))).join("\n");
      expect(lost).toContain(`(1) reported SUCCEEDED attempt ${succeeded.attemptId}`);
      expect(lost).toContain("(2b)");
      expect((await check((db) => db.prepare("UPDATE idempotency SET state = 'failed', doc = json_set(doc, '$.state', 'failed') WHERE idempotency_key = ?").run(succeeded.idempotencyKey))).join("\n")).toContain("(2c)");
      expect((await check((db) => db.prepare("UPDATE journal SET doc = json_set(doc, '$.at', 1) WHERE seq = 3").run())).join("\n")).toContain("(3)");
      expect((await check((db) => db.prepare("DELETE FROM steps WHERE rowid IN (SELECT rowid FROM steps LIMIT 1)").run())).join("\n")).toMatch(/\(2[def]\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, TIMEOUT_MS);
});
