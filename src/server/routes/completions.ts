/**
 * Completions of long-running operations (docs/completions.md): Standard Webhooks deliveries. No API key: the
 * signature (with the connector's secret) authenticates, and the secret that verifies names the
 * scope. The body is verified as received, byte for byte, before it is parsed.
 */
import { isWritError } from "../../core/errors.js";
import type { ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { CompletionAnswer, CompletionBody, ConnectorPath, EarlyCompletionList, EarlyCompletionListQuery, ErrorBody, SpacePath } from "../schemas.js";

export function completionRoutes(s: ServerContext): Route[] {
  const { host } = s.runtime;
  return [
    defineRoute({
      method: "post",
      path: "/v1/completions/{connector}",
      operationId: "receiveCompletion",
      tag: "completions",
      summary: "Receive a signed completion (Standard Webhooks)",
      description:
        "Headers webhook-id, webhook-timestamp (seconds, within 5 minutes) and webhook-signature (`v1,<base64 HMAC-SHA256>`). A repeated webhook-id answers 200 with `deliveryReplayed: true` and changes nothing, so senders stop retrying. 409 COMPLETION_UNKNOWN_REFERENCE: no operation waits under that reference (yet) — the sender should retry on its usual schedule.",
      access: { kind: "webhook" },
      params: ConnectorPath,
      rawBody: { schema: CompletionBody, contentType: "application/json" },
      responses: {
        200: { description: "applied, absorbed as a duplicate, kept as early, or recorded as contradictory", schema: CompletionAnswer },
        409: { description: "COMPLETION_UNKNOWN_REFERENCE (retry later) or INVALID_STATE", schema: ErrorBody },
      },
      async handle({ c, params, rawBody }) {
        const headers = { id: c.req.header("webhook-id"), timestamp: c.req.header("webhook-timestamp"), signature: c.req.header("webhook-signature") };
        try {
          const { scope: _scope, ...answer } = await host.receiveCompletion(params.connector, headers, rawBody);
          return { status: 200, body: answer };
        } catch (e) {
          // Verified, and this delivery id was applied before (in the same transaction as its effect).
          if (isWritError(e, "WEBHOOK_REPLAYED")) return { status: 200, body: { disposition: "duplicate", deliveryReplayed: true } };
          throw e;
        }
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/completions/early",
      operationId: "listEarlyCompletions",
      tag: "completions",
      summary: "List early completions whose reference has not matched a parked step",
      description:
        "Oldest first. A completion stays early until its step parks (it is then applied) or the retention period (`earlyCompletionRetentionMs`) passes (the sweep then expires it, journaled). Results are withheld.",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      query: EarlyCompletionListQuery,
      responses: { 200: { description: "early completions", schema: EarlyCompletionList } },
      async handle({ caller, query }) {
        const items = await host.earlyCompletions(caller.scope, { limit: query.limit ?? 100 });
        return { status: 200, body: { items, retentionMs: host.context.r.earlyCompletionRetentionMs } };
      },
    }),
  ];
}
