/**
 * Principals over HTTP (the SQLite rig). Invariants: one key holding submit and approve cannot
 * approve or deny its own request (403, the approval unchanged); a submit naming an actor the key
 * may not act for is 403 and stores nothing; a submit without an actor acts as the key's
 * principal; the invocation shows the submitting principal and key id; votes are cast as the
 * approving key's principal with its key id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Actor } from "../../src/core/types.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { setKeyDelegation } from "../../src/runtime/principals.js";
import { AGENT, call, refund, startRig, type Rig } from "../server/fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => rig.close());

async function key(roles: Array<"submit" | "approve" | "operate" | "admin">, name: string, principal: Actor = AGENT): Promise<{ text: string; keyId: string }> {
  const { crypto, random, clock } = rig.runtime.host.context.o;
  const { key: text, record } = await createApiKey(rig.runtime.store, crypto, random, { tenantId: "acme", roles, name, principal }, clock.now());
  rig.keys[name] = text;
  return { text, keyId: record.keyId };
}

describe("principals over HTTP", () => {
  it("one key with submit and approve cannot approve or deny its own request", async () => {
    const both = await key(["submit", "approve"], "both");
    const sub = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "both", body: refund(5000) });
    expect(sub.status).toBe(202);
    expect(sub.json.invocation.submittedBy).toEqual({ principal: AGENT, keyId: both.keyId });
    await rig.work();
    const inv = await call(rig, "GET", `/v1/spaces/prod/invocations/${sub.json.invocation.invocationId}`, { key: "acme.operate" });
    expect(inv.json.invocation.status).toBe("awaiting_approval");
    const approvalId = inv.json.invocation.approvalId as string;
    for (const verb of ["approve", "deny"]) {
      const r = await call(rig, "POST", `/v1/spaces/prod/approvals/${approvalId}/${verb}`, { key: "both", body: {} });
      expect(r.status, r.text).toBe(403);
      expect(r.json.error.code).toBe("FORBIDDEN");
    }
    const ap = await call(rig, "GET", `/v1/spaces/prod/approvals/${approvalId}`, { key: "acme.approve" });
    expect(ap.json.approval.status).toBe("pending");
    expect(ap.json.approval.votes).toEqual([]);
    expect(ap.json.approval.submittedBy).toEqual({ principal: AGENT, keyId: both.keyId });

    // A key of another principal approves; the vote is the key's principal and key id.
    const approver = await key(["approve"], "approver-zoe", { type: "user", id: "zoe" });
    const ok = await call(rig, "POST", `/v1/spaces/prod/approvals/${approvalId}/approve`, { key: "approver-zoe", body: { note: "fine" } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.approval.votes).toEqual([expect.objectContaining({ approver: { type: "user", id: "zoe" }, keyId: approver.keyId, verdict: "approve" })]);
  });

  it("a submit as an actor the key may not act for is 403 and stores nothing; the delegation list allows it", async () => {
    const k = await key(["submit"], "alice-key", { type: "user", id: "alice" });
    const before = (await call(rig, "GET", "/v1/spaces/prod/invocations?limit=500", { key: "acme.operate" })).json.items.length;
    const body = refund(3, { key: "as-bot-1" });
    const r = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "alice-key", body });
    expect(r.status).toBe(403);
    expect(r.json.error.code).toBe("FORBIDDEN");
    expect((await call(rig, "GET", "/v1/spaces/prod/invocations?limit=500", { key: "acme.operate" })).json.items.length).toBe(before);

    // Without an actor, the key acts as its principal.
    const { actor: _a, ...noActor } = refund(3, { key: "own-1" });
    const own = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "alice-key", body: noActor });
    expect(own.status).toBe(202);
    expect(own.json.invocation.request.actor).toEqual({ type: "user", id: "alice" });

    const { clock, crypto } = rig.runtime.host.context.o;
    await setKeyDelegation(rig.runtime.store, crypto, { tenantId: "acme", keyId: k.keyId, actsFor: [AGENT], by: { type: "user", id: "root" } }, clock.now());
    const delegated = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "alice-key", body });
    expect(delegated.status, delegated.text).toBe(202);
    expect(delegated.json.invocation.request.actor).toEqual(AGENT);
    expect(delegated.json.invocation.submittedBy).toEqual({ principal: { type: "user", id: "alice" }, keyId: k.keyId });
  });
});
