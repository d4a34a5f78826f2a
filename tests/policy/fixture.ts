/** A policy set, schema, entities and request builders shared by the Cedar engine tests. */
import type { PolicyInput } from "../../src/core/policy.js";
import type { ActionRequest, Actor, Approval, Authority, Json, Scope } from "../../src/core/types.js";
import type { CedarEntity } from "../../src/policy/index.js";

export const SCHEMA = `namespace Writ {
  entity Tenant;
  entity Space in [Tenant];
  entity Role;
  entity Agent, User, Service in [Role];
  type Actor = { type: String, id: String };
  type Constraints = { maxAmount?: Long };
  type Authority = { ref: String, status: String, actions: Set<String>, coversAction: Bool, grantor: Actor, constraints: Constraints };
  type Approval = { granted: Bool, approvalId?: String };
  action "payments.refund", "payments.charge" appliesTo {
    principal: [Agent, User, Service], resource: [Space],
    context: { params: { amount: Long, currency: String, note?: String }, authority?: Authority, approval: Approval }
  };
  action "repo.delete" appliesTo {
    principal: [Agent, User, Service], resource: [Space],
    context: { params: { repo: String }, authority?: Authority, approval: Approval }
  };
  action "reports.read" appliesTo {
    principal: [Agent, User, Service], resource: [Space],
    context: { params: { report: String, tags?: Set<String> }, authority?: Authority, approval: Approval }
  };
}`;

export const POLICIES = `
@id("authority-required")
forbid (principal, action, resource)
unless { context has authority && context.authority.status == "active" && context.authority.coversAction };

@id("refund-small")
permit (principal is Writ::Agent, action == Writ::Action::"payments.refund", resource in Writ::Tenant::"acme")
when { context.params.amount <= 100 };

@id("refund-large") @approval("required") @approvers("finance") @quorum("2")
permit (principal, action == Writ::Action::"payments.refund", resource in Writ::Tenant::"acme")
when { context.params.amount > 100 };

@id("refund-over-limit")
forbid (principal, action == Writ::Action::"payments.refund", resource)
when { context has authority && context.authority.constraints has maxAmount && context.params.amount > context.authority.constraints.maxAmount };

@id("charge-billing")
permit (principal in Writ::Role::"billing", action == Writ::Action::"payments.charge", resource)
when { ["EUR", "USD"].contains(context.params.currency) };

@id("repo-delete") @approval("required") @approvers("owners")
permit (principal is Writ::User, action == Writ::Action::"repo.delete", resource);

@id("no-prod-deletes")
forbid (principal, action == Writ::Action::"repo.delete", resource)
when { context.params.repo like "prod-*" };

@id("reports-read")
permit (principal, action == Writ::Action::"reports.read", resource)
unless { context.params has tags && context.params.tags.contains("secret") };
`;

export const ENTITIES: CedarEntity[] = [
  { uid: { type: "Writ::User", id: "alice" }, attrs: {}, parents: [{ type: "Writ::Role", id: "billing" }] },
  { uid: { type: "Writ::Service", id: "cron" }, attrs: {}, parents: [{ type: "Writ::Role", id: "billing" }] },
];

export const ACTORS = {
  bot: { type: "agent", id: "bot" },
  alice: { type: "user", id: "alice" },
  bob: { type: "user", id: "bob" },
  cron: { type: "service", id: "cron" },
} as const satisfies Record<string, Actor>;
export type ActorName = keyof typeof ACTORS;

export const ACME: Scope = { tenantId: "acme", spaceId: "prod" };

export const AUTHORITY_STATES = ["active", "narrow", "suspended", "revoked", "missing", "foreign", "other-scope"] as const;
export type AuthorityState = (typeof AUTHORITY_STATES)[number];

let keys = 0;
export function request(actor: Actor, action: string, params: { [k: string]: Json }, scope: Scope = ACME): ActionRequest {
  return { ...scope, action, actionVersion: "1", actor, authorityRef: "auth-1", params, idempotencyKey: `key-${++keys}` };
}

/** The authority for a request in a given state (`narrow` covers only `reports.*`). */
export function authorityFor(req: ActionRequest, state: AuthorityState): Authority | null {
  if (state === "missing") return null;
  const base: Authority = {
    tenantId: req.tenantId,
    spaceId: req.spaceId,
    authorityRef: req.authorityRef,
    principal: req.actor,
    grantor: { type: "user", id: "grantor" },
    actions: ["*"],
    constraints: { maxAmount: 1000 },
    status: "active",
    createdAt: 0,
    updatedAt: 0,
  };
  switch (state) {
    case "active":
      return base;
    case "narrow":
      return { ...base, actions: ["reports.*"] };
    case "suspended":
    case "revoked":
      return { ...base, status: state };
    case "foreign":
      return { ...base, principal: { type: "agent", id: "mallory" } };
    case "other-scope":
      return { ...base, spaceId: `${req.spaceId}-other` };
  }
}

export function input(req: ActionRequest, state: AuthorityState = "active", approval?: Approval | null): PolicyInput {
  return { request: req, authority: authorityFor(req, state), ...(approval !== undefined ? { approval } : {}) };
}

export function approvalFor(req: ActionRequest, requestDigest: string, patch: Partial<Approval> = {}): Approval {
  return {
    tenantId: req.tenantId,
    spaceId: req.spaceId,
    approvalId: "apr_1",
    requestDigest,
    requestedBy: req.actor,
    approverRoles: ["finance"],
    quorum: 2,
    votes: [],
    status: "approved",
    expiresAt: 2_000_000_000_000,
    createdAt: 0,
    updatedAt: 0,
    ...patch,
  };
}
