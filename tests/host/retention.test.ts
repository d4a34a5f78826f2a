/**
 * Retention through the host (docs/retention.md), on every store. Invariants: an idempotency key
 * answers as a replay (or a conflict) within the replay window and while its ended invocation is
 * not archived; once the window passed and the journal naming it is archived, a prune removes the
 * invocation and the same key is a new request; open work is never pruned whatever its age; the
 * journal still verifies after a prune; a started worker prunes in the background and the
 * Prometheus metrics count it; options that would let a key expire before a retry or an approval
 * are refused with a message naming them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCommitted, type Store } from "../../src/core/store.js";
import { createKeyring } from "../../src/core/keyring.js";
import { sealJournalNow, verifyJournalIn } from "../../src/index.js";
import { metricsFor } from "../../src/server/metrics.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { allStoreFactories, memoryFactory } from "../helpers/stores.js";
import { KEYS } from "../boundary/fixture.js";
import { decisionFor, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const DAY = 86_400_000;
const RETENTION = { invocationsMs: 2 * DAY, replayWindowMs: 2 * DAY, pauseMs: 0 };

/** Seals the scope's journal and archives all of it (what the archiver does once it wrote and verified a segment). */
async function archiveAll(b: HostBench): Promise<void> {
  await sealJournalNow(b.store, b.scope);
  const head = await readCommitted(b.store, (tx) => tx.journalHead(b.scope));
  if (head) await b.store.transact((tx) => tx.setJournalArchivedThrough(b.scope, head.seq));
}

for (const factory of allStoreFactories()) {
  describe(`retention through the host on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(): Promise<HostBench> {
      const b = makeHostBench(store, { retention: RETENTION });
      await grantAuthority(b);
      return b;
    }

    it("within the window a key replays; after it and once archived, the same key is a new request", async () => {
      const b = await bench();
      const req = b.request();
      const first = await b.host.submit(req);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect((await b.host.submit(req)).replayed).toBe(true);
      await expect(b.host.submit({ ...req, params: { n: 2 } })).rejects.toMatchObject({ code: "IDEMPOTENCY_CONFLICT" });

      // Past the window but not archived: the journal holds it, the key still replays.
      b.clock.advance(2 * DAY + 1);
      const held = await b.host.retention.prune();
      expect(held.pruned.invocations).toBe(0);
      expect(held.held.not_archived).toBeGreaterThanOrEqual(1);
      const again = await b.host.submit(req);
      expect(again).toMatchObject({ replayed: true, invocation: { invocationId: first.invocation.invocationId } });

      // Archived: status says it would go, a prune removes it, the key is a new request.
      await archiveAll(b);
      const status = await b.host.retention.status();
      expect(status.dryRun).toBe(true);
      expect(status.pruned.invocations).toBeGreaterThanOrEqual(1);
      expect(await b.host.get(b.scope, first.invocation.invocationId)).not.toBeNull();
      const done = await b.host.retention.prune();
      expect(done.pruned.invocations).toBeGreaterThanOrEqual(1);
      expect(done.pruned.steps).toBeGreaterThanOrEqual(1);
      expect(await b.host.get(b.scope, first.invocation.invocationId)).toBeNull();
      const fresh = await b.host.submit({ ...req, params: { n: 2 } });
      expect(fresh.replayed).toBe(false);
      expect(fresh.invocation.invocationId).not.toBe(first.invocation.invocationId);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);

      // The journal, entries of the pruned invocation included, still verifies.
      await sealJournalNow(b.store, b.scope);
      const v = await verifyJournalIn(b.store, createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]), b.scope);
      expect(v.problems).toEqual([]);
      expect(v.ok).toBe(true);
    });

    it("a bare execution's key answers DUPLICATE within the replay window; after it and once archived, it is pruned and runs again", async () => {
      const b = await bench();
      const req = b.request({ idempotencyKey: `bare-${Math.random().toString(36).slice(2)}` });
      const boundary = b.host.context.boundary;
      expect((await boundary.execute(req, decisionFor(req, b.clock.now()))).state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(1);
      await archiveAll(b);

      // Within the window, archived or not: the key stays and answers DUPLICATE.
      b.clock.advance(2 * DAY - 1);
      const within = await b.host.retention.prune();
      expect(within.pruned.bare_idempotency).toBe(0);
      expect((await boundary.execute(req, decisionFor(req, b.clock.now()))).state).toBe("DUPLICATE");
      // A key an invocation holds goes with its invocation, never as a bare one (counted apart below).
      const held = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      await archiveAll(b);

      // Past the window (the DUPLICATE attempt and its entries archived too): pruned, with its rows.
      b.clock.advance(2 * DAY + 1);
      await archiveAll(b);
      const status = await b.host.retention.status();
      expect(status.pruned.bare_idempotency).toBe(1);
      const done = await b.host.retention.prune();
      expect(done.pruned.bare_idempotency).toBe(1);
      expect(done.pruned.attempts).toBeGreaterThanOrEqual(2);
      expect(await readCommitted(b.store, (tx) => tx.getIdempotency(b.scope, req.action, req.idempotencyKey))).toBeNull();
      const heldKey = held.invocation;
      expect(await readCommitted(b.store, (tx) => tx.getIdempotency(b.scope, heldKey.action, heldKey.idempotencyKey))).toBeNull();
      expect(await b.host.get(b.scope, heldKey.invocationId)).toBeNull();
      // The same key is a new request: it runs again.
      expect((await boundary.execute(req, decisionFor(req, b.clock.now()))).state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(3);
    });

    it("open work is never pruned, however old and archived", async () => {
      const b = await bench();
      b.verdict.current = "REQUIRE_APPROVAL";
      const waiting = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const queued = await b.host.submit(b.request({ action: "one.once" }));
      b.clock.advance(30 * DAY);
      await archiveAll(b);
      await b.host.retention.prune();
      expect((await b.host.get(b.scope, waiting.invocation.invocationId))?.status).toBe("awaiting_approval");
      expect((await b.host.get(b.scope, queued.invocation.invocationId))?.status).toBe("queued");
    });
  });
}

describe("retention options and the background pruner", () => {
  it("refuses a replay window shorter than the approval or retry horizon, or longer than invocation retention", () => {
    expect(() => makeHostBench(memoryStore(), { retention: { replayWindowMs: 3_600_000 } })).toThrow(/replayWindowMs \(3600000\) is shorter than the approval horizon/);
    expect(() => makeHostBench(memoryStore(), { approvalTtlMs: 1, retention: { replayWindowMs: 10_000 } })).toThrow(/shorter than the retry horizon/);
    expect(() => makeHostBench(memoryStore(), { retention: { invocationsMs: 3 * DAY, replayWindowMs: 4 * DAY } })).toThrow(/longer than retention.invocationsMs/);
    expect(() => makeHostBench(memoryStore(), { retention: { invocationsMs: 3_600_000 } })).toThrow(/retention.invocationsMs \(the replay window by default\)/);
    expect(() => makeHostBench(memoryStore(), { retention: { batchSize: 0 } })).toThrow(/retention.batchSize must be a whole number from 1/);
    expect(() => makeHostBench(memoryStore(), { retention: { everyDay: 1 } as never })).toThrow(/retention.everyDay is not an option/);
    expect(() => makeHostBench(memoryStore(), { retention: { invocationsMs: 2 * DAY } })).not.toThrow();
  });

  it("a started worker prunes in the background; the metrics count the rows and the holds", async () => {
    const { store, cleanup } = await memoryFactory.make();
    try {
      const b = makeHostBench(store, { retention: RETENTION });
      await grantAuthority(b);
      const metrics = metricsFor(b.host);
      const kept = await b.host.submit(b.request());
      const gone = await b.host.submit(b.request());
      expect(await b.host.worker({ batchSize: 2, concurrency: 2 }).runOnce()).toEqual(["succeeded", "succeeded"]);
      await archiveAll(b);
      // The journal names `kept` again above the watermark (a late completion's evidence, say).
      await b.store.transact((tx) => tx.insertUnsealed(b.scope, [{ ...b.scope, id: "late-evidence", at: b.clock.now(), type: "completion.evidence", refs: { invocationId: kept.invocation.invocationId }, data: null }]));
      b.clock.advance(2 * DAY + 1);
      const ran = new Promise<void>((resolve) => {
        const off = b.host.retention.onSignal((s) => {
          if (s.kind === "run") {
            off();
            resolve();
          }
        });
      });
      const w = b.host.worker({ pollMs: 10 });
      w.start();
      await ran;
      await w.stop();
      expect(await b.host.get(b.scope, gone.invocation.invocationId)).toBeNull();
      expect(await b.host.get(b.scope, kept.invocation.invocationId)).not.toBeNull();
      expect(metrics.count("pruned", { kind: "invocations" })).toBe(1);
      const text = metrics.render();
      expect(text).toMatch(/writ_retention_pruned_rows_total\{kind="steps"\} 1/);
      expect(text).toMatch(/writ_retention_held_invocations\{reason="not_archived"\} 1/);
      expect(text).toMatch(/writ_retention_oldest_ended_invocation_age_seconds \d+/);
    } finally {
      await cleanup();
    }
  });
});
