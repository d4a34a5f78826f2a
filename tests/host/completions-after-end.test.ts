/**
 * Completions for invocations that already ended, and early completions whose reference never
 * matched (docs/completions.md, After the end; Retention), on every store. Invariants: an ended
 * invocation keeps its status and the completion is recorded and journaled as evidence; one that
 * contradicts the recorded outcome or an operator's resolution raises ExternalOperationContradicted;
 * unmatched early completions are listed for operators (results withheld) and expire, journaled,
 * after the retention period; bad options and arguments are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCommitted, type Store } from "../../src/core/store.js";
import { sealJournalNow } from "../../src/index.js";
import { allStoreFactories } from "../helpers/stores.js";
import { grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const BY = { type: "user" as const, id: "op" };
const RETENTION = 60_000;

async function journal(b: HostBench): Promise<Array<{ type: string; data: unknown }>> {
  await sealJournalNow(b.store, b.scope);
  return readCommitted(b.store, (tx) => tx.readJournal(b.scope, {}));
}

for (const factory of allStoreFactories()) {
  describe(`completions after the end on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(): Promise<HostBench> {
      const b = makeHostBench(store, { earlyCompletionRetentionMs: RETENTION });
      await grantAuthority(b);
      return b;
    }

    /** Parks, lets the deadline pass, and has an operator resolve the handoff as `outcome`. */
    async function resolved(b: HostBench, outcome: "succeeded" | "failed"): Promise<{ invocationId: string; ref: string }> {
      const ref = `op-${Math.random().toString(36).slice(2)}`;
      b.replies.set("a", { outcome: "accepted", externalRef: ref });
      const { invocation } = await b.host.submit(b.request({ action: "long.one" }));
      expect(await b.host.worker().runOnce()).toEqual(["parked"]);
      b.clock.advance(60_001);
      expect((await b.host.sweep()).overdue).toBe(1);
      const [rec] = await b.host.reconcile.list(b.scope, { status: "open" });
      const done = await b.host.reconcile.resolve(b.scope, rec!.reconciliationId, { outcome, externalRef: ref, note: "checked with the provider", by: BY });
      expect(done.status).toBe(outcome);
      return { invocationId: invocation.invocationId, ref };
    }

    it("a completion agreeing with an ended invocation is evidence: status kept, journaled, no contradiction", async () => {
      const b = await bench();
      const { invocationId, ref } = await resolved(b, "succeeded");
      const answer = await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "success", result: { ok: true } });
      expect(answer).toEqual({ disposition: "evidence", invocationId, status: "succeeded" });
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("succeeded");
      const stored = await readCommitted(store, (tx) => tx.listCompletions(b.scope, "c", ref));
      expect(stored).toEqual([expect.objectContaining({ disposition: "evidence", invocationId })]);
      const e = (await journal(b)).filter((x) => x.type === "completion.evidence");
      expect(e).toHaveLength(1);
      expect(e[0]!.data).toMatchObject({ externalRef: ref, outcome: "success", invocationStatus: "succeeded", recorded: "success" });
      expect(b.events.some((x) => x.type === "ExternalOperationContradicted")).toBe(false);
      // An identical repeat is absorbed.
      expect((await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "success", result: { ok: true } })).disposition).toBe("duplicate");
    });

    it("a completion contradicting an operator's resolution raises ExternalOperationContradicted; the status is kept", async () => {
      const b = await bench();
      const { invocationId, ref } = await resolved(b, "succeeded");
      const answer = await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "failure", error: "declined by the bank" });
      expect(answer).toEqual({ disposition: "contradictory", invocationId, status: "succeeded" });
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("succeeded");
      const ev = b.events.filter((x) => x.type === "ExternalOperationContradicted");
      expect(ev).toHaveLength(1);
      expect(ev[0]).toMatchObject({ invocationId, data: { externalRef: ref, outcome: "failure", recorded: "success", resolvedBy: BY } });
      const c = (await journal(b)).filter((x) => x.type === "completion.contradicted");
      expect(c).toHaveLength(1);
      expect(c[0]!.data).toMatchObject({ externalRef: ref, outcome: "failure", recorded: "success", resolvedBy: BY });
      // A failed resolution contradicted by a success, likewise.
      const other = await resolved(b, "failed");
      expect(await b.host.complete(b.scope, { connector: "c", externalRef: other.ref, outcome: "success" })).toEqual({ disposition: "contradictory", invocationId: other.invocationId, status: "failed" });
      expect(b.events.filter((x) => x.type === "ExternalOperationContradicted")).toHaveLength(2);
    });

    it("a contradicting completion after the one that ended the invocation keeps its status (found by the simulator)", async () => {
      const b = await bench();
      const ref = `op-${Math.random().toString(36).slice(2)}`;
      b.replies.set("a", { outcome: "accepted", externalRef: ref });
      const { invocation } = await b.host.submit(b.request({ action: "long.one" }));
      expect(await b.host.worker().runOnce()).toEqual(["parked"]);
      expect(await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "success" })).toMatchObject({ disposition: "applied", status: "succeeded" });
      const answer = await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "failure", error: "declined after all" });
      expect(answer).toEqual({ disposition: "contradictory", invocationId: invocation.invocationId, status: "succeeded" });
      expect((await b.host.get(b.scope, invocation.invocationId))?.status).toBe("succeeded");
      expect(await b.host.reconcile.list(b.scope, { status: "open" })).toEqual([]);
      expect(b.events.filter((x) => x.type === "ExternalOperationContradicted")).toHaveLength(1);
      expect((await journal(b)).filter((x) => x.type === "completion.contradicted")).toHaveLength(1);
    });

    it("an early completion that never matched is listed for operators and expires after the retention, journaled", async () => {
      const b = await bench();
      const ref = `early-${Math.random().toString(36).slice(2)}`;
      b.replies.set("a", async () => {
        expect(await b.host.complete(b.scope, { connector: "c", externalRef: ref, outcome: "success", result: { card: "4111-EARLY" } })).toEqual({ disposition: "early" });
        return { outcome: "ambiguous", reason: "connection reset after send" };
      });
      await b.host.submit(b.request({ action: "long.one" }));
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      const listed = await b.host.earlyCompletions(b.scope);
      expect(listed).toEqual([expect.objectContaining({ connector: "c", externalRef: ref, outcome: "success", disposition: "early" })]);
      expect(JSON.stringify(listed)).not.toContain("4111-EARLY");
      expect(await b.host.earlyCompletions({ tenantId: "someone-else", spaceId: "s" })).toEqual([]);
      // Not yet expired at exactly the retention bound.
      b.clock.advance(RETENTION);
      expect((await b.host.sweep()).earlyExpired).toBe(0);
      b.clock.advance(1);
      expect((await b.host.sweep()).earlyExpired).toBe(1);
      expect(await b.host.earlyCompletions(b.scope)).toEqual([]);
      expect(await readCommitted(store, (tx) => tx.listCompletions(b.scope, "c", ref))).toEqual([expect.objectContaining({ disposition: "expired", expiredAt: b.clock.now() })]);
      const entries = await journal(b);
      const exp = entries.filter((x) => x.type === "completion.expired");
      expect(exp).toHaveLength(1);
      expect(exp[0]!.data).toMatchObject({ externalRef: ref, disposition: "expired", retentionMs: RETENTION });
      expect(JSON.stringify(entries)).not.toContain("4111-EARLY");
      expect((await b.host.sweep()).earlyExpired).toBe(0);
    });

    it("bad retention options and list limits are refused", async () => {
      for (const bad of [0, -1, 1.5, "1000", Number.MAX_VALUE]) {
        expect(() => makeHostBench(store, { earlyCompletionRetentionMs: bad as number })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("earlyCompletionRetentionMs") }));
      }
      const b = await bench();
      for (const limit of [0, 1001, 2.5]) await expect(b.host.earlyCompletions(b.scope, { limit })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    });
  });
}
