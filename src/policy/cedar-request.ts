/**
 * How a Writ request becomes a Cedar request (documented in docs/policy.md):
 *
 * | Cedar     | Writ                                                                          |
 * |-----------|-------------------------------------------------------------------------------|
 * | principal | the actor: `Writ::Agent::"<id>"`, `Writ::User::"<id>"`, `Writ::Service::"<id>"` |
 * | action    | `Writ::Action::"<action id>"`                                                 |
 * | resource  | the scope: `Writ::Space::"<tenantId>/<spaceId>"`, child of `Writ::Tenant::"<tenantId>"` |
 * | context   | `{ params, authority?, approval: { granted, approvalId? } }`                  |
 */
import type { PolicyInput } from "../core/policy.js";
import type { Actor, ActorType, Approval, Authority, Scope } from "../core/types.js";
import type { CedarValueJson, EntityJson, TypeAndId } from "./cedar-wasm.js";
import { toCedarRecord } from "./cedar-values.js";
import { globsCover } from "./glob.js";

/** The Cedar namespace of every entity type and action Writ passes. */
export const CEDAR_NAMESPACE = "Writ";

/** Entity type of each actor type. */
export const ACTOR_ENTITY_TYPES: Readonly<Record<ActorType, string>> = Object.freeze({
  agent: "Writ::Agent",
  user: "Writ::User",
  service: "Writ::Service",
});

export const ACTION_ENTITY_TYPE = "Writ::Action";
export const SPACE_ENTITY_TYPE = "Writ::Space";
export const TENANT_ENTITY_TYPE = "Writ::Tenant";

/** The principal for an actor, e.g. `{ type: "Writ::Agent", id: "bot-7" }`. */
export function actorEntity(actor: Actor): TypeAndId {
  const type = Object.hasOwn(ACTOR_ENTITY_TYPES, actor.type) ? ACTOR_ENTITY_TYPES[actor.type] : undefined;
  if (type === undefined || typeof actor.id !== "string") throw new TypeError(`actor type must be one of agent, user, service with a string id`);
  return { type, id: actor.id };
}

/** The Cedar action for a Writ action id, e.g. `Writ::Action::"payments.refund"`. */
export function actionEntity(actionId: string): TypeAndId {
  return { type: ACTION_ENTITY_TYPE, id: actionId };
}

/** `/` and `%` in ids are percent-encoded so `<tenantId>/<spaceId>` names exactly one scope. */
function escapeIdPart(s: string): string {
  return s.includes("%") || s.includes("/") ? s.replace(/%/g, "%25").replace(/\//g, "%2F") : s;
}

/** The resource for a scope, e.g. `Writ::Space::"acme/prod"`. */
export function spaceEntity(scope: Scope): TypeAndId {
  return { type: SPACE_ENTITY_TYPE, id: `${escapeIdPart(scope.tenantId)}/${escapeIdPart(scope.spaceId)}` };
}

/** The tenant a space belongs to, e.g. `Writ::Tenant::"acme"`. */
export function tenantEntity(scope: Scope): TypeAndId {
  return { type: TENANT_ENTITY_TYPE, id: scope.tenantId };
}

/** An authority is shown to policies only when it is the request's: same scope and ref, held by the actor. */
export function authorityBelongs(a: Authority | null | undefined, input: PolicyInput): a is Authority {
  const r = input.request;
  return (
    !!a &&
    a.tenantId === r.tenantId &&
    a.spaceId === r.spaceId &&
    a.authorityRef === r.authorityRef &&
    a.principal?.type === r.actor.type &&
    a.principal?.id === r.actor.id
  );
}

/** An approval is valid for the request when approved, in the request's scope, for its digest. */
export function approvalGranted(ap: Approval | null | undefined, input: PolicyInput, requestDigest: () => string): ap is Approval {
  const r = input.request;
  return !!ap && ap.status === "approved" && ap.tenantId === r.tenantId && ap.spaceId === r.spaceId && ap.requestDigest === requestDigest();
}

/**
 * The `context` record. Throws `CedarValueError` when params or constraints are not Cedar values.
 * `authority` is left out when there is none (or it is not the request's): guard with `context has authority`.
 */
export function buildContext(input: PolicyInput, approval: Approval | null): Record<string, CedarValueJson> {
  const { request } = input;
  const ctx: Record<string, CedarValueJson> = {
    params: toCedarRecord(request.params, "context.params"),
    approval: approval ? { granted: true, approvalId: approval.approvalId } : { granted: false },
  };
  const a = input.authority;
  if (authorityBelongs(a, input)) {
    ctx.authority = {
      ref: a.authorityRef,
      status: a.status,
      actions: Array.isArray(a.actions) ? a.actions.filter((x) => typeof x === "string") : [],
      coversAction: Array.isArray(a.actions) && globsCover(a.actions, request.action),
      grantor: { type: a.grantor.type, id: a.grantor.id },
      constraints: toCedarRecord(a.constraints ?? {}, "context.authority.constraints"),
    };
  }
  return ctx;
}

/** The entities Writ adds to every call: the request's space, child of its tenant. */
export function scopeEntities(scope: Scope): EntityJson[] {
  return [{ uid: spaceEntity(scope), attrs: {}, parents: [tenantEntity(scope)] }];
}
