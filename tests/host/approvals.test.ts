/**
 * Approvals and authorities end to end (SPEC 4.8, 3.1 checks 6, 8, 9) on every store: granted then
 * executed; denied; expired; quorum 2 of 3 with a self-approval refused; revoked after grant but
 * before execution (APPROVAL_REVOKED); authority revoked between decision and execution
 * (AUTHORITY_REVOKED); policy version changed between decision and execution (DECISION_REF_MISMATCH).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const approver = (id: string, roles = ["approve"]) => ({ actor: { type: "user" as const, id }, roles });

for (const factory of allStoreFactories()) {
  describe(`approvals and authorities on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function parked(b: HostBench): Promise<{ invocationId: string; approvalId: string }> {
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const inv = await b.host.get(b.scope, invocation.invocationId);
      return { invocationId: invocation.invocationId, approvalId: inv!.approvalId! };
    }

    async function bench(): Promise<HostBench> {
      const b = makeHostBench(store);
      await grantAuthority(b);
      return b;
    }

    // Invariant: a granted approval re-queues the invocation; it executes under a decision carrying the approvalRef.
    it("approval granted, then executed", async () => {
      const b = await bench();
      const { invocationId, approvalId } = await parked(b);
      const ap = await b.host.approvals.approve(b.scope, approvalId, approver("alice"));
      expect(ap.status).toBe("approved");
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("queued");
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls).toHaveLength(1);
      const attempts = await store.transact((tx) => tx.listAttempts(b.scope, { invocationId }));
      expect(attempts.at(-1)?.state).toBe("SUCCEEDED");
    });

    // Invariant: a denial ends the invocation denied; nothing runs.
    it("approval denied -> denied", async () => {
      const b = await bench();
      const { invocationId, approvalId } = await parked(b);
      await b.host.approvals.deny(b.scope, approvalId, approver("alice"));
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("denied");
      expect(await b.host.worker().runOnce()).toEqual([]);
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: the sweep expires a pending approval past its expiry and denies its invocation; late votes are refused.
    it("approval expired by the sweep -> denied", async () => {
      const b = await bench();
      const { invocationId, approvalId } = await parked(b);
      b.clock.advance(86_400_000 + 1);
      expect(await b.host.sweep()).toEqual({ overdue: 0, approvalsExpired: 1, earlyExpired: 0 });
      expect((await b.host.approvals.get(b.scope, approvalId))?.status).toBe("expired");
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("denied");
      await expect(b.host.approvals.approve(b.scope, approvalId, approver("alice"))).rejects.toMatchObject({ code: "INVALID_STATE" });
      expect(b.calls).toHaveLength(0);
    });

    // Invariants: quorum 2 of 3; the requester can never approve its own request; roles are required; one vote per approver.
    it("quorum 2 of 3 with a self-approval refused", async () => {
      const b = await bench();
      b.quorum.current = 2;
      const { invocationId, approvalId } = await parked(b);
      await expect(b.host.approvals.approve(b.scope, approvalId, { actor: { type: "agent", id: "bot" }, roles: ["approve"] })).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(b.host.approvals.approve(b.scope, approvalId, approver("mallory", ["submit"]))).rejects.toMatchObject({ code: "FORBIDDEN" });
      const one = await b.host.approvals.approve(b.scope, approvalId, approver("alice"));
      expect(one.status).toBe("pending");
      await expect(b.host.approvals.approve(b.scope, approvalId, approver("alice"))).rejects.toMatchObject({ code: "INVALID_STATE" });
      expect((await b.host.get(b.scope, invocationId))?.status).toBe("awaiting_approval");
      const two = await b.host.approvals.approve(b.scope, approvalId, approver("bob"));
      expect(two.status).toBe("approved");
      expect(two.votes.map((v) => v.approver.id)).toEqual(["alice", "bob"]);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
    });

    // Invariant: an approval revoked after it was granted but before execution is caught by boundary check 9.
    it("approval revoked after grant, before execution -> APPROVAL_REVOKED", async () => {
      const b = await bench();
      const { invocationId, approvalId } = await parked(b);
      await b.host.approvals.approve(b.scope, approvalId, approver("alice"));
      b.duringEvaluate.current = async () => {
        b.duringEvaluate.current = null;
        await b.host.approvals.revoke(b.scope, approvalId, approver("carol"));
      };
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocationId))?.reasons?.[0]).toContain("APPROVAL_REVOKED");
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: authority standing is checked again at execution.
    it("authority revoked between decision and execution -> AUTHORITY_REVOKED", async () => {
      const b = await bench();
      await store.transact((tx) => tx.putAuthority(b.scope, { ...b.scope, authorityRef: "auth", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "alice" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 }));
      const { invocation } = await b.host.submit(b.request());
      b.duringEvaluate.current = async () => {
        await b.host.authorities.revoke(b.scope, "auth", { type: "user", id: "sec-officer" });
      };
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.reasons?.[0]).toContain("AUTHORITY_REVOKED");
      expect(b.calls).toHaveLength(0);
      const entries = await store.transact((tx) => tx.readJournal(b.scope, {}));
      expect(entries.some((e) => e.type === "authority.revoked")).toBe(true);
    });

    // Invariant: a decision minted under a policy version that is no longer accepted is refused.
    it("policy version changed between decision and execution -> DECISION_REF_MISMATCH", async () => {
      const b = await bench();
      const { invocation } = await b.host.submit(b.request());
      b.duringEvaluate.current = async () => {
        b.acceptedRefs.splice(0, b.acceptedRefs.length, "test:v2");
      };
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.reasons?.[0]).toContain("DECISION_REF_MISMATCH");
      expect(b.calls).toHaveLength(0);
    });

    // Invariant: a vote recorded while a worker evaluates is not lost: the worker sees it under the approval lock.
    it("an approval granted while the worker evaluates is not lost", async () => {
      const b = await bench();
      const { invocationId, approvalId } = await parked(b);
      // Re-queue so a worker evaluates again while the approval is still pending, and approve mid-evaluation.
      await store.transact(async (tx) => {
        const inv = (await tx.getInvocation(b.scope, invocationId))!;
        await tx.updateInvocation(b.scope, { ...inv, status: "queued", runAt: b.clock.now() });
      });
      b.duringEvaluate.current = async () => {
        b.duringEvaluate.current = null;
        await b.host.approvals.approve(b.scope, approvalId, approver("alice"));
      };
      expect(await b.host.worker().runOnce()).toEqual(["queued"]);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
    });

    it("authorities: lifecycle and bad input", async () => {
      const b = await bench();
      const by = { type: "user" as const, id: "admin" };
      const a = await b.host.authorities.create(b.scope, { authorityRef: "ops-bot", principal: { type: "agent", id: "ops" }, grantor: by, actions: ["deploy.*"] });
      expect(a.status).toBe("active");
      await expect(b.host.authorities.create(b.scope, { authorityRef: "ops-bot", principal: { type: "agent", id: "ops" }, grantor: by, actions: ["x"] })).rejects.toMatchObject({ code: "CONFLICT" });
      await expect(b.host.authorities.create(b.scope, { authorityRef: "", principal: { type: "agent", id: "ops" }, grantor: by, actions: ["x"] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect((await b.host.authorities.suspend(b.scope, "ops-bot", by)).status).toBe("suspended");
      expect((await b.host.authorities.reinstate(b.scope, "ops-bot", by)).status).toBe("active");
      expect((await b.host.authorities.revoke(b.scope, "ops-bot", by)).status).toBe("revoked");
      await expect(b.host.authorities.reinstate(b.scope, "ops-bot", by)).rejects.toMatchObject({ code: "INVALID_STATE" });
      await expect(b.host.authorities.suspend({ tenantId: "other", spaceId: "s" }, "ops-bot", by)).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    // Invariant: preview evaluates and explains without writing anything.
    it("preview is a dry run", async () => {
      const b = await bench();
      b.verdict.current = "REQUIRE_APPROVAL";
      const before = await store.transact((tx) => tx.readJournal(b.scope, {}));
      const p = await b.host.preview(b.request());
      expect(p).toMatchObject({ result: "REQUIRE_APPROVAL", authority: { status: "active", coversAction: true } });
      expect(await store.transact((tx) => tx.readJournal(b.scope, {}))).toEqual(before);
      expect(await b.host.list(b.scope)).toEqual([]);
      expect(b.calls).toHaveLength(0);
    });
  });
}
