/**
 * Failing closed: anything that prevents a clean evaluation denies, with the problem as the reason.
 * Cedar on its own skips an erroring policy; Writ denies instead, so an erroring forbid can never
 * let a permit through.
 */
import { describe, expect, it } from "vitest";
import { isAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import type { ActionRequest } from "../../src/core/types.js";
import { cedarPolicy } from "../../src/policy/index.js";
import { ACTORS, ENTITIES, POLICIES, SCHEMA, input, request } from "./fixture.js";

const withSchema = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
const noSchema = cedarPolicy({ policies: POLICIES, entities: ENTITIES });

describe("params that are not Cedar values -> DENY naming the path", () => {
  // Invariant: numbers without an exact Cedar Long, nulls in sets, and reserved keys deny for every engine.
  it.each([
    ["a float", { amount: 12.5, currency: "EUR" }, "context.params.amount"],
    ["an unsafe integer", { amount: 2 ** 60, currency: "EUR" }, "context.params.amount"],
    ["null in an array", { amount: 1, currency: "EUR", tags: ["a", null] }, "context.params.tags[1]"],
    ["an __entity key (forged entity reference)", { amount: 1, currency: "EUR", who: { __entity: { type: "Writ::User", id: "alice" } } }, "context.params.who.__entity"],
    ["an __extn key", { amount: 1, currency: { __extn: { fn: "decimal", arg: "1.0" } } }, "context.params.currency.__extn"],
    ["a float deep inside", { amount: 1, currency: "EUR", note: { x: [{ y: 0.1 }] } }, "context.params.note.x[0].y"],
  ])("%s", async (_n, params, path) => {
    for (const engine of [withSchema, noSchema]) {
      const out = await engine.evaluate(input(request(ACTORS.bot, "payments.refund", params)));
      expect(out.result).toBe("DENY");
      expect(out.reasons[0]).toMatch(new RegExp(`^cannot evaluate: ${path.replace(/[[\].]/g, "\\$&")}: `));
    }
  });

  // Invariant: a float in the authority's constraints denies as well.
  it("a float constraint", async () => {
    const req = request(ACTORS.bot, "payments.refund", { amount: 1, currency: "EUR" });
    const i = input(req);
    const out = await withSchema.evaluate({ ...i, authority: { ...i.authority!, constraints: { maxAmount: 0.5 } } });
    expect(out.result).toBe("DENY");
    expect(out.reasons[0]).toMatch(/^cannot evaluate: context\.authority\.constraints\.maxAmount: /);
  });

  // Invariant: a null property is an absent attribute, so `has` is false (and the schema may mark it optional).
  it("a null property is absent", async () => {
    const req = request(ACTORS.bot, "reports.read", { report: "daily", tags: null });
    expect((await withSchema.evaluate(input(req))).reasons).toEqual(["reports-read"]);
  });
});

describe("requests the schema rejects -> DENY", () => {
  it.each([
    ["a missing param", "payments.refund", { amount: 5 }],
    ["a param of the wrong type", "payments.refund", { amount: "5", currency: "EUR" }],
    ["an undeclared param", "payments.refund", { amount: 5, currency: "EUR", extra: true }],
    ["an undeclared action", "payments.wire", { amount: 5, currency: "EUR" }],
  ])("%s", async (_n, action, params) => {
    const out = await withSchema.evaluate(input(request(ACTORS.bot, action, params)));
    expect(out.result).toBe("DENY");
    expect(out.reasons[0]).toMatch(/^request rejected by Cedar: /);
  });
});

describe("evaluation errors -> DENY with the error", () => {
  // Invariant: without a schema, a policy reading a missing attribute errors, and the request is denied.
  it("a missing attribute", async () => {
    const out = await noSchema.evaluate(input(request(ACTORS.bot, "payments.refund", { currency: "EUR" })));
    expect(out.result).toBe("DENY");
    expect(out.reasons.some((r) => r.startsWith("policy refund-small failed: "))).toBe(true);
  });

  // Invariant: an erroring forbid denies even where Cedar alone would allow.
  it("an erroring forbid does not let a permit through", async () => {
    const policies = `@id("open") permit(principal, action, resource);
      @id("limit") forbid(principal, action, resource) when { context.params.amount > 10 };`;
    const e = cedarPolicy({ policies });
    const req = request(ACTORS.bot, "x", { amount: "lots" });
    const raw = isAuthorized({ principal: { type: "Writ::Agent", id: "bot" }, action: { type: "Writ::Action", id: "x" }, resource: { type: "Writ::Space", id: "acme/prod" }, context: { params: { amount: "lots" } }, policies: { staticPolicies: policies }, entities: [] });
    expect(raw.type === "success" && raw.response.decision).toBe("allow");
    const out = await e.evaluate(input(req));
    expect(out.result).toBe("DENY");
    expect(out.reasons).toHaveLength(1);
    expect(out.reasons[0]).toMatch(/^policy limit failed: /);
    expect((await e.evaluate(input(request(ACTORS.bot, "x", { amount: 5 })))).result).toBe("ALLOW");
  });

  // Invariant: malformed inputs deny rather than throw.
  it("an unknown actor type or a broken request denies", async () => {
    const req = request(ACTORS.bot, "reports.read", { report: "x" });
    const bad = await withSchema.evaluate(input({ ...req, actor: { type: "robot", id: "r" } } as unknown as ActionRequest, "missing"));
    expect(bad.result).toBe("DENY");
    expect(bad.reasons[0]).toMatch(/^policy evaluation failed: /);
    const broken = await withSchema.evaluate({ request: { ...req, params: undefined } as unknown as ActionRequest, authority: null });
    expect(broken.result).toBe("DENY");
  });

  // Invariant: the space entity is the engine's; a caller's duplicate of it fails closed.
  it("a caller-supplied duplicate of the space entity denies", async () => {
    const e = cedarPolicy({ policies: "permit(principal, action, resource);", entities: [{ uid: { type: "Writ::Space", id: "acme/prod" }, attrs: {}, parents: [] }] });
    const out = await e.evaluate(input(request(ACTORS.bot, "x", {})));
    expect(out.result).toBe("DENY");
    expect(out.reasons[0]).toMatch(/^request rejected by Cedar: /);
  });
});

describe("entities", () => {
  // Invariant: loaded entities place principals in groups; a loader failure rejects (the host retries), it is not a decision.
  it("an entity loader feeds roles; a failing loader rejects", async () => {
    let calls = 0;
    const e = cedarPolicy({
      policies: POLICIES,
      schema: SCHEMA,
      entities: (i) => {
        calls++;
        if (i.request.actor.id === "boom") throw new Error("directory down");
        return i.request.actor.id === "bob" ? [{ uid: { type: "Writ::User", id: "bob" }, attrs: {}, parents: [{ type: "Writ::Role", id: "billing" }] }] : [];
      },
    });
    const charge = (id: string) => input(request({ type: "user", id }, "payments.charge", { amount: 5, currency: "USD" }));
    expect((await e.evaluate(charge("bob"))).reasons).toEqual(["charge-billing"]);
    expect((await e.evaluate(charge("alice"))).result).toBe("DENY");
    await expect(e.evaluate(charge("boom"))).rejects.toThrow("directory down");
    expect(calls).toBe(3);
  });

  // Invariant: the resource is the space, in its tenant; ids with "/" cannot impersonate another scope.
  it("tenant and space ids are unambiguous", async () => {
    const e = cedarPolicy({ policies: '@id("acme") permit(principal, action, resource in Writ::Tenant::"a/b"); @id("space") permit(principal, action, resource == Writ::Space::"a%2Fb/c");' });
    const inScope = await e.evaluate(input(request(ACTORS.bot, "x", {}, { tenantId: "a/b", spaceId: "c" })));
    expect(inScope.reasons).toEqual(["acme", "space"]);
    const lookalike = await e.evaluate(input(request(ACTORS.bot, "x", {}, { tenantId: "a", spaceId: "b/c" })));
    expect(lookalike.result).toBe("DENY");
  });
});
