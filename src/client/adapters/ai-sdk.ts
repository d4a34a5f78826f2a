/**
 * `writ/ai-sdk`: Writ actions as Vercel AI SDK tools (`ai`, an optional peer dependency). Each
 * tool's input schema is the action's params schema; running it submits a governed invocation and
 * answers the model in words (docs/ai-sdk.md). The shape conversion only: the work is in
 * src/client/tools.ts, shared with the other adapters.
 *
 * @example
 * import { generateText, stepCountIs } from "ai";
 * import { createClient } from "writ/client";
 * import { writTools } from "writ/ai-sdk";
 * const tools = await writTools(createClient({ baseUrl, apiKey, space: "default" }));
 * const { text } = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: "Refund pay_1001, 12.00 EUR" });
 */
import { jsonSchema, tool, type Tool } from "ai";
import type { WritClient } from "../client.js";
import { governedTools, type GovernedToolsOptions, type ToolOutcome } from "../tools.js";

export type { GovernedToolsOptions, ToolOutcome };

/**
 * The key's governed tools as an AI SDK tool set (`{ [name]: tool }`, for `generateText({ tools })`).
 * A tool's output is the {@link ToolOutcome} (its `result` for your code); the model sees its `text`.
 */
export async function writTools(client: WritClient, options: GovernedToolsOptions = {}): Promise<Record<string, Tool<Record<string, unknown>, ToolOutcome>>> {
  const out: Record<string, Tool<Record<string, unknown>, ToolOutcome>> = {};
  for (const t of await governedTools(client, options)) {
    out[t.name] = tool<Record<string, unknown>, ToolOutcome>({
      title: t.title,
      description: t.description,
      inputSchema: jsonSchema<Record<string, unknown>>(t.inputSchema),
      execute: (input, { toolCallId, abortSignal }) => t.run(input, { toolCallId, signal: abortSignal }),
      toModelOutput: ({ output }) => ({ type: "text", value: output.text }),
    });
  }
  return out;
}
