/** Actions: what the API key's principal may ask for, as tools for agent frameworks (docs/client.md). */
import type { ServerContext } from "../context.js";
import { grantedActions } from "../../host/granted.js";
import { inputSchemaOf } from "../../mcp/schema.js";
import { toolTitleOf } from "../../mcp/gateway.js";
import { defineRoute, type Route } from "../registry.js";
import { ActionList, SpacePath } from "../schemas.js";

export function actionRoutes(s: ServerContext): Route[] {
  const { host } = s.runtime;
  return [
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/actions",
      operationId: "listActions",
      tag: "actions",
      summary: "List the actions the API key's principal may ask for",
      description:
        "The actions one of the principal's active authorities covers, each with that authority, its params as JSON Schema and its annotations: what the MCP endpoint offers as tools, for clients that turn them into an agent framework's tools (writ/ai-sdk, writ/openai-agents, writ/langchain).",
      access: { kind: "key", roles: ["submit"] },
      params: SpacePath,
      responses: { 200: { description: "the actions, in the config's order", schema: ActionList } },
      async handle({ caller }) {
        const items = (await grantedActions(host, caller.scope, caller.actor)).map(({ action, authority }) => {
          const readOnly = action.readOnly === true;
          return {
            action: action.id,
            version: action.version,
            title: toolTitleOf(action),
            ...(action.description !== undefined ? { description: action.description } : {}),
            inputSchema: inputSchemaOf(action),
            annotations: { readOnly, destructive: readOnly ? false : (action.destructive ?? true), idempotent: action.idempotent, openWorld: action.openWorld ?? true },
            authorityRef: authority.authorityRef,
          };
        });
        return { status: 200, body: { items } };
      },
    }),
  ];
}
