/**
 * The README's walkthrough step 3 ("Approve it") says what the server really answers: on the demo
 * config (examples/writ.config.ts) with the demo's keys, the agent's key is refused for its role,
 * a key holding both submit and approve is refused by four eyes on the request it submitted, and
 * the approver's key approves. The step's text must quote each refusal as the server words it.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import demoConfig from "../../examples/writ.config.js";
import { demoOf, ensureDemo } from "../../src/cli/demo.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { call, serveConfig, type Rig } from "./fixture.js";

const REPO = join(import.meta.dirname, "..", "..");
const README = readFileSync(join(REPO, "README.md"), "utf8");
/** Step 3's text, from its heading to step 4's, its line breaks as spaces. */
const STEP3 = README.slice(README.indexOf("**3. Approve it.**"), README.indexOf("**4. ")).replace(/\s+/g, " ");

let rig: Rig;
beforeAll(async () => {
  rig = await serveConfig(demoConfig, async (rt) => {
    const demo = await ensureDemo(rt, demoOf(rt.config)!, (p) => join(rt.keysDir, "..", p));
    const { crypto, random, clock } = rt.host.context.o;
    // The README's alice: a person holding submit and approve who may submit for the support bot.
    const alice = await createApiKey(rt.store, crypto, random, { tenantId: "demo", roles: ["submit", "approve"], name: "alice", principal: { type: "user", id: "alice" }, actsFor: [{ type: "agent", id: "support-bot" }] }, clock.now());
    return { agent: demo.agent.key, approver: demo.approver.key, alice: alice.key };
  });
});
afterAll(async () => {
  await rig?.close();
});

const API = "/v1/spaces/default";
const refund = (paymentId: string, amount: number) => ({
  action: "payments.refund",
  actionVersion: "1",
  actor: { type: "agent", id: "support-bot" },
  authorityRef: "support-bot",
  params: { paymentId, amount, currency: "EUR" },
  idempotencyKey: `refund-${paymentId}`,
});

async function pendingApproval(key: string, paymentId: string, amount: number): Promise<string> {
  const inv = (await call(rig, "POST", `${API}/invocations`, { key, body: refund(paymentId, amount) })).json.invocation.invocationId as string;
  await rig.work();
  const approval = (await rig.runtime.host.get({ tenantId: "demo", spaceId: "default" }, inv))?.approvalId;
  expect(approval, `${paymentId} awaits approval`).toBeTruthy();
  return approval!;
}

describe("README step 3", () => {
  it("quotes the agent key's refusal (its role) and four eyes as the server words them; the approver approves", async () => {
    const approval = await pendingApproval("agent", "pay_2002", 25000);
    const agent = await call(rig, "POST", `${API}/approvals/${approval}/approve`, { key: "agent", body: {} });
    expect(agent.status).toBe(403);
    expect(agent.json.error.code).toBe("FORBIDDEN");
    expect(STEP3).toContain(agent.json.error.message.replace(/ \(one of: .*\)$/, ""));

    const own = await pendingApproval("alice", "pay_2103", 30000);
    const alice = await call(rig, "POST", `${API}/approvals/${own}/approve`, { key: "alice", body: {} });
    expect(alice.status).toBe(403);
    expect(alice.json.error.code).toBe("FORBIDDEN");
    expect(STEP3).toContain(alice.json.error.message);

    const ok = await call(rig, "POST", `${API}/approvals/${approval}/approve`, { key: "approver", body: { note: "customer called, refund is right" } });
    expect(ok.status).toBe(200);
    expect(ok.json.approval.status).toBe("approved");
  });
});
