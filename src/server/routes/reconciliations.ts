/** Reconciliations: the queue of outcomes Writ cannot know, and their resolution by an operator. */
import type { ServerContext } from "../context.js";
import { invocationView } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { unknownKeyView } from "../../host/reads.js";
import { ErrorBody, InvocationAnswer, ReconciliationList, ReconciliationListQuery, ReconciliationPath, ResolveBody, SpacePath } from "../schemas.js";

export function reconciliationRoutes(s: ServerContext): Route[] {
  const { reconcile } = s.runtime.host;
  return [
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/reconciliations",
      operationId: "listReconciliations",
      tag: "reconciliations",
      summary: "List reconciliations (the reconciliation queue)",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      query: ReconciliationListQuery,
      description:
        "The queue of outcomes Writ cannot know: the invocations' reconciliations (`items`) and the keys bare boundary executions left unknown (`unknownKeys`, settled with POST …/boundary/keys/resolve). Both oldest first.",
      responses: { 200: { description: "reconciliations and unknown keys", schema: ReconciliationList } },
      async handle({ caller, query }) {
        const limit = query.limit ?? 100;
        const items = await reconcile.list(caller.scope, { limit, ...(query.status ? { status: query.status } : {}) });
        const keys = query.status === "resolved" ? [] : await reconcile.unknownKeys(caller.scope, { limit });
        const unknownKeys = keys.map(unknownKeyView);
        return { status: 200, body: { items, unknownKeys } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/reconciliations/{reconciliationId}/resolve",
      operationId: "resolveReconciliation",
      tag: "reconciliations",
      summary: "Resolve an unknown outcome as succeeded or failed",
      description:
        "Journaled with the operator's identity (the API key as a `user` actor). Resolving a middle step as succeeded re-queues the remaining steps under a new decision.",
      access: { kind: "key", roles: ["operate"] },
      params: ReconciliationPath,
      body: ResolveBody,
      responses: {
        200: { description: "the invocation after the resolution", schema: InvocationAnswer },
        409: { description: "INVALID_STATE: already resolved", schema: ErrorBody },
      },
      async handle({ caller, params, body }) {
        const inv = await reconcile.resolve(caller.scope, params.reconciliationId, {
          outcome: body.outcome,
          note: body.note,
          by: caller.actor,
          ...(body.externalRef !== undefined ? { externalRef: body.externalRef } : {}),
        });
        return { status: 200, body: { invocation: invocationView(inv) } };
      },
    }),
  ];
}
