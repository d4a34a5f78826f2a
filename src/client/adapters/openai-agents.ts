/**
 * `writ/openai-agents`: Writ actions as OpenAI Agents SDK function tools (`@openai/agents`, an
 * optional peer dependency). Each tool's parameters are the action's params schema (non-strict
 * JSON Schema); running it submits a governed invocation and answers the model in words
 * (docs/openai-agents.md). The shape conversion only: the work is in src/client/tools.ts.
 *
 * @example
 * import { Agent, run } from "@openai/agents";
 * import { createClient } from "writ/client";
 * import { writTools } from "writ/openai-agents";
 * const agent = new Agent({ name: "support", instructions: "...", tools: await writTools(createClient({ baseUrl, apiKey })) });
 * const result = await run(agent, "Refund pay_1001, 12.00 EUR");
 */
import { tool, type FunctionTool } from "@openai/agents";
import type { WritClient } from "../client.js";
import { governedTools, type GovernedToolsOptions } from "../tools.js";

export type { GovernedToolsOptions };

/** A non-strict tool's parameters: any JSON Schema object, sent to the model as it is. */
type NonStrictParameters = Extract<Parameters<typeof tool>[0], { strict: false }>["parameters"];

/** The key's governed tools as Agents SDK function tools; each answers the model with the outcome's words. */
export async function writTools(client: WritClient, options: GovernedToolsOptions = {}): Promise<FunctionTool[]> {
  return (await governedTools(client, options)).map((t) =>
    tool({
      name: t.name,
      description: t.description,
      parameters: t.inputSchema as NonStrictParameters,
      strict: false,
      execute: async (input, _context, details) => (await t.run(input, { toolCallId: details?.toolCall?.callId, signal: details?.signal })).text,
    }) as FunctionTool,
  );
}
