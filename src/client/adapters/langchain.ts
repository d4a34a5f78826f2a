/**
 * `writ/langchain`: Writ actions as LangChain.js structured tools (`@langchain/core`, an optional
 * peer dependency). Each tool's schema is the action's params schema (JSON Schema); running it
 * submits a governed invocation and answers the model in words (docs/langchain.md). The shape
 * conversion only: the work is in src/client/tools.ts.
 *
 * @example
 * import { createClient } from "writ/client";
 * import { writTools } from "writ/langchain";
 * const tools = await writTools(createClient({ baseUrl, apiKey }));
 * const model = new ChatOpenAI({ model: "gpt-4.1" }).bindTools(tools);
 */
import { DynamicStructuredTool, type ToolRunnableConfig, type ToolSchemaBase } from "@langchain/core/tools";
import type { WritClient } from "../client.js";
import { governedTools, type GovernedToolsOptions } from "../tools.js";

export type { GovernedToolsOptions };

/**
 * The key's governed tools as LangChain structured tools. Invoked with a tool call
 * (`tool.invoke(aiMessage.tool_calls[0])`) a tool answers a ToolMessage for that call, and the call's
 * id makes its idempotency key; invoked with bare arguments, the key is derived from them.
 */
export async function writTools(client: WritClient, options: GovernedToolsOptions = {}): Promise<DynamicStructuredTool[]> {
  return (await governedTools(client, options)).map(
    (t) =>
      new DynamicStructuredTool({
        name: t.name,
        description: t.description,
        schema: t.inputSchema as ToolSchemaBase,
        metadata: { title: t.title, ...t.annotations, ...(t.action ? { writAction: t.action.id, writActionVersion: t.action.version } : {}) },
        func: async (input: unknown, _runManager, config) => {
          const c = config as ToolRunnableConfig | undefined;
          return (await t.run(input, { toolCallId: c?.toolCall?.id, signal: c?.signal })).text;
        },
      }),
  );
}
