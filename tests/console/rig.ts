/**
 * A console rig: a real server (ephemeral port) over a runtime on a temporary SQLite file, with a
 * worker running, API keys for several people, and a policy where small refunds run, large ones
 * need an approval and negative ones are denied. Messages to lost@example.com get an ambiguous
 * reply (the outcome goes to reconciliation).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { defineAction, defineConnector } from "../../src/core/action.js";
import { functionPolicy } from "../../src/core/policy.js";
import type { Actor, ApiRole, Scope } from "../../src/core/types.js";
import { defineConfig } from "../../src/config/define-config.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { openRuntime, type Runtime } from "../../src/runtime/runtime.js";
import { startServer, type RunningServer } from "../../src/server/index.js";
import type { Worker } from "../../src/host/worker.js";

export const SCOPE: Scope = { tenantId: "acme", spaceId: "prod" };
export const AGENT: Actor = { type: "agent", id: "support-bot" };

/** Steps of `orders.fulfil`. */
export const FULFIL_STEPS = 12;

export const actions = [
  defineAction({
    id: "payments.refund",
    version: "1",
    params: z.object({ paymentId: z.string().max(500), amount: z.number().int(), currency: z.string().max(8), cardToken: z.string().optional(), memo: z.string().max(500).optional() }),
    idempotent: true,
    sensitive: ["/params/cardToken"],
    steps: [{ name: "refund", connector: "payments", operation: "refund" }],
  }),
  defineAction({
    id: "messages.send",
    version: "1",
    params: z.object({ to: z.string().max(200), body: z.string().max(2000) }),
    idempotent: false,
    steps: [{ name: "send", connector: "messages", operation: "send" }],
  }),
  // Long pages: a dozen steps, each failing once (retried); the last one ambiguous for orders
  // whose id starts with "lost", else it succeeds with a large result.
  defineAction({
    id: "orders.fulfil",
    version: "1",
    params: z.object({ orderId: z.string().max(200), amount: z.number().int(), lines: z.array(z.object({ sku: z.string(), quantity: z.number().int(), note: z.string() })).max(100).optional() }),
    idempotent: true,
    retry: { maxAttempts: 30, baseDelayMs: 5, maxDelayMs: 20 },
    steps: Array.from({ length: FULFIL_STEPS }, (_, i) => ({ name: `stage_${i}`, connector: "warehouse", operation: i === FULFIL_STEPS - 1 ? "dispatch" : "pick" })),
  }),
];

let sent = 0;
const tried = new Set<string>();
export const connectors = [
  defineConnector({ id: "payments", operations: { refund: ({ idempotencyKey }) => ({ outcome: "success", externalRef: `re_${idempotencyKey.slice(-6)}` }) } }),
  defineConnector({
    id: "messages",
    operations: { send: ({ input }) => ((input as { to: string }).to === "lost@example.com" ? { outcome: "ambiguous", reason: "gateway closed the connection after accepting the message" } : { outcome: "success", externalRef: `msg_${++sent}` }) },
  }),
  defineConnector({
    id: "warehouse",
    operations: {
      // Each step fails once, then succeeds (a retried attempt per step).
      pick: ({ idempotencyKey }) => (tried.has(idempotencyKey) ? { outcome: "success", externalRef: `pick_${idempotencyKey}` } : (tried.add(idempotencyKey), { outcome: "transient_failure", reason: "warehouse busy, try again" })),
      dispatch: ({ input }) =>
        (input as { orderId: string }).orderId.startsWith("lost")
          ? { outcome: "ambiguous", reason: "carrier accepted the parcel but sent no tracking number" }
          : { outcome: "success", externalRef: "parcel_9f8e7d6c5b4a39281706f5e4d3c2b1a0", output: { parcels: Array.from({ length: 24 }, (_, i) => ({ tracking: `TRK${String(i).padStart(4, "0")}9f8e7d6c5b4a3928`, carrier: "example-post", eta: "2026-12-03" })) } },
    },
  }),
];

export const policy = functionPolicy("console-test:v1", ({ request, approval }) => {
  const amount = Number(request.params.amount ?? 0);
  if (amount < 0) return { result: "DENY", reasons: ["refund-negative"] };
  if (amount > 5000) return approval?.status === "approved" ? "ALLOW" : { result: "REQUIRE_APPROVAL", reasons: ["refund-large"], approval: { approverRoles: ["approve"], quorum: 1 } };
  return "ALLOW";
});

export interface ConsoleRig {
  runtime: Runtime;
  server: RunningServer;
  url: string;
  /** Key texts by person: alice (admin), bob (approve), olga (operate), carol (approve; also a requester), sam (submit). */
  keys: Record<"alice" | "bob" | "olga" | "carol" | "sam", string>;
  worker: Worker;
  submit(body: { action: string; params: Record<string, unknown>; actor?: Actor; authorityRef?: string; idempotencyKey?: string }): Promise<{ invocationId: string }>;
  close(): Promise<void>;
}

let n = 0;

export async function startConsoleRig(): Promise<ConsoleRig> {
  const dir = mkdtempSync(join(tmpdir(), "writ-console-"));
  const config = defineConfig({
    store: { kind: "sqlite", path: join(dir, "writ.db") },
    keys: { dir: join(dir, "keys") },
    actions,
    connectors,
    policy,
    console: { spaces: ["prod"], livePollMs: 150 },
  });
  const runtime = await openRuntime(config, { cwd: dir });
  const { crypto, random, clock } = runtime.host.context.o;
  const key = async (name: string, roles: ApiRole[]): Promise<string> => (await createApiKey(runtime.store, crypto, random, { tenantId: SCOPE.tenantId, roles, name, spaces: ["prod"] }, clock.now())).key;
  const keys = { alice: await key("alice", ["admin"]), bob: await key("bob", ["approve"]), olga: await key("olga", ["operate"]), carol: await key("carol", ["approve", "submit"]), sam: await key("sam", ["submit"]) };
  // The agent submits with a key of its own (a key acts as its principal: docs/security.md).
  const agentKey = (await createApiKey(runtime.store, crypto, random, { tenantId: SCOPE.tenantId, roles: ["submit"], name: "support-bot", principal: AGENT, spaces: ["prod"] }, clock.now())).key;
  const root = { type: "user" as const, id: "root" };
  await runtime.host.authorities.create(SCOPE, { authorityRef: "support-bot", principal: AGENT, grantor: root, actions: ["*"] });
  await runtime.host.authorities.create(SCOPE, { authorityRef: "carol", principal: { type: "user", id: "carol" }, grantor: root, actions: ["*"] });
  const server = await startServer(runtime, { port: 0 });
  const worker = runtime.host.worker({ concurrency: 4, pollMs: 50 });
  worker.start();
  return {
    runtime,
    server,
    url: server.url,
    keys,
    worker,
    async submit(b) {
      const res = await fetch(`${server.url}/v1/spaces/${SCOPE.spaceId}/invocations`, {
        method: "POST",
        headers: { authorization: `Bearer ${b.actor?.id === "carol" ? keys.carol : agentKey}`, "content-type": "application/json" },
        body: JSON.stringify({ action: b.action, actionVersion: "1", actor: b.actor ?? AGENT, authorityRef: b.authorityRef ?? "support-bot", params: b.params, idempotencyKey: b.idempotencyKey ?? `k-${process.pid}-${++n}` }),
      });
      const j = (await res.json()) as { invocation?: { invocationId: string }; error?: unknown };
      if (!j.invocation) throw new Error(`submit failed: ${res.status} ${JSON.stringify(j)}`);
      return { invocationId: j.invocation.invocationId };
    },
    async close() {
      await worker.stop({ drain: false });
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Polls `fn` until it returns a value other than undefined (or throws after `ms`). */
export async function until<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
