/** `cedarPolicy`: the built-in PolicyEngine on Cedar (docs/policy.md). */
import type { MaybePromise } from "../core/boundary.js";
import { WritError } from "../core/errors.js";
import type { PolicyEngine, PolicyInput, PolicyResult } from "../core/policy.js";
import type { CryptoPort } from "../core/ports.js";
import { prepareCedarPolicySet, type CedarEntity, type CedarSchemaInput, type PreparedCedarPolicySet } from "./cedar-policy-set.js";
import { normalSchema } from "./cedar-schema.js";
import { checkParseEntities } from "./cedar-wasm.js";

export interface CedarPolicyOptions {
  /** Cedar policy text: static policies, optionally annotated (`@id`, `@approval`, …; see docs/policy.md). */
  policies: string;
  /**
   * Cedar schema (Cedar text, JSON text or a JSON object). Policies are validated against it at
   * construction and requests before each evaluation.
   * @defaultValue none: no validation
   */
  schema?: CedarSchemaInput;
  /**
   * Entities given to every evaluation (roles, groups, attributes of actors), or a function that
   * loads them for an input. The request's space and tenant are added by the engine; do not pass
   * them. A static list is checked against the schema at construction. A function that throws makes
   * `evaluate` reject (the host abandons the invocation and recovery retries it): a loading failure
   * is not a policy decision. Entities are data, not policy: they are not part of the policyRef.
   * @defaultValue []
   */
  entities?: readonly CedarEntity[] | ((input: PolicyInput) => MaybePromise<readonly CedarEntity[]>);
  /** Hashes the policyRef and request digests for approvals. @defaultValue the installed Cedar runtime's (Node: node:crypto) */
  crypto?: CryptoPort;
}

/** A PolicyEngine on one prepared Cedar policy set. */
export interface CedarPolicyEngine extends PolicyEngine {
  /** The policyRef every decision of this engine carries. */
  readonly policyRef: string;
  readonly prepared: PreparedCedarPolicySet;
}

/**
 * The built-in policy engine: Cedar policies, parsed and validated once, evaluated per request.
 * principal = the actor (`Writ::Agent::"bot-7"`), action = `Writ::Action::"<action id>"`,
 * resource = the scope (`Writ::Space::"<tenantId>/<spaceId>"`, in `Writ::Tenant::"<tenantId>"`),
 * context = `{ params, authority?, approval }`. Fails closed: any error denies, with the error as
 * the reason. Throws `WritError("INVALID_OPTION")` for a policy set or schema that is not sound.
 * @example
 * const policy = cedarPolicy({ policies: `
 *   @id("small-refunds")
 *   permit(principal is Writ::Agent, action == Writ::Action::"payments.refund", resource)
 *   when { context.params.amount <= 100 };
 *   @id("large-refunds") @approval("required") @approvers("finance")
 *   permit(principal is Writ::Agent, action == Writ::Action::"payments.refund", resource)
 *   when { context.params.amount > 100 };` });
 * const host = createHost({ store, actions, connectors, policy, signingKey });
 */
export function cedarPolicy(options: CedarPolicyOptions): CedarPolicyEngine {
  if (typeof options !== "object" || options === null) throw new WritError("INVALID_OPTION", "cedarPolicy: options must be an object");
  const prepared = prepareCedarPolicySet({ policies: options.policies, ...(options.schema !== undefined ? { schema: options.schema } : {}), ...(options.crypto ? { crypto: options.crypto } : {}) });
  const accepted: readonly string[] = Object.freeze([prepared.policyRef]);
  const ents = options.entities;
  let evaluate: (input: PolicyInput) => MaybePromise<PolicyResult>;
  if (ents === undefined) {
    evaluate = (input) => prepared.evaluate(input);
  } else if (typeof ents === "function") {
    evaluate = async (input) => prepared.evaluate(input, await ents(input));
  } else if (Array.isArray(ents)) {
    const list: readonly CedarEntity[] = Object.freeze([...ents]);
    const check = checkParseEntities({ entities: [...list], schema: normalSchema(options.schema)?.cedar ?? null });
    if (check.type === "failure") {
      throw new WritError("INVALID_OPTION", `cedarPolicy: entities do not parse${options.schema !== undefined ? " against the schema" : ""}: ${check.errors.map((e) => e.message).join("; ")}`);
    }
    evaluate = (input) => prepared.evaluate(input, list);
  } else {
    throw new WritError("INVALID_OPTION", "cedarPolicy: entities must be an array of Cedar entities or a function returning them");
  }
  return Object.freeze({
    policyRef: prepared.policyRef,
    prepared,
    evaluate,
    acceptedPolicyRefs: () => accepted,
  });
}
