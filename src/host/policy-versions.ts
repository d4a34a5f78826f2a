/**
 * Policy versions per scope (docs/approvals.md, Versions per scope): activating a new version changes the
 * policyRef the boundary accepts for that scope, with an optional grace period for the previous
 * one, so decisions minted under an old policy are refused with DECISION_REF_MISMATCH. Prepared
 * Cedar sets are cached by policyRef; the active version is read from the store on every call so
 * every worker process sees an activation at once.
 */
import { WritError } from "../core/errors.js";
import { appendJournal, draft } from "../core/journal.js";
import type { PolicyEngine, PolicyInput, PolicyResult } from "../core/policy.js";
import type { Clock, CryptoPort } from "../core/ports.js";
import { readCommitted, type Store } from "../core/store.js";
import type { Actor, PolicyVersion, Scope } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { prepareCedarPolicySet, type PreparedCedarPolicySet } from "../policy/cedar-policy-set.js";
import "../policy/cedar-wasm-node.js";

export interface ActivateInput {
  policies: string;
  /** Cedar schema as JSON text. */
  schema?: string;
  /** Keep accepting decisions under the previous version this long. @defaultValue 0 (none) */
  graceMs?: number;
  by: Actor;
}

export interface VersionedPolicy extends PolicyEngine {
  /** Validates, stores and activates a new version for the scope; journaled with who did it. */
  activate(scope: Scope, input: ActivateInput): Promise<PolicyVersion>;
  list(scope: Scope): Promise<PolicyVersion[]>;
}

export interface VersionedPolicyOptions {
  store: Store;
  clock: Clock;
  crypto: CryptoPort;
  /** Used in scopes that have no version yet. @defaultValue deny everything */
  fallback?: PolicyEngine;
}

export function versionedCedarPolicy(o: VersionedPolicyOptions): VersionedPolicy {
  const prepared = new Map<string, PreparedCedarPolicySet>();
  const prepare = (v: PolicyVersion): PreparedCedarPolicySet => {
    let p = prepared.get(v.policyRef);
    if (!p) {
      p = prepareCedarPolicySet({ policies: v.policies, ...(v.schema !== undefined ? { schema: v.schema } : {}), crypto: o.crypto });
      if (p.policyRef !== v.policyRef) throw new WritError("INVALID_STATE", `stored policy version ${v.version} does not hash to its policyRef`);
      if (prepared.size > 256) prepared.delete(prepared.keys().next().value as string);
      prepared.set(v.policyRef, p);
    }
    return p;
  };
  const versions = (scope: Scope): Promise<PolicyVersion[]> => readCommitted(o.store, (tx) => tx.listPolicyVersions(scope));
  return {
    async evaluate(input: PolicyInput): Promise<PolicyResult> {
      const scope = { tenantId: input.request.tenantId, spaceId: input.request.spaceId };
      const active = (await versions(scope)).filter((v) => v.status === "active").at(-1);
      if (!active) {
        if (o.fallback) return o.fallback.evaluate(input);
        return { result: "DENY", reasons: ["no policy version is active in this scope"], policyRef: "none" };
      }
      try {
        return prepare(active).evaluate(input);
      } catch (e) {
        // A stored version that no longer prepares denies (fail closed) instead of failing forever.
        return { result: "DENY", reasons: [`policy version ${active.version} cannot be evaluated: ${e instanceof Error ? e.message : "unknown error"}`], policyRef: active.policyRef };
      }
    },
    async acceptedPolicyRefs(scope) {
      const now = o.clock.now();
      const all = await versions(scope);
      const refs = all.filter((v) => v.status === "active" || (v.status === "grace" && (v.graceUntil ?? 0) > now)).map((v) => v.policyRef);
      if (refs.length === 0 && o.fallback) return o.fallback.acceptedPolicyRefs(scope);
      return refs;
    },
    async activate(scope, input) {
      if (typeof input !== "object" || input === null || typeof input.policies !== "string" || input.policies.trim().length === 0) {
        throw new WritError("INVALID_ARGUMENT", "activate needs { policies, by }");
      }
      const problems = checkActor(input.by, "by");
      if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
      const graceMs = input.graceMs ?? 0;
      if (!Number.isFinite(graceMs) || graceMs < 0) throw new WritError("INVALID_ARGUMENT", "graceMs must be a non-negative number");
      // Validate before storing: a set that does not parse or validate is refused with its errors.
      let set: PreparedCedarPolicySet;
      try {
        set = prepareCedarPolicySet({ policies: input.policies, ...(input.schema !== undefined ? { schema: input.schema } : {}), crypto: o.crypto });
      } catch (e) {
        throw new WritError("INVALID_ARGUMENT", e instanceof Error ? e.message : "invalid policy set");
      }
      prepared.set(set.policyRef, set);
      const now = o.clock.now();
      return o.store.transact(async (tx) => {
        await tx.lock(scope, ["policy-versions"]);
        const all = await tx.listPolicyVersions(scope);
        for (const v of all) {
          if (v.status === "active") await tx.putPolicyVersion(scope, graceMs > 0 ? { ...v, status: "grace", graceUntil: now + graceMs } : { ...v, status: "retired" });
        }
        const next: PolicyVersion = {
          ...scope,
          version: (all.at(-1)?.version ?? 0) + 1,
          policyRef: set.policyRef,
          policies: input.policies,
          ...(input.schema !== undefined ? { schema: input.schema } : {}),
          status: "active",
          activatedAt: now,
          createdAt: now,
        };
        await tx.putPolicyVersion(scope, next);
        await appendJournal(tx, o.crypto, scope, [
          draft("policy.activated", [next.version], now, { policyRef: next.policyRef }, { version: next.version, graceMs, by: { type: input.by.type, id: input.by.id } }),
        ]);
        return next;
      });
    },
    list: versions,
  };
}
