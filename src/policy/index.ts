/** `writ/cedar`: the built-in Cedar policy engine (docs/policy.md), on cedar-wasm's Node build (loaded on first use). */
import "./cedar-wasm-node.js";
export { cedarPolicy, type CedarPolicyEngine, type CedarPolicyOptions } from "./cedar-engine.js";
export {
  policySetRef,
  prepareCedarPolicySet,
  type CedarEntity,
  type CedarSchemaInput,
  type PrepareCedarPolicySetOptions,
  type PreparedCedarPolicySet,
} from "./cedar-policy-set.js";
export { ACTOR_ENTITY_TYPES, CEDAR_NAMESPACE, actionEntity, actorEntity, spaceEntity, tenantEntity } from "./cedar-request.js";
export { globMatch, globsCover } from "./glob.js";
