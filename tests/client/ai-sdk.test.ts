/**
 * writ/ai-sdk driven by the AI SDK itself: `generateText` with a scripted model (`MockLanguageModelV3`
 * from `ai/test`) that calls the Writ tool, then answers with what the tool told it. Effects are
 * counted at the fake provider (agent-rig.ts).
 */
import { generateText, stepCountIs, type ToolSet } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writTools } from "../../src/client/adapters/ai-sdk.js";
import { approveAndFinish, startAgentRig, type AgentRig } from "./agent-rig.js";

let r: AgentRig;
let tools: ToolSet;
beforeAll(async () => {
  r = await startAgentRig();
  tools = await writTools(r.agent, { waitMs: 10_000 });
});
afterAll(async () => {
  await r?.close();
});

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 1, text: 1, reasoning: undefined } };

/** A model that calls `toolName` with `input` under `toolCallId`, then says what the tool answered. */
function scripted(toolName: string, input: unknown, toolCallId: string): MockLanguageModelV3 {
  let step = 0;
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      step++;
      if (step === 1) return { content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
      // The second step sees the tool result in the prompt: echo what the model was told.
      const told = options.prompt.flatMap((m) => (m.role === "tool" ? m.content : [])).map((p) => (p.type === "tool-result" && p.output.type === "text" ? p.output.value : "")).join("\n");
      return { content: [{ type: "text", text: `The tool said: ${told}` }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    },
  });
}

async function ask(input: unknown, toolCallId: string) {
  return generateText({ model: scripted("payments_refund", input, toolCallId), tools, stopWhen: stepCountIs(3), prompt: "refund it" });
}

describe("writ/ai-sdk", () => {
  it("offers the action with its params schema and description, and the status tool", async () => {
    expect(Object.keys(tools).sort()).toEqual(["payments_refund", "writ_invocation_status"]);
    const t = tools.payments_refund!;
    expect(t.description).toMatch(/^Refunds part or all of a card payment/);
    const model = scripted("payments_refund", {}, "x");
    await generateText({ model, tools, toolChoice: "none", prompt: "hi" }).catch(() => undefined);
    const offered = model.doGenerateCalls[0]!.tools!.find((x) => x.name === "payments_refund")!;
    expect(offered).toMatchObject({ type: "function", inputSchema: { type: "object", properties: { amount: { type: "integer" } }, required: ["paymentId", "amount", "currency"] } });
  });

  it("an allowed refund runs once; the model is told it is done, with the outputs", async () => {
    const before = r.effects.length;
    const res = await ask({ paymentId: "pay_ai_1", amount: 1200, currency: "EUR" }, "call_ai_1");
    const result = res.steps[0]!.toolResults[0]!;
    expect(result.output).toMatchObject({ result: { status: "succeeded", retry: "not_needed" } });
    expect(res.text).toMatch(/payments\.refund: succeeded\. Done\./);
    expect(res.text).toMatch(/"refundId":"re_\d+"/);
    expect(r.effects.slice(before)).toEqual([expect.objectContaining({ paymentId: "pay_ai_1", amount: 1200 })]);
  });

  it("a large refund comes back waiting for a named approval, and completes after an approval through the API", async () => {
    const before = r.effects.length;
    const res = await ask({ paymentId: "pay_ai_2", amount: 25_000, currency: "EUR" }, "call_ai_2");
    const out = res.steps[0]!.toolResults[0]!.output as { result: { status: string; approvalId: string; retry: string } };
    expect(out.result).toMatchObject({ status: "awaiting_approval", retry: "wait", approvalId: expect.stringMatching(/^apr_/) });
    expect(res.text).toContain(`approval ${out.result.approvalId}`);
    expect(res.text).toMatch(/Tell the user/);
    expect(res.text).toMatch(/call writ_invocation_status with invocationId inv_/);
    expect(r.effects.length).toBe(before);
    expect(await approveAndFinish(r, out.result.approvalId)).toBe("succeeded");
    expect(r.effects.slice(before)).toEqual([expect.objectContaining({ paymentId: "pay_ai_2", amount: 25_000 })]);
  });

  it("a denied refund returns the policy's reasons and runs nothing", async () => {
    const before = r.effects.length;
    const res = await ask({ paymentId: "pay_ai_3", amount: 250_000, currency: "EUR" }, "call_ai_3");
    expect(res.steps[0]!.toolResults[0]!.output).toMatchObject({ result: { status: "denied", reasons: ["refunds above 1000.00 are not allowed", "ask finance to refund it by hand"], retry: "do_not_retry" } });
    expect(res.text).toMatch(/Denied by policy: refunds above 1000\.00 are not allowed; ask finance to refund it by hand/);
    expect(r.effects.length).toBe(before);
  });

  it("a retried tool call (the same tool call id again) causes one effect; the retry is told it was done earlier", async () => {
    const before = r.effects.length;
    const first = await ask({ paymentId: "pay_ai_4", amount: 900, currency: "EUR" }, "call_ai_4");
    const again = await ask({ paymentId: "pay_ai_4", amount: 900, currency: "EUR" }, "call_ai_4");
    expect(first.steps[0]!.toolResults[0]!.output).toMatchObject({ result: { status: "succeeded" } });
    expect(again.steps[0]!.toolResults[0]!.output).toMatchObject({ result: { status: "succeeded", replayed: true } });
    expect(again.text).toMatch(/Done earlier/);
    expect(r.effects.slice(before)).toHaveLength(1);
    // The key came from the tool call id (not from the arguments): one invocation under it.
    const mine = (await r.agent.invocations.list({ limit: 50 })).items.filter((i) => i.idempotencyKey === "tool:payments_refund:call_ai_4");
    expect(mine).toHaveLength(1);
  });

  it("bad arguments are refused by Writ with words the model can fix its call with; nothing runs", async () => {
    const before = r.effects.length;
    const res = await generateText({ model: scripted("payments_refund", { paymentId: "pay_ai_5", amount: 12.5, currency: "EUR" }, "call_ai_5"), tools, stopWhen: stepCountIs(3), prompt: "x" });
    // The AI SDK hands the input over as the model sent it; Writ refuses it with the params schema's words.
    const out = res.steps[0]!.toolResults[0]!.output as { text: string; result: unknown };
    expect(out.result).toBeNull();
    expect(out.text).toMatch(/^Invalid arguments for payments_refund: amount: .*expected int.*Nothing was run; fix the arguments and call again\.$/);
    expect(r.effects.length).toBe(before);
  });
});
