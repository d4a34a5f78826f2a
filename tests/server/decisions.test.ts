/** Decisions over HTTP: a decision minted by evaluate-and-sign verifies with the JWKS (jose) and runs through boundary execute. */
import { compactVerify, createLocalJWKSet, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { requestDigest } from "../../src/index.js";
import { ACME, call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

describe("evaluate-and-sign and the JWKS", () => {
  it("a decision minted over HTTP verifies with the JWKS served at /.well-known/jwks.json", async () => {
    const jwks = await call(rig, "GET", "/.well-known/jwks.json");
    expect(jwks.status).toBe(200);
    expect(jwks.json.keys.length).toBeGreaterThan(0);
    const request = refund(25);
    const r = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ result: "ALLOW", policyRef: "test:v1" });
    expect(r.json.requestDigest).toBe(requestDigest({ ...request, ...ACME }));
    const keySet = createLocalJWKSet(jwks.json);
    const { payload, protectedHeader } = await compactVerify(r.json.decision, keySet);
    expect(protectedHeader).toMatchObject({ alg: "EdDSA", typ: "writ-decision+jws", kid: r.json.kid });
    const claims = JSON.parse(new TextDecoder().decode(payload));
    expect(claims).toMatchObject({ v: 1, result: "ALLOW", tenantId: "acme", spaceId: "prod", authorityRef: "auth-1", decisionId: r.json.decisionId });
    // A JWT library verifies it too (the payload is a JSON object; no exp claim).
    await expect(jwtVerify(r.json.decision, keySet, { typ: "writ-decision+jws" })).resolves.toBeDefined();
  });

  it("large refunds come back REQUIRE_APPROVAL, signed; with an approved approval, ALLOW bound to it", async () => {
    const request = refund(5000);
    const r = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request } });
    expect(r.json.result).toBe("REQUIRE_APPROVAL");
    const missing = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request, approvalId: "apr_missing" } });
    expect(missing.status).toBe(404);
    // The same request submitted, parked for approval, approved: evaluated with that approval, ALLOW bound to it.
    const id = (await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: request })).json.invocation.invocationId;
    await rig.work();
    const ap = (await call(rig, "GET", "/v1/spaces/prod/approvals?status=pending", { key: "acme.approve" })).json.items.find((a: { invocationId?: string }) => a.invocationId === id);
    const early = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request, approvalId: ap.approvalId } });
    expect(early.json).toMatchObject({ result: "REQUIRE_APPROVAL" });
    expect(early.json.approvalRef).toBeUndefined();
    expect((await call(rig, "POST", `/v1/spaces/prod/approvals/${ap.approvalId}/approve`, { key: "acme.approve" })).status).toBe(200);
    const granted = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request, approvalId: ap.approvalId } });
    expect(granted.json).toMatchObject({ result: "ALLOW", approvalRef: ap.approvalId });
    const other = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request: refund(5000), approvalId: ap.approvalId } });
    expect(other.status).toBe(400);
  });

  it("preview tells the policy's answer and writes nothing", async () => {
    const before = await rig.runtime.store.transact((tx) => tx.journalHead(ACME));
    const r = await call(rig, "POST", "/v1/spaces/prod/decisions/preview", { key: "acme.submit", body: refund(-1) });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ result: "DENY", authority: { authorityRef: "auth-1", status: "active", coversAction: true } });
    expect(await rig.runtime.store.transact((tx) => tx.journalHead(ACME))).toEqual(before);
  });
});

describe("boundary execute", () => {
  it("executes once under a minted decision; presenting it again answers the recorded DUPLICATE, no second effect", async () => {
    const request = refund(30);
    const minted = (await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request } })).json;
    const first = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: minted.decision } });
    expect(first.status).toBe(200);
    expect(first.json.attempt).toMatchObject({ state: "SUCCEEDED", decisionId: minted.decisionId });
    const again = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: minted.decision } });
    expect(again.status).toBe(200);
    expect(again.json.attempt).toMatchObject({ state: "DUPLICATE", originalAttemptId: first.json.attempt.attemptId });
  });

  it("a decision for another request is refused with REQUEST_DIGEST_MISMATCH", async () => {
    const minted = (await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request: refund(30) } })).json;
    const r = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request: refund(31), decision: minted.decision } });
    expect(r.json.attempt).toMatchObject({ state: "REFUSED", reasonCode: "REQUEST_DIGEST_MISMATCH" });
  });

  it("malformed input is a 400 at the edge and records no attempt", async () => {
    const before = await rig.runtime.store.transact((tx) => tx.listAttempts(ACME, { limit: 10_000 }));
    const bad = [
      { request: refund(1), decision: "not.a.token" },
      { request: { ...refund(1), action: "nope" }, decision: "a.b.c" },
      { request: { ...refund(1), params: { amount: "x" } }, decision: "a.b.c" },
      { request: refund(1) },
    ];
    for (const body of bad) {
      const r = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body });
      expect(r.status, r.text).toBe(400);
      expect(r.json.error.code).toBe("VALIDATION_FAILED");
    }
    expect(await rig.runtime.store.transact((tx) => tx.listAttempts(ACME, { limit: 10_000 }))).toEqual(before);
  });

  it("a request the boundary would find malformed (admission's shape rules) is a 400 too, recording nothing", async () => {
    const before = await rig.runtime.store.transact((tx) => tx.listAttempts(ACME, { limit: 10_000 }));
    const r = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request: { ...refund(1), params: { amount: 1, note: "\ud800" } }, decision: "a.b.c" } });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ code: "VALIDATION_FAILED", message: expect.stringContaining("malformed request: request.params.note: contains a lone surrogate") });
    expect(await rig.runtime.store.transact((tx) => tx.listAttempts(ACME, { limit: 10_000 }))).toEqual(before);
  });
});
