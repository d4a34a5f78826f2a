/**
 * The rig the adapter tests drive a scripted model against: `writ serve` as the CLI starts it
 * (fixture.ts `serveConfig`) with a worker running, one refund action on a fake provider that keeps
 * a ledger of every effect it performs (like the demo's provider ledger), and the demo's policy:
 * refunds up to 50.00 run, up to 1000.00 need a person's approval, larger ones are denied.
 */
import { z } from "zod";
import { createClient, type WritClient } from "../../src/client/index.js";
import { defineAction, defineConnector } from "../../src/core/action.js";
import { functionPolicy } from "../../src/core/policy.js";
import { defineConfig } from "../../src/config/define-config.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { serveConfig, type Rig } from "../server/fixture.js";

export const AGENT = { type: "agent" as const, id: "support-bot" };

/** Every refund the fake provider performed: one entry per effect. */
export interface Effect {
  paymentId: string;
  amount: number;
  idempotencyKey: string;
}

export interface AgentRig {
  rig: Rig;
  /** The provider's ledger: what really happened outside. */
  effects: Effect[];
  /** A client with the agent's key (role submit, principal agent:support-bot). */
  agent: WritClient;
  /** A client with a person's key (role approve, principal user:approver). */
  approver: WritClient;
  close(): Promise<void>;
}

export async function startAgentRig(): Promise<AgentRig> {
  const effects: Effect[] = [];
  const refund = defineAction({
    id: "payments.refund",
    version: "1",
    title: "Refund a payment",
    description: "Refunds part or all of a card payment. Amounts are integer cents.",
    params: z.object({ paymentId: z.string().min(1).max(64), amount: z.number().int().positive(), currency: z.enum(["EUR", "USD"]) }),
    idempotent: true,
    steps: [{ name: "refund", connector: "payments", operation: "refund" }],
  });
  const payments = defineConnector({
    id: "payments",
    operations: {
      refund: ({ input, idempotencyKey }) => {
        const p = input as { paymentId: string; amount: number };
        effects.push({ paymentId: p.paymentId, amount: p.amount, idempotencyKey });
        return { outcome: "success", externalRef: `re_${effects.length}`, output: { refundId: `re_${effects.length}`, amount: p.amount } };
      },
    },
  });
  const policy = functionPolicy("refunds:v1", ({ request, approval }) => {
    const amount = Number(request.params.amount ?? 0);
    if (amount > 100_000) return { result: "DENY", reasons: ["refunds above 1000.00 are not allowed", "ask finance to refund it by hand"] };
    if (amount > 5_000) return approval?.status === "approved" ? "ALLOW" : { result: "REQUIRE_APPROVAL", reasons: ["refunds above 50.00 need a person's approval"], approval: { approverRoles: ["approve"], quorum: 1 } };
    return "ALLOW";
  });
  const config = defineConfig({ actions: [refund], connectors: [payments], policy });
  const rig = await serveConfig(config, async (runtime) => {
    const { crypto, random, clock } = runtime.host.context.o;
    const scope = { tenantId: "acme", spaceId: "prod" };
    await runtime.host.authorities.create(scope, { authorityRef: "support-bot", principal: AGENT, grantor: { type: "user", id: "root" }, actions: ["payments.*"] });
    const agent = (await createApiKey(runtime.store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "agent", principal: AGENT }, clock.now())).key;
    const approver = (await createApiKey(runtime.store, crypto, random, { tenantId: "acme", roles: ["approve"], name: "approver" }, clock.now())).key;
    return { agent, approver };
  });
  const worker = rig.runtime.host.worker({ pollMs: 50 });
  worker.start();
  const clientOf = (key: string): WritClient => createClient({ baseUrl: rig.url, apiKey: rig.keys[key]!, space: "prod" });
  return {
    rig,
    effects,
    agent: clientOf("agent"),
    approver: clientOf("approver"),
    async close() {
      await worker.stop();
      await rig.close();
    },
  };
}

/** Approves the pending approval of `approvalId` through the API and waits for the invocation to end. */
export async function approveAndFinish(r: AgentRig, approvalId: string): Promise<string> {
  const approval = await r.approver.approvals.approve(approvalId, { note: "customer called" });
  const { invocation } = await r.agent.invocations.wait(approval.invocationId!, { until: "final", timeoutMs: 20_000 });
  return invocation.status;
}
