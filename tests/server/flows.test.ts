/** The API end to end against the real server: submit to success, approvals, reconciliation, completions. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/core/webhook.js";
import { ACME, WEBHOOK_SECRET, call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

const INV = "/v1/spaces/prod/invocations";

describe("invocations", () => {
  it("submit -> worker -> succeeded; replay answers 200 replayed; another request under the key is 409", async () => {
    const body = refund(50);
    const first = await call(rig, "POST", INV, { key: "acme.submit", body });
    expect(first.status).toBe(202);
    expect(first.json.replayed).toBe(false);
    expect(first.json.invocation.status).toBe("queued");
    expect(first.json.invocation.leaseToken).toBeUndefined();
    const id = first.json.invocation.invocationId as string;
    expect(first.headers.get("location")).toBe(`${INV}/${id}`);
    expect(first.headers.get("x-request-id")).toMatch(/^req_/);

    const again = await call(rig, "POST", INV, { key: "acme.submit", body });
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ replayed: true, invocation: { invocationId: id } });

    const conflict = await call(rig, "POST", INV, { key: "acme.submit", body: { ...body, params: { amount: 51, currency: "EUR" } } });
    expect(conflict.status).toBe(409);
    expect(conflict.json.error.code).toBe("IDEMPOTENCY_CONFLICT");

    expect(await rig.work()).toBeGreaterThanOrEqual(1);
    const got = await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" });
    expect(got.status).toBe(200);
    expect(got.json.invocation.status).toBe("succeeded");
    expect(got.json.invocation.result).toEqual({ refund: { refunded: true } });
  });

  it("lists with a status filter and a cursor", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call(rig, "POST", INV, { key: "acme.submit", body: refund(1) })).json.invocation.invocationId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof call>> = await call(rig, "GET", `${INV}?status=queued&limit=2${cursor ? `&cursor=${cursor}` : ""}`, { key: "acme.submit" });
      expect(page.status).toBe(200);
      expect(page.json.items.length).toBeLessThanOrEqual(2);
      for (const i of page.json.items) expect(i.status).toBe("queued");
      seen.push(...page.json.items.map((i: { invocationId: string }) => i.invocationId));
      cursor = page.json.nextCursor;
    } while (cursor);
    expect(new Set(seen)).toEqual(new Set(ids));
    await rig.work();
  });

  it("cancels a queued invocation, and answers 409 once it ran", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(2) })).json.invocation.invocationId;
    const c = await call(rig, "POST", `${INV}/${id}/cancel`, { key: "acme.submit" });
    expect(c.status).toBe(200);
    expect(c.json.invocation.status).toBe("cancelled");
    const again = await call(rig, "POST", `${INV}/${id}/cancel`, { key: "acme.submit" });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe("INVALID_STATE");
  });

  it("refuses with 409 STEPS_STARTED a cancel once a step started", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(7, { mode: "ambiguous" }) })).json.invocation.invocationId;
    await rig.work();
    const got = await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" });
    const c = await call(rig, "POST", `${INV}/${id}/cancel`, { key: "acme.submit" });
    expect(c.status).toBe(409);
    expect(c.json.error.code).toBe("STEPS_STARTED");
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe(got.json.invocation.status);
  });

  it("lists early completions for operators (results withheld); bad input and other roles refused", async () => {
    const scope = { tenantId: "acme", spaceId: "prod" };
    const rec = { ...scope, completionId: "cmp_http_early", connector: "deployer", externalRef: "dep-unmatched", outcome: "success" as const, result: { secret: "s3cr3t" }, contentDigest: "d", disposition: "early" as const, receivedAt: 1 };
    await rig.runtime.store.transact((tx) => tx.insertCompletion(scope, rec));
    const r = await call(rig, "GET", "/v1/spaces/prod/completions/early?limit=10", { key: "acme.operate" });
    expect(r.status).toBe(200);
    expect(r.json.items).toEqual([expect.objectContaining({ completionId: "cmp_http_early", externalRef: "dep-unmatched", disposition: "early" })]);
    expect(r.text).not.toContain("s3cr3t");
    expect(r.json.retentionMs).toBe(604_800_000);
    expect((await call(rig, "GET", "/v1/spaces/prod/completions/early?limit=0", { key: "acme.operate" })).status).toBe(400);
    expect((await call(rig, "GET", "/v1/spaces/prod/completions/early?x=1", { key: "acme.operate" })).status).toBe(400);
    expect((await call(rig, "GET", "/v1/spaces/prod/completions/early", { key: "acme.submit" })).status).toBe(403);
    expect((await call(rig, "GET", "/v1/spaces/prod/completions/early", { key: "globex.operate" })).json.items ?? []).toEqual([]);
  });

  it("a policy DENY ends denied", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(-5) })).json.invocation.invocationId;
    await rig.work();
    const got = await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" });
    expect(got.json.invocation.status).toBe("denied");
  });
});

describe("approvals through the API", () => {
  // Cancelling an invocation that awaits approval closes the approval (docs/approvals.md, Closed
  // approvals). Invariant: after the cancel the approval is `closed` (with the cancelling key as
  // `by`), it is not in the pending list, and a vote on it answers 409 APPROVAL_CLOSED naming the
  // cancel, without changing the approval.
  it("a cancelled invocation's approval is closed: off the pending list, votes answer 409 APPROVAL_CLOSED", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(5000) })).json.invocation.invocationId as string;
    await rig.work();
    const approvalId = (await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.approvalId as string;
    expect(approvalId).toBeTruthy();

    const cancelled = await call(rig, "POST", `${INV}/${id}/cancel`, { key: "acme.submit" });
    expect(cancelled.status).toBe(200);
    expect(cancelled.json.invocation.status).toBe("cancelled");

    const pending = await call(rig, "GET", `/v1/spaces/prod/approvals?status=pending`, { key: "acme.approve" });
    expect(pending.json.items.map((a: { approvalId: string }) => a.approvalId)).not.toContain(approvalId);
    const closed = await call(rig, "GET", `/v1/spaces/prod/approvals/${approvalId}`, { key: "acme.approve" });
    expect(closed.json.approval.status).toBe("closed");
    expect(closed.json.approval.closed.invocationStatus).toBe("cancelled");
    expect(closed.json.approval.closed.by).toBeDefined();

    for (const verb of ["approve", "deny", "revoke"]) {
      const vote = await call(rig, "POST", `/v1/spaces/prod/approvals/${approvalId}/${verb}`, { key: "acme.approve", body: {} });
      expect(vote.status).toBe(409);
      expect(vote.json.error.code).toBe("APPROVAL_CLOSED");
      expect(vote.json.error.message).toContain("cancelled");
    }
    const after = await call(rig, "GET", `/v1/spaces/prod/approvals/${approvalId}`, { key: "acme.approve" });
    expect(after.json.approval).toEqual(closed.json.approval);
    const inv = await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" });
    expect(inv.json.invocation.status).toBe("cancelled");
  });

  it("awaiting_approval -> approved by an approve key -> succeeded; the vote is journaled with the key as a user", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(5000) })).json.invocation.invocationId;
    await rig.work();
    const inv = (await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation;
    expect(inv.status).toBe("awaiting_approval");
    const list = await call(rig, "GET", "/v1/spaces/prod/approvals?status=pending", { key: "acme.approve" });
    expect(list.status).toBe(200);
    const ap = list.json.items.find((a: { invocationId?: string }) => a.invocationId === id);
    expect(ap).toBeDefined();
    const one = await call(rig, "GET", `/v1/spaces/prod/approvals/${ap.approvalId}`, { key: "acme.approve" });
    expect(one.json.approval.approvalId).toBe(ap.approvalId);

    const byAdmin = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: "acme.submit", body: {} });
    expect(byAdmin.status).toBe(403);
    const ok = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: "acme.approve", body: { note: "checked the ticket" } });
    expect(ok.status).toBe(200);
    expect(ok.json.approval.status).toBe("approved");
    expect(ok.json.approval.votes[0].approver).toEqual({ type: "user", id: "acme-approve" });
    const twice = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: "acme.approve" });
    expect(twice.status).toBe(409);

    await rig.work();
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("succeeded");
  });

  // Invariant: a policy approver role (here `finance`) is needed to vote; an API key carries it as an approver role.
  it("an approval that needs the finance role: a plain approve key is 403, a key with the finance approver role approves", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(250_000) })).json.invocation.invocationId;
    await rig.work();
    const ap = (await call(rig, "GET", "/v1/spaces/prod/approvals?status=pending", { key: "acme.approve" })).json.items.find((a: { invocationId?: string }) => a.invocationId === id);
    expect(ap.approverRoles).toEqual(["finance"]);
    const plain = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: "acme.approve", body: {} });
    expect(plain.status).toBe(403);
    expect(plain.json.error.code).toBe("FORBIDDEN");
    const { createApiKey } = await import("../../src/runtime/api-keys.js");
    const o = rig.runtime.host.context.o;
    const finance = await createApiKey(rig.runtime.store, o.crypto, o.random, { tenantId: "acme", roles: ["approve"], approverRoles: ["finance"], name: "acme-finance" }, Date.now());
    const ok = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: `Bearer ${finance.key}`, body: { note: "CFO ok" } });
    expect(ok.status).toBe(200);
    expect(ok.json.approval.status).toBe("approved");
    await rig.work();
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("succeeded");
  });

  it("deny ends the invocation denied", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(7000) })).json.invocation.invocationId;
    await rig.work();
    const ap = (await call(rig, "GET", "/v1/spaces/prod/approvals?status=pending", { key: "acme.approve" })).json.items.find((a: { invocationId?: string }) => a.invocationId === id);
    const denied = await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/deny`, { key: "acme.approve2" });
    expect(denied.status).toBe(200);
    expect(denied.json.approval.status).toBe("denied");
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("denied");
  });
});

describe("reconciliation through the API", () => {
  it("an ambiguous outcome waits for an operator, who resolves it succeeded", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: refund(10, { mode: "ambiguous" }) })).json.invocation.invocationId;
    await rig.work();
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("reconciliation_required");
    const forbidden = await call(rig, "GET", "/v1/spaces/prod/reconciliations", { key: "acme.submit" });
    expect(forbidden.status).toBe(403);
    const list = await call(rig, "GET", "/v1/spaces/prod/reconciliations?status=open", { key: "acme.operate" });
    const rec = list.json.items.find((r: { invocationId: string }) => r.invocationId === id);
    expect(rec.reasonCode).toBeDefined();
    const blank = await call(rig, "POST", `/v1/spaces/prod/reconciliations/${rec.reconciliationId}/resolve`, { key: "acme.operate", body: { outcome: "succeeded", note: "   " } });
    expect(blank.status).toBe(400);
    const res = await call(rig, "POST", `/v1/spaces/prod/reconciliations/${rec.reconciliationId}/resolve`, { key: "acme.operate", body: { outcome: "succeeded", note: "provider dashboard shows the refund", externalRef: "re_manual" } });
    expect(res.status).toBe(200);
    expect(res.json.invocation.status).toBe("succeeded");
    const after = (await call(rig, "GET", "/v1/spaces/prod/reconciliations?status=resolved", { key: "acme.operate" })).json.items.find((r: { reconciliationId: string }) => r.reconciliationId === rec.reconciliationId);
    expect(after.resolution).toMatchObject({ outcome: "succeeded", by: { type: "user", id: "acme-operate" } });
    const again = await call(rig, "POST", `/v1/spaces/prod/reconciliations/${rec.reconciliationId}/resolve`, { key: "acme.operate", body: { outcome: "failed", note: "x" } });
    expect(again.status).toBe(409);
  });
});

describe("completions webhook", () => {
  function signed(body: string, id: string, ts = Math.floor(Date.now() / 1000)): Record<string, string> {
    return { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(ts), "webhook-signature": signWebhook(rig.runtime.host.context.o.crypto, WEBHOOK_SECRET, id, ts, body) };
  }

  it("a parked deploy is completed by a signed delivery; a repeat is absorbed; a bad signature is 401", async () => {
    const id = (await call(rig, "POST", INV, { key: "acme.submit", body: { action: "deploy.run", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth-1", params: { ref: "v42" }, idempotencyKey: "deploy-v42" } })).json.invocation.invocationId;
    await rig.work();
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("parked");

    const body = JSON.stringify({ externalRef: "dep-v42", outcome: "success", result: { url: "https://example.test/v42" } });
    const bad = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: { ...signed(body, "msg_1"), "webhook-signature": "v1," + Buffer.alloc(32).toString("base64") } });
    expect(bad.status).toBe(401);
    expect(bad.json.error.code).toBe("WEBHOOK_SIGNATURE_INVALID");
    const stale = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: signed(body, "msg_1", Math.floor(Date.now() / 1000) - 3600) });
    expect(stale.status).toBe(401);
    expect(stale.json.error.code).toBe("WEBHOOK_TIMESTAMP_STALE");

    const ok = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: signed(body, "msg_1") });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ disposition: "applied", invocationId: id, status: "succeeded" });
    const replay = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: signed(body, "msg_1") });
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual({ disposition: "duplicate", deliveryReplayed: true });
    const repeat = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: signed(body, "msg_2") });
    expect(repeat.json.disposition).toBe("duplicate");
    expect((await call(rig, "GET", `${INV}/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("succeeded");
  });

  it("a completion for a reference nothing waits for is 409 COMPLETION_UNKNOWN_REFERENCE (retry later)", async () => {
    const body = JSON.stringify({ externalRef: "dep-nothing", outcome: "success" });
    const r = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: signed(body, "msg_unknown") });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe("COMPLETION_UNKNOWN_REFERENCE");
  });
});

describe("journal", () => {
  it("reads, exports JSONL and verifies", async () => {
    const page = await call(rig, "GET", "/v1/spaces/prod/journal?fromSeq=1&limit=5", { key: "acme.operate" });
    expect(page.status).toBe(200);
    expect(page.json.entries.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(page.json.nextFromSeq).toBe(6);
    const exp = await call(rig, "GET", "/v1/spaces/prod/journal/export", { key: "acme.operate" });
    expect(exp.status).toBe(200);
    expect(exp.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    const [header, ...lines] = exp.text.trim().split("\n").map((l) => JSON.parse(l) as { seq: number; tenantId: string });
    expect(header).toMatchObject({ format: "writ-journal/1", kind: "export", entries: lines.length });
    expect(lines.length).toBe(Number(exp.headers.get("x-writ-journal-head")));
    expect(lines.every((e, i) => e.seq === i + 1 && e.tenantId === ACME.tenantId)).toBe(true);
    const v = await call(rig, "GET", "/v1/spaces/prod/journal/verify", { key: "acme.operate" });
    expect(v.status).toBe(200);
    expect(v.json).toMatchObject({ ok: true, entries: lines.length, problems: [] });
  });
});
