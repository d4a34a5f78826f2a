/** Approvals: list, get, approve, deny, revoke. The approver is the API key's principal with the key's roles. */
import type { Approver } from "../../host/approvals.js";
import type { Caller } from "../auth.js";
import { notFound, type ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { ApprovalAnswer, ApprovalList, ApprovalListQuery, ApprovalPath, ApprovalVoteBody, ErrorBody, SpacePath } from "../schemas.js";

export function approver(caller: Caller, note: string | undefined): Approver {
  // The key's API roles plus the policy approver roles it was given (e.g. `finance`).
  return {
    actor: caller.actor,
    roles: [...caller.roles, ...(caller.key.approverRoles ?? [])],
    keyId: caller.key.keyId,
    actsFor: caller.key.actsFor ?? [],
    ...(note !== undefined ? { note } : {}),
  };
}

const VERBS = {
  approve: "Vote to approve (the approval is granted once its quorum is reached)",
  deny: "Deny: the invocation ends denied",
  revoke: "Revoke a pending or granted approval (a granted one is caught again at execution)",
} as const;

export function approvalRoutes(s: ServerContext): Route[] {
  const { approvals } = s.runtime.host;
  const act = (verb: keyof typeof VERBS): Route =>
    defineRoute({
      method: "post",
      path: `/v1/spaces/{spaceId}/approvals/{approvalId}/${verb}`,
      operationId: `${verb}Approval`,
      tag: "approvals",
      summary: VERBS[verb],
      description:
        "The approver is the API key's principal, with the key's roles; the approval's approver roles must include one of them (403 FORBIDDEN otherwise). Four eyes: the requesting actor, the principal and the key that submitted, and a key that may act for the requesting actor never approve or deny the request (403 FORBIDDEN).",
      access: { kind: "key", roles: ["approve"] },
      params: ApprovalPath,
      body: ApprovalVoteBody,
      bodyOptional: true,
      responses: {
        200: { description: "the approval after the vote", schema: ApprovalAnswer },
        409: { description: "INVALID_STATE: no longer pending, or this approver already voted; APPROVAL_CLOSED: its invocation ended without it (cancelled), the message says how and by whom", schema: ErrorBody },
      },
      async handle({ caller, params, body }) {
        const by = approver(caller, body.note);
        const approval = await approvals[verb](caller.scope, params.approvalId, by);
        return { status: 200, body: { approval } };
      },
    });
  return [
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/approvals",
      operationId: "listApprovals",
      tag: "approvals",
      summary: "List approvals (the approval inbox)",
      access: { kind: "key", roles: ["approve"] },
      params: SpacePath,
      query: ApprovalListQuery,
      responses: { 200: { description: "approvals", schema: ApprovalList } },
      async handle({ caller, query }) {
        const items = await approvals.list(caller.scope, { limit: query.limit ?? 100, ...(query.status ? { status: query.status } : {}) });
        return { status: 200, body: { items } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/approvals/{approvalId}",
      operationId: "getApproval",
      tag: "approvals",
      summary: "Get one approval",
      access: { kind: "key", roles: ["approve"] },
      params: ApprovalPath,
      responses: { 200: { description: "the approval", schema: ApprovalAnswer } },
      async handle({ caller, params }) {
        const approval = await approvals.get(caller.scope, params.approvalId);
        if (!approval) throw notFound("approval", params.approvalId);
        return { status: 200, body: { approval } };
      },
    }),
    act("approve"),
    act("deny"),
    act("revoke"),
  ];
}
