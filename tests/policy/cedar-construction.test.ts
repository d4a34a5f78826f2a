/**
 * Construction: a policy set or schema that is not sound throws WritError("INVALID_OPTION") whose
 * `details.problems` name each problem (policy ids, annotation names); warnings do not throw.
 */
import { describe, expect, it } from "vitest";
import { isAuthorized } from "@cedar-policy/cedar-wasm/nodejs";
import { WritError } from "../../src/core/errors.js";
import { cedarPolicy, prepareCedarPolicySet, type CedarPolicyOptions } from "../../src/policy/index.js";
import { ACTORS, ENTITIES, POLICIES, SCHEMA, input, request } from "./fixture.js";

function invalid(o: unknown): string[] {
  try {
    cedarPolicy(o as CedarPolicyOptions);
  } catch (e) {
    expect(e).toBeInstanceOf(WritError);
    expect((e as WritError).code).toBe("INVALID_OPTION");
    const d = (e as WritError).details as { problems?: string[] } | undefined;
    return d?.problems ?? [(e as Error).message];
  }
  throw new Error("expected INVALID_OPTION");
}

const BASE_SCHEMA = `namespace Writ { entity Tenant; entity Space in [Tenant]; entity Agent;
  type Authority = { ref: String, status: String, actions: Set<String>, coversAction: Bool, grantor: { type: String, id: String }, constraints: {} };
  action "x" appliesTo { principal: [Agent], resource: [Space], context: { params: { n: Long }, authority?: Authority, approval: { granted: Bool, approvalId?: String } } }; }`;

describe("policies that do not parse or are not supported", () => {
  // Invariant: bad options never build an engine.
  it.each([
    ["no options", undefined],
    ["policies not a string", { policies: 42 }],
    ["a syntax error", { policies: "permit(principal, action, resource) when { " }],
    ["a template", { policies: "permit(principal == ?principal, action, resource);" }],
    ["schema of the wrong type", { policies: "permit(principal, action, resource);", schema: 7 }],
    ["entities of the wrong type", { policies: "permit(principal, action, resource);", entities: "alice" }],
  ])("%s -> INVALID_OPTION", (_n, o) => {
    expect(invalid(o).length).toBeGreaterThan(0);
  });
});

describe("annotations", () => {
  // Invariant: every bad annotation is reported, naming the annotation; none is silently ignored.
  it.each([
    ["duplicate @id", '@id("p") permit(principal, action, resource); @id("p") forbid(principal, action, resource);', '"p"'],
    ["@id colliding with an assigned id", 'permit(principal, action, resource); @id("policy0") forbid(principal, action, resource);', '"policy0"'],
    ["empty @id", '@id("") permit(principal, action, resource);', "@id"],
    ["@approval other than required", '@approval("maybe") permit(principal, action, resource);', "@approval"],
    ["@approval without a value", "@approval permit(principal, action, resource);", "@approval"],
    ["@approval on a forbid", '@approval("required") forbid(principal, action, resource);', "forbid"],
    ["@quorum without @approval", '@quorum("2") permit(principal, action, resource);', "@quorum"],
    ["@approvers without @approval", '@approvers("x") permit(principal, action, resource);', "@approvers"],
    ["@quorum 0", '@approval("required") @quorum("0") permit(principal, action, resource);', "@quorum"],
    ["@quorum not a number", '@approval("required") @quorum("two") permit(principal, action, resource);', "@quorum"],
    ["@approvers empty", '@approval("required") @approvers(" , ") permit(principal, action, resource);', "@approvers"],
    ["@approvalTtlMs negative", '@approval("required") @approvalTtlMs("-5") permit(principal, action, resource);', "@approvalTtlMs"],
  ])("%s", (_n, policies, named) => {
    const problems = invalid({ policies });
    expect(problems.some((p) => p.includes(named))).toBe(true);
  });

  // Invariant: all problems are reported at once.
  it("reports every problem in one error", () => {
    const problems = invalid({ policies: '@quorum("0") @approval("required") permit(principal, action, resource); @approval("x") permit(principal, action, resource);' });
    expect(problems).toHaveLength(2);
  });
});

describe("schema", () => {
  // Invariant: a schema that does not parse, misses the types Writ passes, or rejects a policy, throws.
  it.each([
    ["does not parse", "namespace Writ { entity ; }", "parse"],
    ["invalid JSON text", '{ "Writ": ', "JSON"],
    ["no Writ namespace", "entity Tenant; entity Space in [Tenant];", "namespace Writ"],
    ["no Tenant", "namespace Writ { entity Space; }", "Tenant"],
    ["Space not in Tenant", "namespace Writ { entity Tenant; entity Space; }", "Space in [Tenant]"],
    ["an action on another resource", 'namespace Writ { entity Tenant; entity Space in [Tenant]; entity Doc; entity Agent; action "x" appliesTo { principal: [Agent], resource: [Doc], context: { params: {}, authority?: {}, approval: {} } }; }', 'action "x": resource'],
    ["an action without context", 'namespace Writ { entity Tenant; entity Space in [Tenant]; entity Agent; action "x" appliesTo { principal: [Agent], resource: [Space] }; }', 'action "x": context'],
    ["a context without approval", 'namespace Writ { entity Tenant; entity Space in [Tenant]; entity Agent; action "x" appliesTo { principal: [Agent], resource: [Space], context: { params: {}, authority?: {} } }; }', "approval"],
    ["a required authority", 'namespace Writ { entity Tenant; entity Space in [Tenant]; entity Agent; type C = { params: {}, authority: {}, approval: {} }; action "x" appliesTo { principal: [Agent], resource: [Space], context: C }; }', "authority?"],
  ])("%s", (_n, schema, named) => {
    const problems = invalid({ policies: "permit(principal, action, resource);", schema });
    expect(problems.join("\n")).toContain(named);
  });

  // Invariant: validation errors name the offending policy by its @id.
  it("a policy reading an undeclared attribute, or an unknown action, is named", () => {
    const problems = invalid({
      policies: `@id("reads-z") permit(principal, action == Writ::Action::"x", resource) when { context.params.z == 1 };
                 @id("unknown-action") permit(principal, action == Writ::Action::"nope", resource);
                 @id("fine") permit(principal, action == Writ::Action::"x", resource) when { context.params.n == 1 };`,
      schema: BASE_SCHEMA,
    });
    expect(problems.some((p) => p.startsWith("reads-z:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("unknown-action:"))).toBe(true);
    expect(problems.some((p) => p.startsWith("fine:"))).toBe(false);
  });

  // Invariant: the validator's strict mode makes optional attributes need a `has` guard.
  it("reading the optional authority without `has` is rejected", () => {
    const problems = invalid({ policies: '@id("unguarded") permit(principal, action, resource) when { context.authority.status == "active" };', schema: SCHEMA });
    expect(problems.some((p) => p.startsWith("unguarded:"))).toBe(true);
  });

  // Invariant: static entities are checked against the schema at construction.
  it("entities that do not match the schema", () => {
    const problems = invalid({ policies: POLICIES, schema: SCHEMA, entities: [{ uid: { type: "Writ::User", id: "x" }, attrs: { age: 3 }, parents: [] }] });
    expect(problems.join("\n")).toContain("entities");
  });

  // Invariant: warnings (a policy that can never apply) are surfaced, not thrown.
  it("warnings are kept on the prepared set", () => {
    const p = prepareCedarPolicySet({ policies: '@id("never") permit(principal, action == Writ::Action::"x", resource) when { 1 == 2 };', schema: BASE_SCHEMA });
    expect(p.warnings.some((w) => w.startsWith("never:"))).toBe(true);
  });

  // Invariant: a JSON schema (text or object) works like the Cedar text.
  it("accepts the JSON schema form", async () => {
    const json = { Writ: { entityTypes: { Tenant: {}, Space: { memberOfTypes: ["Tenant"] }, Agent: {} }, actions: { x: { appliesTo: { principalTypes: ["Agent"], resourceTypes: ["Space"], context: { type: "Record", attributes: { params: { type: "Record", attributes: { n: { type: "Long" } } }, authority: { type: "Record", attributes: {}, required: false }, approval: { type: "Record", attributes: { granted: { type: "Boolean" }, approvalId: { type: "String", required: false } } } } } } } } } };
    const policies = '@id("n1") permit(principal, action == Writ::Action::"x", resource) when { context.params.n == 1 };';
    for (const schema of [json, JSON.stringify(json, null, 2)]) {
      const e = cedarPolicy({ policies, schema });
      expect((await e.evaluate(input(request(ACTORS.bot, "x", { n: 1 }), "missing"))).reasons).toEqual(["n1"]);
      expect((await e.evaluate(input(request(ACTORS.bot, "x", { n: "1" }), "missing"))).result).toBe("DENY");
    }
  });
});

describe("policy ids", () => {
  // Invariant: a policy without @id is named by the id Cedar assigns to it in the text (policy<N>).
  it("unannotated policies get Cedar's own ids, in text order (past policy9)", async () => {
    const n = 13;
    const text = Array.from({ length: n }, (_, i) => `permit(principal == Writ::Agent::"a${i}", action, resource);`).join("\n");
    const e = cedarPolicy({ policies: text });
    expect(e.prepared.policyIds).toEqual(Array.from({ length: n }, (_, i) => `policy${i}`));
    for (let i = 0; i < n; i++) {
      const req = request({ type: "agent", id: `a${i}` }, "any", {});
      const raw = isAuthorized({ principal: { type: "Writ::Agent", id: `a${i}` }, action: { type: "Writ::Action", id: "any" }, resource: { type: "Writ::Space", id: "acme/prod" }, context: {}, policies: { staticPolicies: text }, entities: [] });
      if (raw.type !== "success") throw new Error("raw evaluation failed");
      expect((await e.evaluate(input(req))).reasons).toEqual(raw.response.diagnostics.reason);
      expect(raw.response.diagnostics.reason).toEqual([`policy${i}`]);
    }
  });

  it("mixes @id and assigned ids", () => {
    const e = cedarPolicy({ policies: 'permit(principal, action, resource); @id("named") forbid(principal, action, resource); permit(principal, action, resource);' });
    expect(e.prepared.policyIds).toEqual(["policy0", "named", "policy2"]);
  });

  // Invariant: construction is idempotent: the same set prepared twice evaluates the same way.
  it("preparing the same set twice shares one cached set", async () => {
    const a = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
    const b = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
    expect(a.prepared.cedar).toEqual(b.prepared.cedar);
    const req = request(ACTORS.alice, "payments.charge", { amount: 5, currency: "EUR" });
    expect(await a.evaluate(input(req))).toEqual(await b.evaluate(input(req)));
  });
});
