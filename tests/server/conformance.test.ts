/**
 * The conformance check that `call` runs on every answer (conformance.ts) can fail: an answer with
 * an undeclared status, an undeclared media type, or a body its declared schema refuses is
 * reported, against the document the server really serves. Without this, a check that passed
 * everything would look the same as a server that conforms.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { conformance, type Conformance, type Observed } from "./conformance.js";
import { call, startRig, type Rig } from "./fixture.js";

let rig: Rig;
let check: Conformance;
beforeAll(async () => {
  rig = await startRig();
  check = conformance((await call(rig, "GET", "/openapi.json")).json);
});
afterAll(async () => {
  await rig?.close();
});

const invocation = (over: Record<string, unknown> = {}) => ({
  tenantId: "acme",
  spaceId: "prod",
  invocationId: "inv_1",
  action: "payments.refund",
  actionVersion: "1",
  idempotencyKey: "k",
  requestDigest: "d",
  request: { tenantId: "acme", spaceId: "prod", action: "payments.refund", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth-1", params: {}, idempotencyKey: "k" },
  status: "queued",
  runAt: 1,
  attemptCount: 0,
  retryCount: 0,
  nextStep: 0,
  createdAt: 1,
  updatedAt: 1,
  ...over,
});
const answer = (o: Partial<Observed>): Observed => ({ method: "GET", path: "/v1/spaces/prod/invocations/inv_1", status: 200, contentType: "application/json", json: { invocation: invocation() }, text: "{}", ...o });

describe("the conformance check of answers", () => {
  it("accepts an answer the document declares", () => {
    expect(check.problems(answer({}))).toEqual([]);
    expect(check.operation("GET", "/v1/spaces/prod/journal/export?fromSeq=2")?.op.operationId).toBe("exportJournal");
  });

  it("reports a status the operation does not declare", () => {
    expect(check.problems(answer({ status: 418 }))).toEqual([expect.stringContaining("getInvocation: answered 418, which the document does not declare")]);
  });

  it("reports a body its schema refuses: a missing field, a wrong type, an undeclared field, a bad enum", () => {
    expect(check.problems(answer({ json: {} })).join("\n")).toMatch(/must have required property 'invocation'/);
    expect(check.problems(answer({ json: { invocation: invocation({ attemptCount: "0" }) } })).join("\n")).toMatch(/body\/invocation\/attemptCount must be integer/);
    expect(check.problems(answer({ json: { invocation: invocation({ leaseToken: "secret" }) } })).join("\n")).toMatch(/must NOT have additional properties/);
    expect(check.problems(answer({ json: { invocation: invocation({ status: "done" }) } })).join("\n")).toMatch(/status must be equal to one of the allowed values/);
  });

  it("reports an error answer that is not the error shape, and one on an unknown route", () => {
    expect(check.problems(answer({ status: 404, json: { message: "nope" } })).join("\n")).toMatch(/must have required property 'error'/);
    expect(check.problems(answer({ path: "/nowhere", status: 404, json: { error: { code: "NO_SUCH_CODE", message: "x" } } })).join("\n")).toMatch(/code must be equal to one of the allowed values/);
  });

  it("reports a body that is not JSON, and an undeclared media type", () => {
    expect(check.problems(answer({ json: undefined, text: "<html>" }))).toEqual([expect.stringContaining("the body is not JSON")]);
    expect(check.problems(answer({ path: "/v1/spaces/prod/journal/export", contentType: "application/json" }))).toEqual([expect.stringContaining("content type application/json is not declared")]);
  });

  it("is what call() runs: an answer of the real server that departs fails the call", async () => {
    // The real server answers 404 for an unknown invocation, which the document declares...
    const r = await call(rig, "GET", "/v1/spaces/prod/invocations/inv_missing", { key: "acme.submit" });
    expect(r.status).toBe(404);
    // ...and the same answer under a document that lists no 404 for the operation is refused.
    const doc = (await call(rig, "GET", "/openapi.json")).json;
    delete doc.paths["/v1/spaces/{spaceId}/invocations/{invocationId}"].get.responses["404"];
    expect(conformance(doc).problems({ method: "GET", path: "/v1/spaces/prod/invocations/inv_missing", status: r.status, contentType: r.headers.get("content-type"), json: r.json, text: r.text })).toEqual([
      expect.stringContaining("answered 404, which the document does not declare"),
    ]);
  });
});
