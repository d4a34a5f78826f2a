/**
 * writ/openai-agents driven by the OpenAI Agents SDK itself: `run(agent, …)` with a scripted model
 * (a fake implementing the SDK's `Model` interface) that calls the Writ function tool, then
 * answers with what the tool told it. Effects are counted at the fake provider (agent-rig.ts).
 */
import { Agent, Usage, run, setTracingDisabled, type FunctionTool, type Model, type ModelRequest, type ModelResponse } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writTools } from "../../src/client/adapters/openai-agents.js";
import { startAgentRig, type AgentRig } from "./agent-rig.js";
import { governedToolScenarios } from "./scenarios.js";

setTracingDisabled(true);

let r: AgentRig;
let tools: FunctionTool[];
beforeAll(async () => {
  r = await startAgentRig();
  tools = await writTools(r.agent, { waitMs: 10_000 });
});
afterAll(async () => {
  await r?.close();
});

/** What the tool answered, as the model sees it in its next request. */
function toolOutputIn(request: ModelRequest): string {
  const items = typeof request.input === "string" ? [] : request.input;
  return items
    .filter((i) => i.type === "function_call_result")
    .map((i) => {
      const out = (i as { output: unknown }).output;
      return typeof out === "string" ? out : ((out as { text?: string }).text ?? JSON.stringify(out));
    })
    .join("\n");
}

/** A model that calls `name` with `args` under `callId`, then says what the tool answered. */
class ScriptedModel implements Model {
  requests: ModelRequest[] = [];
  private readonly name: string;
  private readonly args: unknown;
  private readonly callId: string;
  constructor(name: string, args: unknown, callId: string) {
    this.name = name;
    this.args = args;
    this.callId = callId;
  }
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request);
    const usage = new Usage();
    if (this.requests.length === 1) return { usage, output: [{ type: "function_call", callId: this.callId, name: this.name, arguments: JSON.stringify(this.args), status: "completed" }] };
    return { usage, output: [{ type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: `The tool said: ${toolOutputIn(request)}` }] }] };
  }
  // eslint-disable-next-line require-yield -- this model is not streamed
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("the scripted model does not stream");
  }
}

async function ask(args: unknown, callId: string, name = "payments_refund"): Promise<{ text: string; model: ScriptedModel }> {
  const model = new ScriptedModel(name, args, callId);
  const agent = new Agent({ name: "support", instructions: "Refund what the customer asks for.", model, tools });
  const result = await run(agent, "refund it");
  return { text: String(result.finalOutput), model };
}

describe("writ/openai-agents", () => {
  it("offers the action as a non-strict function tool with its params schema, and the status tool", async () => {
    expect(tools.map((t) => t.name).sort()).toEqual(["payments_refund", "writ_invocation_status"]);
    const { model } = await ask({ paymentId: "pay_oa_0", amount: 100, currency: "EUR" }, "call_oa_0");
    const offered = model.requests[0]!.tools.find((t) => t.name === "payments_refund") as { strict: boolean; parameters: unknown; description: string };
    expect(offered.strict).toBe(false);
    expect(offered.description).toMatch(/^Refunds part or all of a card payment/);
    expect(offered.parameters).toMatchObject({ type: "object", properties: { amount: { type: "integer" } }, required: ["paymentId", "amount", "currency"] });
  });

  governedToolScenarios("oa", () => r, async (args, callId, tool) => (await ask(args, callId, tool)).text);
});
