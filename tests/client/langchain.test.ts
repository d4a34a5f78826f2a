/**
 * writ/langchain driven by LangChain's own pieces: a scripted chat model (a `BaseChatModel`
 * subclass answering tool calls, then what the tool told it), tools bound with `bindTools`, and
 * the tool-calling loop LangChain documents (`tool.invoke(toolCall)` gives the ToolMessage).
 * Effects are counted at the fake provider (agent-rig.ts).
 */
import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import type { DynamicStructuredTool } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writTools } from "../../src/client/adapters/langchain.js";
import { startAgentRig, type AgentRig } from "./agent-rig.js";
import { governedToolScenarios } from "./scenarios.js";

let r: AgentRig;
let tools: DynamicStructuredTool[];
beforeAll(async () => {
  r = await startAgentRig();
  tools = await writTools(r.agent, { waitMs: 10_000 });
});
afterAll(async () => {
  await r?.close();
});

/** Calls `name` with `args` under `id` first; afterwards says what the last tool message said. */
class ScriptedChatModel extends BaseChatModel {
  bound: DynamicStructuredTool[] = [];
  private readonly call: { name: string; args: Record<string, unknown>; id: string };
  constructor(call: { name: string; args: Record<string, unknown>; id: string }) {
    super({});
    this.call = call;
  }
  _llmType(): string {
    return "scripted";
  }
  override bindTools(bound: DynamicStructuredTool[]): this {
    this.bound = bound;
    return this;
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const told = messages.filter((m) => m instanceof ToolMessage).at(-1);
    const message = told
      ? new AIMessage({ content: `The tool said: ${told.text}` })
      : new AIMessage({ content: "", tool_calls: [{ name: this.call.name, args: this.call.args, id: this.call.id, type: "tool_call" }] });
    return { generations: [{ text: typeof message.content === "string" ? message.content : "", message }] };
  }
}

/** The documented loop: the model asks for tools, each tool call is invoked, the model answers. */
async function ask(args: Record<string, unknown>, id: string, name = "payments_refund"): Promise<{ text: string; toolMessages: ToolMessage[]; model: ScriptedChatModel }> {
  const model = new ScriptedChatModel({ name, args, id });
  const bound = model.bindTools(tools);
  const messages: BaseMessage[] = [new HumanMessage("refund it")];
  const toolMessages: ToolMessage[] = [];
  for (let turn = 0; turn < 3; turn++) {
    const ai = (await bound.invoke(messages)) as AIMessage;
    messages.push(ai);
    if (!ai.tool_calls || ai.tool_calls.length === 0) return { text: ai.text, toolMessages, model };
    for (const tc of ai.tool_calls) {
      const t = tools.find((x) => x.name === tc.name)!;
      const tm = (await t.invoke({ ...tc, type: "tool_call" })) as ToolMessage;
      toolMessages.push(tm);
      messages.push(tm);
    }
  }
  throw new Error("the loop did not end");
}

describe("writ/langchain", () => {
  it("offers the action as a structured tool with its params schema, and the status tool", () => {
    expect(tools.map((t) => t.name).sort()).toEqual(["payments_refund", "writ_invocation_status"]);
    const t = convertToOpenAITool(tools.find((x) => x.name === "payments_refund")!);
    expect(t.function.description).toMatch(/^Refunds part or all of a card payment/);
    expect(t.function.parameters).toMatchObject({ type: "object", properties: { amount: { type: "integer" } }, required: ["paymentId", "amount", "currency"] });
  });

  it("the tool message answers the model's tool call by its id", async () => {
    const { toolMessages } = await ask({ paymentId: "pay_lc_0", amount: 100, currency: "EUR" }, "call_lc_0");
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(["call_lc_0"]);
    expect(toolMessages[0]!.text).toMatch(/payments\.refund: succeeded/);
  });

  governedToolScenarios("lc", () => r, async (args, callId, tool) => (await ask(args, callId, tool)).text);

  it("invoked with bare arguments (no tool call id), the key is derived from them: the same arguments are one action", async () => {
    const before = r.effects.length;
    const t = tools.find((x) => x.name === "payments_refund")!;
    const a = await t.invoke({ paymentId: "pay_lc_5", amount: 700, currency: "EUR" });
    const b = await t.invoke({ paymentId: "pay_lc_5", amount: 700, currency: "EUR" });
    expect(String(a)).toMatch(/succeeded/);
    expect(String(b)).toMatch(/Done earlier/);
    expect(r.effects.slice(before)).toHaveLength(1);
  });
});
