/** Invocations: submit (idempotent admission), get, list (status filter, cursor), cancel. */
import { invocationView, notFound, requestOf, type ServerContext } from "../context.js";
import { submitterOf } from "../../runtime/principals.js";
import { defineRoute, type Route } from "../registry.js";
import { ActionRequest, CancelBody, ErrorBody, InvocationAnswer, InvocationGetQuery, InvocationListQuery, InvocationPage, InvocationPath, InvocationRead, SpacePath, SubmitAnswer } from "../schemas.js";
import { DEFAULT_UNTIL, untilStatuses, waitForInvocation } from "../../host/wait.js";
import type { InvocationStatus } from "../../core/types.js";

const READERS = ["submit", "approve", "operate"] as const;

export function invocationRoutes(s: ServerContext): Route[] {
  const { host } = s.runtime;
  return [
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/invocations",
      operationId: "submitInvocation",
      tag: "invocations",
      summary: "Submit a request",
      description:
        "Validates the request against the action's schema and admits it, idempotently by (space, action, idempotencyKey): the same key with the same request answers 200 with `replayed: true` and stores nothing; with another request, 409 IDEMPOTENCY_CONFLICT. The actor defaults to the API key's principal; another actor must be on the key's delegation list (403 FORBIDDEN otherwise). The invocation records the submitting principal and key id (`submittedBy`).",
      access: { kind: "key", roles: ["submit"] },
      params: SpacePath,
      body: ActionRequest,
      responses: {
        202: { description: "admitted; a worker will run it", schema: SubmitAnswer },
        200: { description: "already admitted with this key and request (replayed: true)", schema: SubmitAnswer },
        409: { description: "IDEMPOTENCY_CONFLICT: the key was used with another request", schema: ErrorBody },
      },
      async handle({ caller, body, params }) {
        const r = await host.submit(requestOf(body, caller), { submittedBy: submitterOf(caller.key) });
        const location = `/v1/spaces/${encodeURIComponent(params.spaceId)}/invocations/${encodeURIComponent(r.invocation.invocationId)}`;
        return { status: r.replayed ? 200 : 202, body: { invocation: invocationView(r.invocation), replayed: r.replayed }, headers: { location } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/invocations",
      operationId: "listInvocations",
      tag: "invocations",
      summary: "List invocations, newest first",
      access: { kind: "key", roles: READERS },
      params: SpacePath,
      query: InvocationListQuery,
      responses: { 200: { description: "one page", schema: InvocationPage } },
      async handle({ caller, query }) {
        const limit = query.limit ?? 50;
        const items = await host.list(caller.scope, { limit: limit + 1, ...(query.status ? { status: query.status } : {}), ...(query.cursor ? { after: query.cursor } : {}) });
        const page = items.slice(0, limit);
        const nextCursor = items.length > limit ? page[page.length - 1]!.invocationId : null;
        return { status: 200, body: { items: page.map(invocationView), nextCursor } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/invocations/{invocationId}",
      operationId: "getInvocation",
      tag: "invocations",
      summary: "Get one invocation, at once or by long poll",
      description:
        "An invocation of another tenant or space is answered 404, like one that does not exist. With `wait` (seconds, at most 60) the answer waits until the invocation is in a state `until` names (default `settled`) or reaches a final state, or the time runs out; `reached` says which. The server answers the moment a worker in its process moves the invocation, and reads again every second for changes other processes make.",
      access: { kind: "key", roles: READERS },
      params: InvocationPath,
      query: InvocationGetQuery,
      responses: { 200: { description: "the invocation; with wait, once it is in a state until names or the wait ends", schema: InvocationRead } },
      async handle({ c, caller, params, query }) {
        if (query.wait === undefined) {
          const inv = await host.get(caller.scope, params.invocationId);
          if (!inv) throw notFound("invocation", params.invocationId);
          return { status: 200, body: { invocation: invocationView(inv) } };
        }
        const until = untilStatuses(query.until ?? DEFAULT_UNTIL) as ReadonlySet<InvocationStatus>;
        // The wait ends early when the caller goes away or the server closes (its last read is answered).
        const signal = AbortSignal.any([c.req.raw.signal, s.closing]);
        const r = await waitForInvocation(host, caller.scope, params.invocationId, { until, ms: query.wait * 1000, signal });
        if (!r) throw notFound("invocation", params.invocationId);
        return { status: 200, body: { invocation: invocationView(r.invocation), reached: r.reached } };
      },
    }),
    defineRoute({
      method: "post",
      path: "/v1/spaces/{spaceId}/invocations/{invocationId}/cancel",
      operationId: "cancelInvocation",
      tag: "invocations",
      summary: "Cancel an invocation no step of which has started",
      description: "Queued, awaiting_approval, or running while its worker still prepares it (no step started); a worker preparing it stops before any connector call. 409 STEPS_STARTED once a step started, 409 INVALID_STATE once it ended. Journaled with the API key as the actor.",
      access: { kind: "key", roles: ["submit", "operate"] },
      params: InvocationPath,
      body: CancelBody,
      bodyOptional: true,
      responses: {
        200: { description: "cancelled", schema: InvocationAnswer },
        409: { description: "STEPS_STARTED: a step started, too late to cancel; INVALID_STATE: the invocation already ended", schema: ErrorBody },
      },
      async handle({ caller, params }) {
        const inv = await host.cancel(caller.scope, params.invocationId, caller.actor);
        return { status: 200, body: { invocation: invocationView(inv) } };
      },
    }),
  ];
}
