/**
 * The OpenAPI document passes a standard linter: Redocly's `recommended` ruleset
 * (@redocly/openapi-core), every rule at the severity that ruleset gives it, and no problem of any
 * severity is accepted (one rule is waived for the four public routes, which have no 4xx answer).
 * Also checks `servers`, `license` and the 4xx answers directly.
 */
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, startRig, type Rig } from "./fixture.js";

const ABS_REF = "/openapi.json";
const PUBLIC_ROUTES = ["/healthz", "/metrics", "/.well-known/jwks.json", "/openapi.json"];

let rig: Rig;
let doc: { servers?: Array<{ url: string }>; info: { license?: { name: string; identifier?: string } }; paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>> };
let text: string;
beforeAll(async () => {
  rig = await startRig();
  const r = await call(rig, "GET", "/openapi.json");
  expect(r.status).toBe(200);
  text = r.text;
  doc = r.json;
});
afterAll(async () => {
  await rig?.close();
});

describe("the OpenAPI document", () => {
  it("has no problem under Redocly's recommended rules", async () => {
    // The public system routes take no input and no credentials: no 4xx answer exists for them to
    // document, and declaring one would be false. That one rule is waived for exactly these four.
    const waived = new Set(PUBLIC_ROUTES.map((p) => `#/paths/${p.replace(/~/g, "~0").replace(/\//g, "~1")}/get/responses`));
    const config = await createConfig({ extends: ["recommended"] }, { ignore: { [ABS_REF]: { "operation-4xx-response": waived } } });
    const problems = await lintFromString({ source: text, absoluteRef: ABS_REF, config });
    expect(problems.filter((p) => p.ignored).map((p) => p.location[0]!.pointer).sort()).toEqual([...waived].sort());
    const shown = problems.filter((p) => !p.ignored).map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(", ")}`);
    expect(shown).toEqual([]);
  });

  it("names its server (relative: wherever it is served from) and its license", () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(doc.info.license).toEqual({ name: "Apache-2.0", identifier: "Apache-2.0" });
  });

  it("lists a 4xx answer on every operation that takes input or credentials, and a 429 on every keyed one", () => {
    const without: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!Object.keys(op.responses).some((s) => /^4\d\d$/.test(s))) without.push(`${method} ${path}`);
        if (path.startsWith("/v1/spaces/")) expect(op.responses["429"], `${method} ${path}`).toEqual({ $ref: "#/components/responses/Error429" });
      }
    }
    expect(without.sort()).toEqual(PUBLIC_ROUTES.map((p) => `get ${p}`).sort());
  });
});
