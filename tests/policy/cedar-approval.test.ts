/**
 * `@approval("required")`: a determining permit carrying it yields REQUIRE_APPROVAL unless a valid
 * approval (approved, same scope, bound to this request's digest) is supplied; the approval spec
 * comes from `@approvers`, `@quorum` and `@approvalTtlMs`.
 */
import { describe, expect, it } from "vitest";
import { computeRequestDigest } from "../../src/core/digest.js";
import type { CryptoPort } from "../../src/core/ports.js";
import { APPROVAL_STATUSES } from "../../src/core/types.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { cedarPolicy } from "../../src/policy/index.js";
import { ACTORS, ENTITIES, POLICIES, SCHEMA, approvalFor, input, request } from "./fixture.js";

const crypto = defaultCrypto();
const engine = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
const digest = (r: Parameters<typeof computeRequestDigest>[1]): string => computeRequestDigest(crypto, r);
const large = () => request(ACTORS.bot, "payments.refund", { amount: 500, currency: "EUR" });

describe("approval annotations", () => {
  // Invariant: without an approval, the annotated permit asks for one, with the annotated spec.
  it("@approval(required) -> REQUIRE_APPROVAL with approvers and quorum from annotations", async () => {
    const out = await engine.evaluate(input(large(), "active"));
    expect(out).toEqual({ result: "REQUIRE_APPROVAL", reasons: ["refund-large"], policyRef: engine.policyRef, approval: { approverRoles: ["finance"], quorum: 2 } });
    const del = await engine.evaluate(input(request(ACTORS.alice, "repo.delete", { repo: "docs" }), "active"));
    expect(del.approval).toEqual({ approverRoles: ["owners"] });
  });

  // Invariant: a matching approved approval turns it into ALLOW, naming the same policy.
  it("a matching approved approval -> ALLOW", async () => {
    const req = large();
    const out = await engine.evaluate(input(req, "active", approvalFor(req, digest(req))));
    expect(out).toEqual({ result: "ALLOW", reasons: ["refund-large"], policyRef: engine.policyRef });
  });

  // Invariant: an approval bound to another request's digest does not count.
  it("an approval for another digest -> still REQUIRE_APPROVAL", async () => {
    const req = large();
    const other = { ...req, params: { amount: 501, currency: "EUR" } };
    const out = await engine.evaluate(input(req, "active", approvalFor(req, digest(other))));
    expect(out.result).toBe("REQUIRE_APPROVAL");
    expect(out.reasons).toEqual(["refund-large"]);
    const sameParamsOtherKey = { ...req, idempotencyKey: `${req.idempotencyKey}-2` };
    expect((await engine.evaluate(input(req, "active", approvalFor(req, digest(sameParamsOtherKey))))).result).toBe("REQUIRE_APPROVAL");
  });

  // Invariant: only status "approved" counts.
  it.each(APPROVAL_STATUSES.filter((s) => s !== "approved"))("an approval that is %s -> still REQUIRE_APPROVAL", async (status) => {
    const req = large();
    const out = await engine.evaluate(input(req, "active", approvalFor(req, digest(req), { status })));
    expect(out.result).toBe("REQUIRE_APPROVAL");
  });

  // Invariant: an approval from another scope does not count, even for an equal digest.
  it("an approval recorded in another scope -> still REQUIRE_APPROVAL", async () => {
    const req = large();
    const out = await engine.evaluate(input(req, "active", approvalFor(req, digest(req), { spaceId: "elsewhere" })));
    expect(out.result).toBe("REQUIRE_APPROVAL");
  });

  // Invariant: an approval never overrides a forbid, nor a missing authority.
  it("an approval does not lift a forbid", async () => {
    const req = request(ACTORS.bot, "payments.refund", { amount: 5000, currency: "EUR" });
    expect((await engine.evaluate(input(req, "active", approvalFor(req, digest(req))))).reasons).toEqual(["refund-over-limit"]);
    const req2 = large();
    const out = await engine.evaluate(input(req2, "suspended", approvalFor(req2, digest(req2))));
    expect(out.result).toBe("DENY");
    expect(out.reasons[0]).toBe("authority-required");
  });

  // Invariant: the digest is computed with the injected crypto port, and only when an approval is supplied.
  it("uses the crypto option for the request digest, lazily", async () => {
    let hashes = 0;
    const counting: CryptoPort = { ...crypto, sha256: (d) => (hashes++, crypto.sha256(d)) };
    const e = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES, crypto: counting });
    const req = large();
    const before = hashes;
    expect((await e.evaluate(input(req, "active"))).result).toBe("REQUIRE_APPROVAL");
    expect(hashes).toBe(before);
    expect((await e.evaluate(input(req, "active", approvalFor(req, digest(req))))).result).toBe("ALLOW");
    expect(hashes).toBe(before + 1);
  });
});

describe("approval state in context", () => {
  const policies = `
    @id("approved-only") permit (principal, action == Writ::Action::"ops.run", resource) when { context.approval.granted };
    @id("named-approval") permit (principal, action == Writ::Action::"ops.named", resource)
      when { context.approval has approvalId && context.approval.approvalId == "apr_1" };`;
  const e = cedarPolicy({ policies });

  // Invariant: policies see approval.granted / approvalId only for a valid approval.
  it("context.approval.granted and approvalId reflect a valid approval only", async () => {
    const req = request(ACTORS.bot, "ops.run", {});
    expect((await e.evaluate(input(req))).result).toBe("DENY");
    expect((await e.evaluate(input(req, "active", approvalFor(req, "sha256:other")))).result).toBe("DENY");
    expect(await e.evaluate(input(req, "active", approvalFor(req, digest(req))))).toMatchObject({ result: "ALLOW", reasons: ["approved-only"] });
    const named = request(ACTORS.bot, "ops.named", {});
    expect((await e.evaluate(input(named, "active", approvalFor(named, digest(named), { approvalId: "apr_2" })))).result).toBe("DENY");
    expect((await e.evaluate(input(named, "active", approvalFor(named, digest(named))))).result).toBe("ALLOW");
  });
});

describe("several approval policies determine together", () => {
  const policies = `
    @id("a") @approval("required") @approvers("finance, ops") @quorum("2") @approvalTtlMs("60000")
    permit (principal, action == Writ::Action::"x", resource);
    @id("b") @approval("required") @approvers("ops,security") @quorum("3") @approvalTtlMs("30000")
    permit (principal, action == Writ::Action::"x", resource);
    @id("c") @approval("required")
    permit (principal, action == Writ::Action::"x", resource);
    @id("plain") permit (principal, action == Writ::Action::"x", resource);`;
  const e = cedarPolicy({ policies });

  // Invariant: every requirement holds at once: highest quorum, shortest ttl, roles every policy accepts;
  // a permit without the annotation does not bypass the ones with it.
  it("merges the specs; an unannotated permit does not bypass them", async () => {
    const req = request(ACTORS.bot, "x", {});
    const out = await e.evaluate(input(req));
    expect(out.result).toBe("REQUIRE_APPROVAL");
    expect(out.reasons).toEqual(["a", "b", "c"]);
    expect(out.approval).toEqual({ approverRoles: ["ops"], quorum: 3, ttlMs: 30000 });
    const ok = await e.evaluate(input(req, "active", approvalFor(req, digest(req))));
    expect(ok).toMatchObject({ result: "ALLOW", reasons: ["a", "b", "c", "plain"] });
  });
});
