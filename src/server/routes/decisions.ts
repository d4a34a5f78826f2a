/**
 * Decisions: a dry run (preview), and evaluate-and-sign for a policy service that runs apart from
 * the executors: the runtime's policy evaluates, the runtime's signing key signs, nothing is
 * consumed or executed. Callers then present the token to a boundary (here or elsewhere).
 */
import { signDecisionWith } from "../../core/decision.js";
import { ID_RANDOM_BYTES, timeOrderedId } from "../../core/ids.js";
import type { DecisionPayload } from "../../core/types.js";
import { ApiError } from "../errors.js";
import { notFound, requestOf, type ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { ActionRequest, EvaluateBody, Preview, SignedDecision, SpacePath } from "../schemas.js";

export function decisionRoutes(s: ServerContext): Route[] {
  const { host, policy, signingKey } = s.runtime;
  return [
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/decisions/preview",
      operationId: "previewDecision",
      tag: "decisions",
      summary: "Dry run: what would the policy answer?",
      description: "Validates the request and evaluates it without signing, consuming or executing anything.",
      access: { kind: "key", roles: ["submit"] },
      params: SpacePath,
      body: ActionRequest,
      responses: { 200: { description: "the policy's answer", schema: Preview } },
      async handle({ caller, body }) {
        return { status: 200, body: await host.preview(requestOf(body, caller)) };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/decisions/evaluate-and-sign",
      operationId: "evaluateAndSign",
      tag: "decisions",
      summary: "Evaluate a request and sign the decision (for a separate policy service)",
      description:
        "Evaluates with the server's policy (with the named approval, if any) and signs the result, whatever it is, with the server's signing key. Verify the token with /.well-known/jwks.json. Admin only: a token is a capability.",
      access: { kind: "key", roles: ["admin"] },
      params: SpacePath,
      body: EvaluateBody,
      responses: { 200: { description: "the signed decision", schema: SignedDecision } },
      async handle({ caller, body }) {
        const request = requestOf(body.request, caller, { actor: "named" });
        // Validation (schema, action, version, params) and the digest, as submit does them.
        const dry = await host.preview(request);
        let verdict: { result: DecisionPayload["result"]; reasons: string[]; policyRef: string } = dry;
        if (body.approvalId !== undefined) {
          const approval = await host.approvals.get(caller.scope, body.approvalId);
          if (!approval) throw notFound("approval", body.approvalId);
          if (approval.requestDigest !== dry.requestDigest) throw new ApiError("VALIDATION_FAILED", `approval ${body.approvalId} was granted for another request`);
          const authority = await host.authorities.get(caller.scope, request.authorityRef);
          verdict = await policy.evaluate({ request, authority, approval });
        }
        const payload: DecisionPayload = {
          v: 1,
          decisionId: timeOrderedId("dec_", s.clock.now(), s.random.bytes(ID_RANDOM_BYTES)),
          result: verdict.result,
          requestDigest: dry.requestDigest,
          tenantId: request.tenantId,
          spaceId: request.spaceId,
          authorityRef: request.authorityRef,
          policyRef: verdict.policyRef,
          issuedAt: s.clock.now(),
          reasons: verdict.reasons.slice(0, 100).map((r) => r.slice(0, 2000)),
        };
        if (body.approvalId !== undefined && verdict.result === "ALLOW") payload.approvalRef = body.approvalId;
        const decision = signDecisionWith(s.crypto, signingKey, payload);
        const { v: _v, tenantId: _t, spaceId: _s, authorityRef: _a, ...shown } = payload;
        return { status: 200, body: { decision, kid: signingKey.kid, ...shown } };
      },
    }),
  ];
}
