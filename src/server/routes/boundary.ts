/**
 * Boundary execute: a request plus a decision minted elsewhere goes through the execution boundary
 * (docs/boundary.md). Malformed input is refused at the edge (400, nothing recorded); a well-formed request
 * under a decision that fails a check is refused BY THE BOUNDARY, which records the attempt
 * (REFUSED with its reason code) — answered 200 with that attempt.
 */
import { admitRequest } from "../../core/admission.js";
import { parseDecision } from "../../core/decision.js";
import { ApiError } from "../errors.js";
import { requestOf, type ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { AttemptAnswer, ErrorBody, ExecuteBody, KeyResolutionAnswer, ResolveKeyBody, SpacePath } from "../schemas.js";

export function boundaryRoutes(s: ServerContext): Route[] {
  const { host } = s.runtime;
  return [
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/boundary/execute",
      operationId: "boundaryExecute",
      tag: "boundary",
      summary: "Execute a request under a decision minted elsewhere",
      description:
        "Runs the twelve boundary checks, consumes the decision and calls the connectors. The answer is the recorded attempt, whatever its state (SUCCEEDED, FAILED, REFUSED with reasonCode, DUPLICATE, ...). Input that does not parse (request shape, unknown action or version, params the action's schema refuses, a token that is not a decision) is a 400 and records nothing.",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      body: ExecuteBody,
      responses: { 200: { description: "the recorded attempt", schema: AttemptAnswer } },
      async handle({ caller, body }) {
        const request = requestOf(body.request, caller, { actor: "named" });
        const admitted = await admitRequest(s.crypto, request, host.context.actions);
        if (!admitted.ok && admitted.problem === "params") throw new ApiError("VALIDATION_FAILED", `invalid params for ${request.action}: ${admitted.issues.slice(0, 5).join("; ")}`, { issues: admitted.issues.slice(0, 20) });
        if (!admitted.ok) throw new ApiError("VALIDATION_FAILED", admitted.message);
        const parsed = parseDecision(body.decision);
        if (!parsed.ok) throw new ApiError("VALIDATION_FAILED", `the decision is malformed: ${parsed.message}`);
        const attempt = await host.context.boundary.execute(request, body.decision);
        return { status: 200, body: { attempt } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/boundary/keys/resolve",
      operationId: "resolveBoundaryKey",
      tag: "boundary",
      summary: "Resolve a key a bare execution left with an unknown outcome",
      description:
        "For a key whose execution was interrupted (refused RECONCILIATION_PENDING once inProgressTimeoutMs passed) or timed out or answered ambiguously: `succeeded` (with the externalRef replays return) settles the key, `failed` lets a new decision retry it. Journaled (`key.resolved`) with the operator's identity (the API key as a `user` actor). A key an invocation holds is resolved through its reconciliation.",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      body: ResolveKeyBody,
      responses: {
        200: { description: "the key after the resolution", schema: KeyResolutionAnswer },
        404: { description: "NOT_FOUND: no such key", schema: ErrorBody },
        409: { description: "INVALID_STATE: the key is not unknown, or an invocation holds it", schema: ErrorBody },
      },
      async handle({ caller, body }) {
        const r = await host.reconcile.resolveKey(caller.scope, { action: body.action, idempotencyKey: body.idempotencyKey }, {
          outcome: body.outcome,
          note: body.note,
          by: caller.actor,
          ...(body.externalRef !== undefined ? { externalRef: body.externalRef } : {}),
        });
        return { status: 200, body: r };
      },
    }),
  ];
}
