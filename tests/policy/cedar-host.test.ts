/**
 * The Cedar engine inside the durable host (memory store): ALLOW runs under a decision the boundary
 * accepts (its policyRef is the engine's), DENY ends the invocation with the policy's reasons, and
 * REQUIRE_APPROVAL opens an approval with the annotated approvers and quorum.
 */
import { describe, expect, it } from "vitest";
import { memoryStore } from "../../src/stores/memory/index.js";
import { cedarPolicy } from "../../src/policy/index.js";
import { grantAuthority, makeHostBench } from "../host/fixture.js";

const policies = `
@id("authority-required")
forbid (principal, action, resource)
unless { context has authority && context.authority.status == "active" && context.authority.coversAction };

@id("small-n")
permit (principal is Writ::Agent, action == Writ::Action::"one.idem", resource) when { context.params.n < 10 };

@id("big-n") @approval("required") @approvers("ops") @quorum("2")
permit (principal is Writ::Agent, action == Writ::Action::"one.idem", resource) when { context.params.n >= 10 && context.params.n < 100 };
`;

async function setup(grant = true) {
  const policy = cedarPolicy({ policies });
  const b = makeHostBench(memoryStore(), { policy });
  await b.store.migrate();
  if (grant) await grantAuthority(b, { actions: ["one.*"] });
  const run = async (n: number) => {
    const { invocation } = await b.host.submit(b.request({ params: { n } }));
    const statuses = await b.host.worker().runOnce();
    return { statuses, inv: (await b.host.get(b.scope, invocation.invocationId))! };
  };
  return { b, policy, run };
}

describe("cedar engine in the host", () => {
  // Invariant: an allowed request executes: the boundary accepts the engine's policyRef.
  it("ALLOW -> succeeded through the boundary", async () => {
    const { b, run } = await setup();
    const { statuses } = await run(1);
    expect(statuses).toEqual(["succeeded"]);
    expect(b.calls).toHaveLength(1);
    await b.store.close();
  });

  // Invariant: a denial ends the invocation with the engine's reasons and calls nothing.
  it("DENY -> denied with the reasons; a float param is denied before Cedar runs", async () => {
    const { b, run } = await setup();
    const none = await run(1000);
    expect(none.statuses).toEqual(["denied"]);
    expect(none.inv.reasons?.[0]).toMatch(/^no policy permits agent "bot" to do "one.idem"/);
    const float = await run(1.5);
    expect(float.statuses).toEqual(["denied"]);
    expect(float.inv.reasons?.[0]).toMatch(/^cannot evaluate: context\.params\.n: /);
    expect(b.calls).toHaveLength(0);
    await b.store.close();
  });

  it("no authority -> denied by authority-required", async () => {
    const { b, run } = await setup(false);
    const { statuses, inv } = await run(1);
    expect(statuses).toEqual(["denied"]);
    expect(inv.reasons?.[0]).toBe("authority-required");
    await b.store.close();
  });

  // Invariant: REQUIRE_APPROVAL opens an approval bound to the digest with the annotated spec.
  it("REQUIRE_APPROVAL -> awaiting_approval with approvers and quorum from the annotations", async () => {
    const { b, run } = await setup();
    const { statuses, inv } = await run(50);
    expect(statuses).toEqual(["awaiting_approval"]);
    const ap = await b.store.transact((tx) => tx.getApproval(b.scope, inv.approvalId!));
    expect(ap).toMatchObject({ status: "pending", approverRoles: ["ops"], quorum: 2, requestDigest: inv.requestDigest });
    expect(b.calls).toHaveLength(0);
    await b.store.close();
  });
});
