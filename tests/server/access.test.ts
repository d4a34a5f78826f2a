/** Keys, roles and tenants: 401 without a valid key, 403 without the role or space, 404 across tenants. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { revokeApiKey } from "../../src/runtime/api-keys.js";
import { call, refund, secretOf, startRig, type Rig } from "./fixture.js";

let rig: Rig;
let acmeInvocation: string;
beforeAll(async () => {
  rig = await startRig();
  acmeInvocation = (await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(3) })).json.invocation.invocationId;
});
afterAll(async () => {
  await rig?.close();
});

describe("authentication", () => {
  const path = "/v1/spaces/prod/invocations";
  it.each([
    ["no header", undefined],
    ["empty", ""],
    ["another scheme", "Basic dXNlcjpwYXNz"],
    ["not a writ key", "Bearer abc"],
    ["unknown key id", "Bearer writ_AAAAAAAAAAAAAAAA_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],
  ])("%s -> 401 UNAUTHORIZED with WWW-Authenticate", async (_name, header) => {
    const r = await call(rig, "GET", path, header === undefined ? {} : { key: header });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe("UNAUTHORIZED");
    expect(r.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(r.headers.get("x-request-id")).toBeTruthy();
  });

  it("a right key id with a wrong secret -> 401, and the key text appears nowhere in the answer", async () => {
    const real = rig.keys["acme.submit"]!;
    const forged = real.slice(0, -4) + (real.endsWith("AAAA") ? "BBBB" : "AAAA");
    const r = await call(rig, "GET", path, { key: `Bearer ${forged}` });
    expect(r.status).toBe(401);
    expect(r.text).not.toContain(secretOf(forged));
  });

  it("a revoked key -> 401", async () => {
    const { key, record } = await (await import("../../src/runtime/api-keys.js")).createApiKey(rig.runtime.store, rig.runtime.host.context.o.crypto, rig.runtime.host.context.o.random, { tenantId: "acme", roles: ["submit"], name: "temp" }, Date.now());
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(200);
    await revokeApiKey(rig.runtime.store, record.keyId, "acme", Date.now());
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(401);
  });
});

describe("roles", () => {
  // Without an actor: each key submits as its own principal (the admin key is not the agent).
  const own = (amount: number): Record<string, unknown> => {
    const { actor: _actor, ...rest } = refund(amount);
    return rest;
  };
  const cases: Array<[string, string, string, unknown, string[], string[]]> = [
    // [what, method, path, body, allowed keys, refused keys]
    ["submit", "POST", "/v1/spaces/prod/invocations", () => own(1), ["acme.submit", "acme.admin"], ["acme.approve", "acme.operate"]],
    ["list actions", "GET", "/v1/spaces/prod/actions", undefined, ["acme.submit", "acme.admin"], ["acme.approve", "acme.operate"]],
    ["list approvals", "GET", "/v1/spaces/prod/approvals", undefined, ["acme.approve", "acme.admin"], ["acme.submit", "acme.operate"]],
    ["list reconciliations", "GET", "/v1/spaces/prod/reconciliations", undefined, ["acme.operate", "acme.admin"], ["acme.submit", "acme.approve"]],
    ["read the journal", "GET", "/v1/spaces/prod/journal", undefined, ["acme.operate", "acme.admin"], ["acme.submit", "acme.approve"]],
    ["verify the journal", "GET", "/v1/spaces/prod/journal/verify", undefined, ["acme.operate", "acme.admin"], ["acme.submit", "acme.approve"]],
    ["evaluate-and-sign", "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { request: refund(1) }, ["acme.admin"], ["acme.submit", "acme.approve", "acme.operate"]],
    ["preview", "POST", "/v1/spaces/prod/decisions/preview", own(1), ["acme.submit", "acme.admin"], ["acme.approve", "acme.operate"]],
  ];
  it.each(cases)("%s: allowed for the right roles, 403 FORBIDDEN for the others", async (_what, method, path, body, allowed, refused) => {
    for (const k of allowed) {
      const b: unknown = typeof body === "function" ? (body as () => unknown)() : body;
      const r = await call(rig, method, path, { key: k, ...(b !== undefined ? { body: b } : {}) });
      expect([200, 202], `${k} ${method} ${path}: ${r.text}`).toContain(r.status);
    }
    for (const k of refused) {
      const b: unknown = typeof body === "function" ? (body as () => unknown)() : body;
      const r = await call(rig, method, path, { key: k, ...(b !== undefined ? { body: b } : {}) });
      expect(r.status, `${k} ${method} ${path}`).toBe(403);
      expect(r.json.error.code).toBe("FORBIDDEN");
    }
  });

  it("a key limited to another space -> 403, even as admin", async () => {
    const r = await call(rig, "GET", "/v1/spaces/prod/invocations", { key: "acme.otherspace" });
    expect(r.status).toBe(403);
    expect((await call(rig, "GET", "/v1/spaces/staging/invocations", { key: "acme.otherspace" })).status).toBe(200);
  });
});

describe("tenants", () => {
  it("another tenant's invocation is 404, exactly like one that does not exist", async () => {
    const own = await call(rig, "GET", `/v1/spaces/prod/invocations/${acmeInvocation}`, { key: "acme.submit" });
    expect(own.status).toBe(200);
    const other = await call(rig, "GET", `/v1/spaces/prod/invocations/${acmeInvocation}`, { key: "globex.admin" });
    const missing = await call(rig, "GET", "/v1/spaces/prod/invocations/inv_doesnotexist", { key: "globex.admin" });
    expect(other.status).toBe(404);
    expect(other.json.error.code).toBe("NOT_FOUND");
    expect(missing.status).toBe(404);
    expect(other.json.error.message.replace(acmeInvocation, "X")).toBe(missing.json.error.message.replace("inv_doesnotexist", "X"));
    // A long poll across tenants is the same 404, at once (it does not wait first).
    const t0 = Date.now();
    const polled = await call(rig, "GET", `/v1/spaces/prod/invocations/${acmeInvocation}?wait=5`, { key: "globex.admin" });
    expect(polled.status).toBe(404);
    expect(polled.json.error.message.replace(acmeInvocation, "X")).toBe(missing.json.error.message.replace("inv_doesnotexist", "X"));
    expect(Date.now() - t0).toBeLessThan(2_000);
    const cancel = await call(rig, "POST", `/v1/spaces/prod/invocations/${acmeInvocation}/cancel`, { key: "globex.submit" });
    expect(cancel.status).toBe(404);
    const list = await call(rig, "GET", "/v1/spaces/prod/invocations", { key: "globex.submit" });
    expect(list.json.items.some((i: { invocationId: string }) => i.invocationId === acmeInvocation)).toBe(false);
    expect((await call(rig, "GET", `/v1/spaces/prod/invocations/${acmeInvocation}`, { key: "acme.submit" })).json.invocation.status).toBe("queued");
  });

  it("a body naming another tenant is refused (403) and stores nothing", async () => {
    const before = (await call(rig, "GET", "/v1/spaces/prod/invocations", { key: "globex.submit" })).json.items.length;
    const r = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: { ...refund(1), tenantId: "globex" } });
    expect(r.status).toBe(403);
    expect((await call(rig, "GET", "/v1/spaces/prod/invocations", { key: "globex.submit" })).json.items.length).toBe(before);
  });
});
