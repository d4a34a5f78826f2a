/**
 * Cancelling an invocation that awaits approval closes the approval (docs/approvals.md, Closed
 * approvals), seen through the API. Invariant: after the cancel the approval is `closed` (with the
 * cancelling key as `by`), it is not in the pending list, and a vote on it answers 409
 * APPROVAL_CLOSED naming the cancel, without changing the approval.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

const INV = "/v1/spaces/prod/invocations";
const APPROVALS = "/v1/spaces/prod/approvals";

it("a cancelled invocation's approval is closed: off the pending list, votes answer 409 APPROVAL_CLOSED", async () => {
  const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(5000) })).json.invocation.invocationId as string;
  await rig.work();
  const approvalId = (await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.approvalId as string;
  expect(approvalId).toBeTruthy();

  const cancelled = await call(rig, "POST", `${INV}/${id}/cancel`, { key: "acme.submit" });
  expect(cancelled.status).toBe(200);
  expect(cancelled.json.invocation.status).toBe("cancelled");

  const pending = await call(rig, "GET", `${APPROVALS}?status=pending`, { key: "acme.approve" });
  expect(pending.json.items.map((a: { approvalId: string }) => a.approvalId)).not.toContain(approvalId);
  const closed = await call(rig, "GET", `${APPROVALS}/${approvalId}`, { key: "acme.approve" });
  expect(closed.json.approval.status).toBe("closed");
  expect(closed.json.approval.closed.invocationStatus).toBe("cancelled");
  expect(closed.json.approval.closed.by).toBeDefined();

  for (const verb of ["approve", "deny", "revoke"]) {
    const vote = await call(rig, "POST", `${APPROVALS}/${approvalId}/${verb}`, { key: "acme.approve", body: {} });
    expect(vote.status).toBe(409);
    expect(vote.json.error.code).toBe("APPROVAL_CLOSED");
    expect(vote.json.error.message).toContain("cancelled");
  }
  const after = await call(rig, "GET", `${APPROVALS}/${approvalId}`, { key: "acme.approve" });
  expect(after.json.approval).toEqual(closed.json.approval);
  const inv = await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" });
  expect(inv.json.invocation.status).toBe("cancelled");
});
