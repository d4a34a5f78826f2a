/** policyRef: a hash of the policy text and schema, stable across calls and processes. */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cedarPolicy, policySetRef, prepareCedarPolicySet } from "../../src/policy/index.js";
import { fcRun } from "../helpers/seed.js";
import { ACTORS, ENTITIES, POLICIES, SCHEMA, input, request } from "./fixture.js";

const REF = /^cedar:sha256:[A-Za-z0-9_-]{43}$/;
// A fixed input's ref, pinned so any change to the hashing shows: sha256 (base64url) of the JCS text
// {"policies":"permit(principal, action, resource);","schema":null}.
const PINNED = { policies: "permit(principal, action, resource);", ref: "cedar:sha256:G8R6u8F6_zqY3FuCjxtzXd_vx8De2px-jgvlW1nDBMM" };

describe("policyRef", () => {
  // Invariant: the engine, its prepared set, its decisions and acceptedPolicyRefs share one ref.
  it("is carried by every decision and is the only accepted ref", async () => {
    const e = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
    expect(e.policyRef).toMatch(REF);
    expect(e.policyRef).toBe(policySetRef(POLICIES, SCHEMA));
    expect(e.prepared.policyRef).toBe(e.policyRef);
    expect(await e.acceptedPolicyRefs({ tenantId: "any", spaceId: "where" })).toEqual([e.policyRef]);
    for (const [actor, action, params] of [[ACTORS.bot, "payments.refund", { amount: 5, currency: "EUR" }], [ACTORS.bot, "payments.refund", { amount: 5.5, currency: "EUR" }], [ACTORS.bob, "repo.delete", { repo: "x" }]] as const) {
      expect((await e.evaluate(input(request(actor, action, params)))).policyRef).toBe(e.policyRef);
    }
  });

  // Invariant: the ref is a pure function of (policies, schema), equal in another process.
  it("is pinned, and equal in a fresh process", () => {
    expect(policySetRef(PINNED.policies)).toBe(PINNED.ref);
    const jcs = `{"policies":${JSON.stringify(PINNED.policies)},"schema":null}`;
    expect(PINNED.ref).toBe("cedar:sha256:" + createHash("sha256").update(jcs).digest("base64url"));
    const root = fileURLToPath(new URL("../../", import.meta.url));
    const code = `import { policySetRef } from "./src/policy/index.ts"; console.log(policySetRef(${JSON.stringify(POLICIES)}, ${JSON.stringify(SCHEMA)}));`;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: root, encoding: "utf8" });
    expect(child.stderr).toBe("");
    expect(child.stdout.trim()).toBe(policySetRef(POLICIES, SCHEMA));
  });

  // Invariant: any change to the policies or the schema changes the ref; a JSON schema is hashed as JSON.
  it("changes with the policies and the schema, not with JSON formatting", () => {
    const base = policySetRef(POLICIES, SCHEMA);
    expect(policySetRef(POLICIES + " ", SCHEMA)).not.toBe(base);
    expect(policySetRef(POLICIES, SCHEMA + "\n")).not.toBe(base);
    expect(policySetRef(POLICIES)).not.toBe(base);
    expect(policySetRef(POLICIES, "")).not.toBe(policySetRef(POLICIES));
    const json = { Writ: { entityTypes: { Tenant: {}, Space: { memberOfTypes: ["Tenant"] } }, actions: {} } };
    const text = JSON.stringify(json);
    expect(policySetRef(POLICIES, text)).toBe(policySetRef(POLICIES, json));
    expect(policySetRef(POLICIES, JSON.stringify(json, null, 4))).toBe(policySetRef(POLICIES, json));
    expect(policySetRef(POLICIES, { Writ: { actions: {}, entityTypes: { Space: { memberOfTypes: ["Tenant"] }, Tenant: {} } } })).toBe(policySetRef(POLICIES, json));
    expect(policySetRef(POLICIES, { ...json, Other: { entityTypes: {}, actions: {} } })).not.toBe(policySetRef(POLICIES, json));
  });

  it("entities are data, not policy: they do not change the ref", () => {
    expect(cedarPolicy({ policies: POLICIES, entities: ENTITIES }).policyRef).toBe(cedarPolicy({ policies: POLICIES }).policyRef);
  });

  // Property: deterministic, well-formed, and distinct inputs give distinct refs.
  it("is deterministic and injective on random inputs", () => {
    const schema = fc.option(fc.string({ maxLength: 40 }).filter((s) => !s.trimStart().startsWith("{")), { nil: undefined });
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), schema, fc.string({ maxLength: 60 }), schema, (p1, s1, p2, s2) => {
        const a = policySetRef(p1, s1);
        expect(a).toMatch(REF);
        expect(policySetRef(p1, s1)).toBe(a);
        if (p1 !== p2 || s1 !== s2) expect(policySetRef(p2, s2)).not.toBe(a);
      }),
      fcRun("cedar-ref", "policySetRef injective", 300),
    );
  });

  // Invariant: a versioned engine can hold several prepared sets side by side, each deciding under its own ref.
  it("several prepared sets live side by side, keyed by ref", async () => {
    const v1 = prepareCedarPolicySet({ policies: '@id("v1") permit(principal, action, resource);' });
    const v2 = prepareCedarPolicySet({ policies: '@id("v2") forbid(principal, action, resource);' });
    const byRef = new Map([v1, v2].map((p) => [p.policyRef, p]));
    expect(byRef.size).toBe(2);
    const i = input(request(ACTORS.bot, "x", {}));
    expect(byRef.get(v1.policyRef)!.evaluate(i)).toMatchObject({ result: "ALLOW", reasons: ["v1"], policyRef: v1.policyRef });
    expect(byRef.get(v2.policyRef)!.evaluate(i)).toMatchObject({ result: "DENY", reasons: ["v2"], policyRef: v2.policyRef });
    expect(v1.evaluate(i).result).toBe("ALLOW");
  });
});
