/**
 * The document types requests as the server accepts them, so a strict validator (Prism) or a
 * generated client sends what Writ takes:
 * - every POST that reads a body declares it; cancel's optional body (`{}`, the README's habit) is
 *   declared, and what the server accepts there is valid under the declared schema;
 * - numeric query parameters are integers with bounds in the document (a generated client gets a
 *   number, not a string), while the server still reads them from the query string and refuses
 *   anything else with 400 naming the parameter.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, refund, startRig, type Rig } from "./fixture.js";

type Param = { name: string; in: string; schema: Record<string, unknown> };
type Op = { operationId: string; parameters: Param[]; requestBody?: { required: boolean; content: Record<string, { schema: { $ref: string } }> } };
let rig: Rig;
let doc: { paths: Record<string, Record<string, Op>>; components: { schemas: Record<string, unknown> } };
beforeAll(async () => {
  rig = await startRig();
  doc = (await call(rig, "GET", "/openapi.json")).json;
});
afterAll(async () => {
  await rig?.close();
});

const CANCEL = "/v1/spaces/{spaceId}/invocations/{invocationId}/cancel";

/** Is `body` valid under the request body the document declares for `path` (POST)? */
function bodyValid(path: string, body: unknown): boolean {
  const ajv = new Ajv2020({ strict: false, validateSchema: false });
  ajv.addSchema({ ...doc, $id: "doc" });
  const rb = doc.paths[path]!.post!.requestBody!;
  return ajv.compile({ $ref: `doc${rb.content["application/json"]!.schema.$ref}` })(body);
}

async function queued(): Promise<string> {
  return (await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(3) })).json.invocation.invocationId;
}

describe("request bodies in the document", () => {
  it("cancel declares its optional body, and {} (what the server accepts) is valid under it", async () => {
    const rb = doc.paths[CANCEL]!.post!.requestBody;
    expect(rb?.required).toBe(false);
    expect(bodyValid(CANCEL, {})).toBe(true);
    expect(bodyValid(CANCEL, { reason: "x" })).toBe(false);
    // The server: {} and no body both cancel; an undeclared field is refused by name; a body over the limit is 413 (declared).
    expect((await call(rig, "POST", `/v1/spaces/prod/invocations/${await queued()}/cancel`, { key: "acme.submit", body: {} })).json.invocation.status).toBe("cancelled");
    expect((await call(rig, "POST", `/v1/spaces/prod/invocations/${await queued()}/cancel`, { key: "acme.submit" })).json.invocation.status).toBe("cancelled");
    const id = await queued();
    const bad = await call(rig, "POST", `/v1/spaces/prod/invocations/${id}/cancel`, { key: "acme.submit", body: { reason: "x" } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe("VALIDATION_FAILED");
    expect(bad.json.error.message).toContain("reason");
    const big = await call(rig, "POST", `/v1/spaces/prod/invocations/${id}/cancel`, { key: "acme.submit", raw: "x".repeat(1024 * 1024 + 1), headers: { "content-type": "application/json" } });
    expect(big.status).toBe(413);
    expect((await call(rig, "GET", `/v1/spaces/prod/invocations/${id}`, { key: "acme.submit" })).json.invocation.status).toBe("queued");
  });

  it("every POST that reads a JSON body declares one", () => {
    const without = Object.entries(doc.paths).flatMap(([path, ops]) => (ops.post && !ops.post.requestBody ? [path] : []));
    expect(without).toEqual([]);
  });
});

describe("numeric query parameters", () => {
  const numeric = (): Array<{ op: string; p: Param }> =>
    Object.values(doc.paths).flatMap((ops) => Object.values(ops).flatMap((op) => op.parameters.filter((p) => p.in === "query" && (p.name === "limit" || p.name === "fromSeq")).map((p) => ({ op: op.operationId, p }))));

  it("are integers with a minimum and a maximum in the document, never strings", () => {
    const found = numeric();
    expect(found.length).toBe(8);
    for (const { op, p } of found) {
      expect(p.schema, `${op} ${p.name}`).toEqual({ type: "integer", minimum: expect.any(Number), maximum: expect.any(Number) });
      expect(p.schema.minimum).toBe(1);
    }
    const limit = (id: string) => found.find((f) => f.op === id && f.p.name === "limit")!.p.schema.maximum;
    expect([limit("listInvocations"), limit("listApprovals"), limit("listReconciliations"), limit("readJournal"), limit("listEarlyCompletions"), limit("listDeliveries")]).toEqual([500, 500, 500, 1000, 1000, 200]);
  });

  it("are read from the query string; out of range, non-integer, empty or repeated is 400 naming the parameter, never a 5xx", async () => {
    await queued();
    await queued();
    const ok = await call(rig, "GET", "/v1/spaces/prod/invocations?limit=1", { key: "acme.submit" });
    expect(ok.status).toBe(200);
    expect(ok.json.items).toHaveLength(1);
    expect((await call(rig, "GET", "/v1/spaces/prod/journal?fromSeq=1&limit=1000", { key: "acme.operate" })).status).toBe(200);
    for (const [path, key, name] of [
      ["/v1/spaces/prod/invocations?limit=", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=0", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=501", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=1.5", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=-1", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=1e2", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=0x10", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=ten", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=99999999999999999999", "acme.submit", "limit"],
      ["/v1/spaces/prod/invocations?limit=1&limit=2", "acme.submit", "limit"],
      ["/v1/spaces/prod/approvals?limit=501", "acme.approve", "limit"],
      ["/v1/spaces/prod/reconciliations?limit=abc", "acme.operate", "limit"],
      ["/v1/spaces/prod/journal?fromSeq=0", "acme.operate", "fromSeq"],
      ["/v1/spaces/prod/journal?limit=1001", "acme.operate", "limit"],
      ["/v1/spaces/prod/journal/export?fromSeq=x", "acme.operate", "fromSeq"],
      ["/v1/spaces/prod/completions/early?limit=1001", "acme.operate", "limit"],
    ] as const) {
      const r = await call(rig, "GET", path, { key });
      expect(r.status, path).toBe(400);
      expect(r.json.error.code, path).toBe("VALIDATION_FAILED");
      expect(r.json.error.details.issues[0].path, path).toBe(`query.${name}`);
      expect(r.json.error.message, path).toMatch(new RegExp(`query\\.${name}: (must be an integer from 1 to \\d+|is given more than once)`));
    }
  });
});
