/**
 * The Must-show scenarios every adapter whose tools answer the model in text goes through, driven
 * by that framework's own loop (`ask`): an allowed refund runs once; a large one waits for a named
 * approval and completes after an approval through the API (the status tool then says so); a
 * denied one returns the policy's reasons; a retried tool call causes one effect.
 */
import { expect, it } from "vitest";
import { approveAndFinish, type AgentRig } from "./agent-rig.js";

/** Runs the framework's loop with a scripted model calling `tool` with `args` under `callId`; answers what the model said last (it repeats the tool's words). */
export type Ask = (args: Record<string, unknown>, callId: string, tool?: string) => Promise<string>;

export function governedToolScenarios(prefix: string, rig: () => AgentRig, ask: Ask): void {
  it("an allowed refund runs once; the model is told it is done, with the outputs", async () => {
    const r = rig();
    const before = r.effects.length;
    const text = await ask({ paymentId: `pay_${prefix}_1`, amount: 1200, currency: "EUR" }, `call_${prefix}_1`);
    expect(text).toMatch(/payments\.refund: succeeded\. Done\./);
    expect(text).toMatch(/"refundId":"re_\d+"/);
    expect(r.effects.slice(before)).toEqual([expect.objectContaining({ paymentId: `pay_${prefix}_1`, amount: 1200 })]);
  });

  it("a large refund comes back waiting for a named approval, and completes after an approval through the API", async () => {
    const r = rig();
    const before = r.effects.length;
    const text = await ask({ paymentId: `pay_${prefix}_2`, amount: 25_000, currency: "EUR" }, `call_${prefix}_2`);
    expect(text).toMatch(/payments\.refund: awaiting_approval\./);
    expect(text).toMatch(/Tell the user/);
    const approvalId = /approval (apr_[A-Za-z0-9_-]+)/.exec(text)?.[1];
    const invocationId = /invocationId (inv_[A-Za-z0-9_-]+)/.exec(text)?.[1];
    expect(approvalId).toBeDefined();
    expect(invocationId).toBeDefined();
    expect(r.effects.length).toBe(before);
    expect(await approveAndFinish(r, approvalId!)).toBe("succeeded");
    expect(r.effects.slice(before)).toEqual([expect.objectContaining({ paymentId: `pay_${prefix}_2`, amount: 25_000 })]);
    // The status tool, called as the model would, now says it is done.
    expect(await ask({ invocationId: invocationId! }, `call_${prefix}_2s`, "writ_invocation_status")).toMatch(/payments\.refund: succeeded/);
  });

  it("a denied refund returns the policy's reasons and runs nothing", async () => {
    const r = rig();
    const before = r.effects.length;
    const text = await ask({ paymentId: `pay_${prefix}_3`, amount: 250_000, currency: "EUR" }, `call_${prefix}_3`);
    expect(text).toMatch(/payments\.refund: denied\. Denied by policy: refunds above 1000\.00 are not allowed; ask finance to refund it by hand/);
    expect(r.effects.length).toBe(before);
  });

  it("a retried tool call (the same call id again) causes one effect; the retry is told it was done earlier", async () => {
    const r = rig();
    const before = r.effects.length;
    const first = await ask({ paymentId: `pay_${prefix}_4`, amount: 900, currency: "EUR" }, `call_${prefix}_4`);
    const again = await ask({ paymentId: `pay_${prefix}_4`, amount: 900, currency: "EUR" }, `call_${prefix}_4`);
    expect(first).toMatch(/succeeded/);
    expect(again).toMatch(/Done earlier/);
    expect(r.effects.slice(before)).toHaveLength(1);
    // The key came from the tool call id (not from the arguments): one invocation under it.
    const mine = (await r.agent.invocations.list({ limit: 50 })).items.filter((i) => i.idempotencyKey === `tool:payments_refund:call_${prefix}_4`);
    expect(mine).toHaveLength(1);
  });
}
