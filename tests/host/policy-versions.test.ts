/**
 * Policy versions per scope with Cedar, on every store. Invariants: activating a version changes the
 * accepted policyRef at once; a decision minted under the previous version is refused
 * (DECISION_REF_MISMATCH) unless it is within the configured grace; scopes do not see each other's
 * versions; an unsound policy set is refused and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { versionedCedarPolicy, type VersionedPolicy } from "../../src/host/policy-versions.js";
import { allStoreFactories } from "../helpers/stores.js";
import { crypto, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const V1 = `@id("allow-all") permit(principal, action, resource);`;
const V2 = `@id("allow-small") permit(principal, action, resource) when { context.params.n < 100 };`;
const by = { type: "user" as const, id: "policy-admin" };

for (const factory of allStoreFactories()) {
  describe(`policy versions on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    function bench(): { b: HostBench; policy: VersionedPolicy; late: { fn: (() => Promise<void>) | null } } {
      const late: { fn: (() => Promise<void>) | null } = { fn: null };
      const holder: { b?: HostBench } = {};
      const versioned = versionedCedarPolicy({ store, clock: { now: () => holder.b!.clock.now(), setTimer: () => () => undefined }, crypto });
      const policy: VersionedPolicy = {
        ...versioned,
        async evaluate(input) {
          const r = await versioned.evaluate(input);
          if (late.fn) await late.fn();
          return r;
        },
      };
      holder.b = makeHostBench(store, { policy });
      return { b: holder.b, policy, late };
    }

    it("a scope without a version denies", async () => {
      const { b } = bench();
      await grantAuthority(b);
      await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
    });

    it("activation changes the accepted ref; a decision under the old version is refused", async () => {
      const { b, policy, late } = bench();
      await grantAuthority(b);
      const v1 = await policy.activate(b.scope, { policies: V1, by });
      expect(await policy.acceptedPolicyRefs(b.scope)).toEqual([v1.policyRef]);
      const { invocation } = await b.host.submit(b.request());
      late.fn = async () => {
        late.fn = null;
        await policy.activate(b.scope, { policies: V2, by });
      };
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.reasons?.[0]).toContain("DECISION_REF_MISMATCH");
      expect(b.calls).toHaveLength(0);
      const versions = await policy.list(b.scope);
      expect(versions.map((v) => [v.version, v.status])).toEqual([
        [1, "retired"],
        [2, "active"],
      ]);
      // Under the new version, the same kind of request is evaluated by the new policy.
      await b.host.submit(b.request({ params: { n: 5 } }));
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      await b.host.submit(b.request({ params: { n: 500 } }));
      expect(await b.host.worker().runOnce()).toEqual(["denied"]);
    });

    it("within the grace period a decision under the previous version still executes", async () => {
      const { b, policy, late } = bench();
      await grantAuthority(b);
      await policy.activate(b.scope, { policies: V1, by });
      await b.host.submit(b.request());
      late.fn = async () => {
        late.fn = null;
        await policy.activate(b.scope, { policies: V2, by, graceMs: 60_000 });
      };
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      b.clock.advance(60_001);
      expect(await policy.acceptedPolicyRefs(b.scope)).toHaveLength(1);
    });

    it("an unsound policy set is refused and changes nothing; scopes are separate", async () => {
      const { b, policy } = bench();
      await expect(policy.activate(b.scope, { policies: "permit(principal, action", by })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(await policy.list(b.scope)).toEqual([]);
      await policy.activate(b.scope, { policies: V1, by });
      expect(await policy.list({ tenantId: "elsewhere", spaceId: "s" })).toEqual([]);
      expect(await policy.acceptedPolicyRefs({ tenantId: "elsewhere", spaceId: "s" })).toEqual([]);
    });
  });
}
