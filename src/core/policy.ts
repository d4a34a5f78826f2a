/** The PolicyEngine port (docs/approvals.md, Policy engine): evaluates a request under an authority (and approval, if any). */
import type { ActionRequest, Approval, Authority, DecisionResult, Scope } from "./types.js";
import type { MaybePromise } from "./boundary.js";

export interface PolicyInput {
  request: ActionRequest;
  /** Null when no authority with the request's ref exists in the scope. */
  authority: Authority | null;
  /** The approval granted for this request's digest, when there is one. */
  approval?: Approval | null;
}

export interface PolicyResult {
  result: DecisionResult;
  /** Determining policy ids and messages. */
  reasons: string[];
  /** Identifies the policy (set and schema) that decided; bound into the decision. */
  policyRef: string;
  /** For REQUIRE_APPROVAL: who may approve and how many must. */
  approval?: { approverRoles?: string[]; quorum?: number; ttlMs?: number };
}

export interface PolicyEngine {
  evaluate(input: PolicyInput): MaybePromise<PolicyResult>;
  /** Policy refs accepted at execution for a scope: the active one plus any grace set (check 6). */
  acceptedPolicyRefs(scope: Scope): MaybePromise<readonly string[]>;
}

/**
 * A PolicyEngine from a plain function: handy in tests and for simple deployments.
 * @example
 * const engine = functionPolicy("policy:v1", ({ request }) => request.params.amount < 100 ? "ALLOW" : "DENY");
 */
export function functionPolicy(
  policyRef: string,
  fn: (input: PolicyInput) => MaybePromise<DecisionResult | { result: DecisionResult; reasons?: string[]; approval?: PolicyResult["approval"] }>,
): PolicyEngine {
  return {
    async evaluate(input) {
      const r = await fn(input);
      if (typeof r === "string") return { result: r, reasons: [`${policyRef}: ${r}`], policyRef };
      const out: PolicyResult = { result: r.result, reasons: r.reasons ?? [`${policyRef}: ${r.result}`], policyRef };
      if (r.approval) out.approval = r.approval;
      return out;
    },
    acceptedPolicyRefs: () => [policyRef],
  };
}
