/** The document, health, metrics, request ids, unknown routes and methods. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_ERROR_CODES } from "../../src/server/index.js";
import { call, raw, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

const EXPECTED_ROUTES = [
  "GET /healthz",
  "GET /metrics",
  "GET /.well-known/jwks.json",
  "GET /openapi.json",
  "POST /v1/spaces/{spaceId}/invocations",
  "GET /v1/spaces/{spaceId}/invocations",
  "GET /v1/spaces/{spaceId}/invocations/{invocationId}",
  "POST /v1/spaces/{spaceId}/invocations/{invocationId}/cancel",
  "GET /v1/spaces/{spaceId}/actions",
  "GET /v1/spaces/{spaceId}/approvals",
  "GET /v1/spaces/{spaceId}/approvals/{approvalId}",
  "POST /v1/spaces/{spaceId}/approvals/{approvalId}/approve",
  "POST /v1/spaces/{spaceId}/approvals/{approvalId}/deny",
  "POST /v1/spaces/{spaceId}/approvals/{approvalId}/revoke",
  "GET /v1/spaces/{spaceId}/reconciliations",
  "POST /v1/spaces/{spaceId}/reconciliations/{reconciliationId}/resolve",
  "GET /v1/spaces/{spaceId}/breakers",
  "GET /v1/spaces/{spaceId}/journal",
  "GET /v1/spaces/{spaceId}/journal/export",
  "GET /v1/spaces/{spaceId}/journal/verify",
  "POST /v1/spaces/{spaceId}/decisions/preview",
  "POST /v1/spaces/{spaceId}/decisions/evaluate-and-sign",
  "POST /v1/spaces/{spaceId}/boundary/execute",
  "POST /v1/spaces/{spaceId}/boundary/keys/resolve",
  "POST /v1/completions/{connector}",
  "GET /v1/spaces/{spaceId}/completions/early",
  "GET /v1/notifications/subscriptions",
  "POST /v1/notifications/subscriptions",
  "GET /v1/notifications/subscriptions/{subscriptionId}",
  "PATCH /v1/notifications/subscriptions/{subscriptionId}",
  "DELETE /v1/notifications/subscriptions/{subscriptionId}",
  "GET /v1/notifications/deliveries",
  "GET /v1/notifications/deliveries/{deliveryId}",
  "POST /v1/notifications/deliveries/{deliveryId}/redeliver",
];

describe("/openapi.json", () => {
  it("is an OpenAPI 3.1 document listing every route, each with responses and resolvable schema refs", async () => {
    const r = await call(rig, "GET", "/openapi.json");
    expect(r.status).toBe(200);
    const doc = r.json;
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.title).toBeTruthy();
    const listed: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, { operationId: string; responses: object }>>)) {
      for (const [method, op] of Object.entries(ops)) {
        listed.push(`${method.toUpperCase()} ${path}`);
        expect(op.operationId).toBeTruthy();
        expect(Object.keys(op.responses).length).toBeGreaterThan(0);
      }
    }
    expect(listed.sort()).toEqual([...EXPECTED_ROUTES].sort());
    // Every $ref points at a schema the document defines.
    const refs = [...r.text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) expect(doc.components.schemas[ref], ref).toBeDefined();
    // Keyed operations say which roles they need; the submit body is the request schema.
    const submit = doc.paths["/v1/spaces/{spaceId}/invocations"].post;
    expect(submit["x-writ-roles"]).toEqual(["submit"]);
    expect(submit.security).toEqual([{ apiKey: [] }]);
    expect(submit.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ActionRequest" });
    expect(doc.components.schemas.ActionRequest.properties.idempotencyKey.maxLength).toBe(255);
    expect(doc.paths["/v1/spaces/{spaceId}/invocations"].get.parameters.map((p: { name: string }) => p.name)).toEqual(["spaceId", "status", "limit", "cursor"]);
    expect(doc.paths["/v1/completions/{connector}"].post.security).toEqual([{ webhookSignature: [] }]);
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual([...API_ERROR_CODES]);
    // Shared error answers are referenced, and every reference resolves.
    const responseRefs = [...r.text.matchAll(/"\$ref":"#\/components\/responses\/([^"]+)"/g)].map((m) => m[1]!);
    expect(responseRefs).toContain("Error401");
    for (const ref of responseRefs) expect(doc.components.responses[ref], ref).toBeDefined();
    expect(submit.responses["409"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
  });
});

describe("health, metrics, request ids, routing", () => {
  it("/healthz answers ok while the store answers", async () => {
    const r = await call(rig, "GET", "/healthz");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: "ok", store: "sqlite" });
  });

  it("/metrics counts requests by route and status, and invocation transitions from the host's events", async () => {
    await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(4) });
    await call(rig, "GET", "/v1/spaces/prod/invocations/nope", { key: "acme.submit" });
    await rig.work();
    const r = await call(rig, "GET", "/metrics");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(r.text).toMatch(/^writ_http_requests_total\{method="POST",route="\/v1\/spaces\/\{spaceId\}\/invocations",status="202"\} [1-9]/m);
    expect(r.text).toMatch(/^writ_http_requests_total\{method="GET",route="\/v1\/spaces\/\{spaceId\}\/invocations\/\{invocationId\}",status="404"\} [1-9]/m);
    expect(r.text).toMatch(/^writ_invocation_transitions_total\{from="running",to="succeeded"\} [1-9]/m);
    expect(r.text).toMatch(/^writ_http_request_duration_seconds_bucket\{method="POST",route="\/v1\/spaces\/\{spaceId\}\/invocations",le="\+Inf"\} [1-9]/m);
    expect(r.text).not.toContain("acme");
  });

  it("echoes a plain x-request-id, replaces an unsafe one, and sets one on every answer", async () => {
    expect((await call(rig, "GET", "/healthz", { headers: { "x-request-id": "abc-123" } })).headers.get("x-request-id")).toBe("abc-123");
    const unsafe = await call(rig, "GET", "/healthz", { headers: { "x-request-id": "a b<script>" } });
    expect(unsafe.headers.get("x-request-id")).toMatch(/^req_/);
    for (const r of [await call(rig, "GET", "/nope"), await call(rig, "DELETE", "/healthz"), await call(rig, "GET", "/v1/spaces/prod/invocations")]) {
      expect(r.headers.get("x-request-id")).toMatch(/^req_/);
    }
  });

  it("unknown routes are 404 ROUTE_NOT_FOUND; wrong methods 405 with Allow", async () => {
    const nf = await call(rig, "GET", "/v1/nope");
    expect(nf.status).toBe(404);
    expect(nf.json.error.code).toBe("ROUTE_NOT_FOUND");
    const m = await call(rig, "DELETE", "/v1/spaces/prod/invocations", { key: "acme.submit" });
    expect(m.status).toBe(405);
    expect(m.json.error.code).toBe("METHOD_NOT_ALLOWED");
    expect(m.headers.get("allow")).toBe("GET, HEAD, POST");
    const put = await call(rig, "PUT", "/healthz");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, HEAD");
  });

  it("limits: 413 beyond the body limit, 415 for a non-JSON content type, 400 for deep or duplicate-key JSON", async () => {
    const big = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: JSON.stringify({ ...refund(1), params: { amount: 1, currency: "EUR", pad: "x".repeat(1024 * 1024) } }), headers: { "content-type": "application/json" } });
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(big.headers.get("connection")).toBe("close");
    // Chunked (no Content-Length): counted as it arrives, refused past the limit; a small one is read whole.
    const chunked = (chunks: string[]) =>
      fetch(`${rig.url}/v1/spaces/prod/invocations`, {
        method: "POST",
        headers: { authorization: `Bearer ${rig.keys["acme.submit"]}`, "content-type": "application/json" },
        body: new ReadableStream({ start(c) { for (const x of chunks) c.enqueue(new TextEncoder().encode(x)); c.close(); } }),
        duplex: "half",
      });
    const bigChunked = await chunked(['{"pad":"', ...Array.from({ length: 20 }, () => "x".repeat(64 * 1024)), '"}']);
    expect(bigChunked.status).toBe(413);
    expect(((await bigChunked.json()) as { error: { code: string } }).error.code).toBe("PAYLOAD_TOO_LARGE");
    const body = JSON.stringify(refund(1));
    const smallChunked = await chunked([body.slice(0, 10), body.slice(10)]);
    expect(smallChunked.status).toBe(202);
    const text = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: JSON.stringify(refund(1)), headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(415);
    const deep = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: JSON.stringify({ ...refund(1), params: { amount: 1, currency: "EUR", x: JSON.parse("[".repeat(40) + "]".repeat(40)) } }), headers: { "content-type": "application/json" } });
    expect(deep.status).toBe(400);
    expect(deep.json.error.code).toBe("MALFORMED_JSON");
    const dup = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: '{"action":"a","action":"b"}', headers: { "content-type": "application/json" } });
    expect(dup.status).toBe(400);
    expect(dup.json.error.code).toBe("MALFORMED_JSON");
    const proto = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", raw: '{"__proto__":{"x":1}}', headers: { "content-type": "application/json" } });
    expect(proto.status).toBe(400);
    const longKey = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(1, { key: "k".repeat(256) }) });
    expect(longKey.status).toBe(400);
    expect(longKey.json.error.details.issues[0].path).toBe("body.idempotencyKey");
    expect((await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(1, { key: "k".repeat(255) }) })).status).toBe(202);
  });
});

describe("requests the router never sees", () => {
  it.each([
    ["a backslash in the path", "GET /v1\\spaces HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST"],
    ["a bad Host header", "GET /healthz HTTP/1.1\r\nHost: a b/c\r\nConnection: close\r\n\r\n", 400, "BAD_REQUEST"],
    ["a garbage request line", "HELLO THERE\r\n\r\n", 400, "BAD_REQUEST"],
    ["a header name with a space", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nBad Header: x\r\n\r\n", 400, "BAD_REQUEST"],
    ["headers over Node's limit", `GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "HEADERS_TOO_LARGE"],
  ])("%s -> %i %s as JSON, with a request id", async (_what, text, status, code) => {
    const r = await raw(rig.url, text);
    expect(r.status).toBe(status);
    expect(r.headers).toMatch(/x-request-id: req_/);
    expect(r.headers).toContain("content-type: application/json");
    expect((JSON.parse(r.body) as { error: { code: string } }).error.code).toBe(code);
  });
});
