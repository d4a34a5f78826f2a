/**
 * Writ as an MCP server, driven by the SDK's own Client over both transports (streamable HTTP at
 * /mcp on the server, and stdio: a real `writ mcp` child process on the same database).
 *
 * Invariants checked: tools/list shows exactly the actions the principal's authority covers, with
 * valid JSON Schemas; the actor of every call is the key's principal; every state of an invocation
 * reaches the agent as a structured result it can act on; a retried call with the same _meta key is
 * one effect; tasks are invocations (cancel cancels the invocation; the task survives a server
 * restart); bad input is a clear MCP error and executes nothing.
 */
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Invocation } from "../../src/core/types.js";
import { ACME, CONFIG, WRIT_BIN, api, connectClient, eventually, openWorld, type Connected, type Transport, type World } from "./fixture.js";

type Structured = { invocationId: string; status: string; action: string; retry: string; next: string; replayed?: boolean; outputs?: any; reasons?: string[]; approval?: any; reconciliationId?: string }; // eslint-disable-line @typescript-eslint/no-explicit-any

let seq = 0;
const amount = (): number => 1 + (++seq % 900); // distinct small amounts keep derived keys distinct

describe.each(["http", "stdio"] as const)("MCP gateway over %s", (transport: Transport) => {
  let world: World;
  let bot: Connected;

  beforeAll(async () => {
    world = await openWorld({ worker: transport === "http" });
    bot = await connectClient(world, transport, world.keys.bot);
  }, 60_000);

  afterAll(async () => {
    await bot?.close();
    await world?.close();
    rmSync(world.dir, { recursive: true, force: true });
  });

  const call = async (c: Connected, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>, opts: Record<string, unknown> = {}) => {
    const r = await c.client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, { timeout: 30_000, ...opts });
    return r as { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: Structured };
  };
  const inv = async (id: string): Promise<Invocation> => (await world.runtime.host.get(ACME, id))!;
  const approvalOf = async (id: string): Promise<string> => (await eventually(() => inv(id), (i) => i.status === "awaiting_approval" && !!i.approvalId, "awaiting approval")).approvalId!;
  const approve = async (approvalId: string) => {
    const r = await api(world, world.keys.alice, "POST", `/v1/spaces/prod/approvals/${approvalId}/approve`, {});
    expect(r.status).toBe(200);
  };

  it("lists only the tools the principal's authority covers, with valid JSON Schemas and annotations from the definitions", async () => {
    const { tools } = await bot.client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["payments.refund", "reports.view", "writ_invocation_status"]);
    const ajv = new Ajv2020({ strict: false });
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(() => ajv.compile(t.inputSchema)).not.toThrow();
      expect(() => ajv.compile(t.outputSchema!)).not.toThrow();
    }
    const refund = tools.find((t) => t.name === "payments.refund")!;
    expect(refund.inputSchema.required).toEqual(["amount", "currency"]);
    expect(refund.description).toContain("Refunds an amount");
    expect(refund.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true, title: "Refund a payment" });
    expect(refund.title).toBe("Refund a payment");
    const view = tools.find((t) => t.name === "reports.view")!;
    expect(view.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    // No title in its definition: its one-sentence description is the title.
    expect(view.title).toBe("Reads a report");
    // Another principal of the same tenant holds only reports.*: it sees only that.
    const other = await connectClient(world, transport, world.keys.other);
    try {
      expect((await other.client.listTools()).tools.map((t) => t.name).sort()).toEqual(["reports.view", "writ_invocation_status"]);
    } finally {
      await other.close();
    }
  }, 60_000);

  it("an allowed call succeeds with a structured result; the journal records it under the key's principal", async () => {
    const before = world.effects().length;
    const r = await call(bot, "payments.refund", { amount: 10, currency: "EUR" });
    expect(r.isError).toBeFalsy();
    const s = r.structuredContent!;
    expect(s).toMatchObject({ status: "succeeded", action: "payments.refund", retry: "not_needed", outputs: { refund: { refunded: 10 } } });
    expect(world.effects().length).toBe(before + 1);
    const i = await inv(s.invocationId);
    expect(i.request.actor).toEqual({ type: "agent", id: "bot" });
    expect(i.request.authorityRef).toBe("auth-bot");
    // The invocation records who submitted it: the principal and the key (the security work's submittedBy).
    expect(i.submittedBy?.principal).toEqual({ type: "agent", id: "bot" });
    expect(i.submittedBy?.keyId).toMatch(/.+/);
    const j = await api(world, world.keys.ops, "GET", "/v1/spaces/prod/journal?limit=1000");
    // Sealed entries, and any not yet sealed by the sequencer (docs/journal.md).
    const all = [...(j.json.entries as unknown[]), ...((j.json.unsealed as unknown[] | undefined) ?? [])] as { type: string; refs: { invocationId?: string }; data: { actor?: unknown } }[];
    const mine = all.filter((e) => e.refs.invocationId === s.invocationId);
    expect(mine.map((e) => e.type)).toEqual(expect.arrayContaining(["invocation.submitted", "invocation.succeeded"]));
    expect(mine.find((e) => e.type === "invocation.submitted")!.data.actor).toEqual({ type: "agent", id: "bot" });
  }, 30_000);

  it("a denied call says so with the policy's reason, and nothing runs", async () => {
    const before = world.effects().length;
    const r = await call(bot, "payments.refund", { amount: -5, currency: "EUR" });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toMatchObject({ status: "denied", retry: "do_not_retry", reasons: ["negative amounts are refused"] });
    expect(r.content[0]!.text).toContain("negative amounts are refused");
    expect(world.effects().length).toBe(before);
  }, 30_000);

  it("a call that needs approval answers who must act and until when; approved through the API, the status tool reaches succeeded", async () => {
    const r = await call(bot, "payments.refund", { amount: 5000 + amount(), currency: "EUR" });
    const s = r.structuredContent!;
    expect(r.isError).toBeFalsy();
    expect(s).toMatchObject({ status: "awaiting_approval", retry: "wait" });
    expect(s.approval).toMatchObject({ approverRoles: ["approve"], quorum: 1, votes: 0 });
    expect(Date.parse(s.approval.expiresAt)).toBeGreaterThan(Date.now());
    expect(s.next).toContain("writ_invocation_status");
    await approve(s.approval.approvalId);
    const done = await call(bot, "writ_invocation_status", { invocationId: s.invocationId, waitMs: 15_000 });
    expect(done.structuredContent).toMatchObject({ invocationId: s.invocationId, status: "succeeded", outputs: { refund: {} } });
  }, 40_000);

  it("as a task: the task id is the invocation id; approved through the API, the task completes with the result", async () => {
    const created = await bot.client.request({ method: "tools/call", params: { name: "payments.refund", arguments: { amount: 6000 + amount(), currency: "EUR" }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
    const taskId = created.task.taskId;
    expect(taskId).toMatch(/^inv_/);
    expect((await inv(taskId)).request.actor).toEqual({ type: "agent", id: "bot" });
    const waiting = await eventually(() => bot.client.experimental.tasks.getTask(taskId), (t) => (t.statusMessage ?? "").startsWith("awaiting_approval"), "task awaiting approval");
    expect(waiting.status).toBe("working");
    await approve(await approvalOf(taskId));
    await eventually(() => bot.client.experimental.tasks.getTask(taskId), (t) => t.status === "completed", "task completed");
    const result = await bot.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ invocationId: taskId, status: "succeeded" });
  }, 40_000);

  it("an ambiguous outcome says reconciliation required: do not retry", async () => {
    const r = await call(bot, "payments.refund", { amount: amount(), currency: "EUR", mode: "ambiguous" });
    expect(r.isError).toBe(true);
    const s = r.structuredContent!;
    expect(s).toMatchObject({ status: "reconciliation_required", retry: "do_not_retry" });
    expect(s.reconciliationId).toMatch(/.+/);
    expect(s.next).toContain("DO NOT retry");
    const recs = await world.runtime.host.reconcile.list(ACME, { status: "open" });
    expect(recs.some((x) => x.reconciliationId === s.reconciliationId && x.invocationId === s.invocationId)).toBe(true);
  }, 30_000);

  it("a retried call with the same _meta key is one effect (and a retry without a key is too: the key is derived)", async () => {
    const meta = { "writ/idempotencyKey": `retry-${transport}-${amount()}` };
    const args = { amount: amount(), currency: "EUR" };
    const before = world.effects().length;
    const a = await call(bot, "payments.refund", args, meta);
    const b = await call(bot, "payments.refund", args, meta);
    expect(a.structuredContent!.status).toBe("succeeded");
    expect(b.structuredContent).toMatchObject({ invocationId: a.structuredContent!.invocationId, status: "succeeded", replayed: true });
    expect(world.effects().length).toBe(before + 1);
    expect((await inv(a.structuredContent!.invocationId)).idempotencyKey).toBe(`mcp:${meta["writ/idempotencyKey"]}`);
    const args2 = { amount: amount(), currency: "USD" };
    const c = await call(bot, "payments.refund", args2);
    const d = await call(bot, "payments.refund", args2);
    expect(d.structuredContent).toMatchObject({ invocationId: c.structuredContent!.invocationId, replayed: true });
  }, 30_000);

  it("cancelling a task cancels the invocation before any step", async () => {
    const before = world.effects().length;
    const created = await bot.client.request({ method: "tools/call", params: { name: "payments.refund", arguments: { amount: 7000 + amount(), currency: "EUR" }, task: {} } }, CreateTaskResultSchema);
    const taskId = created.task.taskId;
    await approvalOf(taskId);
    const cancelled = await bot.client.experimental.tasks.cancelTask(taskId);
    expect(cancelled.status).toBe("cancelled");
    expect((await inv(taskId)).status).toBe("cancelled");
    // The SDK's own refusal, too, carries its code once.
    await expect(bot.client.experimental.tasks.cancelTask(taskId)).rejects.toThrow(/^MCP error -32602: Cannot cancel task in terminal status/);
    expect(world.effects().length).toBe(before);
  }, 40_000);

  it("a server restart while a task waits: the task is still there, and completes after approval", async () => {
    const created = await bot.client.request({ method: "tools/call", params: { name: "payments.refund", arguments: { amount: 9000 + amount(), currency: "EUR" }, task: {} } }, CreateTaskResultSchema);
    const taskId = created.task.taskId;
    const approvalId = await approvalOf(taskId);
    if (transport === "stdio") {
      // The real process dies: no goodbye, nothing flushed.
      process.kill(bot.pid!, "SIGKILL");
      await bot.close().catch(() => {});
    } else {
      await bot.close();
      const dir = world.dir;
      await world.close();
      world = await openWorld({ dir, worker: true });
    }
    bot = await connectClient(world, transport, world.keys.bot);
    const again = await bot.client.experimental.tasks.getTask(taskId);
    expect(again).toMatchObject({ taskId, status: "working" });
    expect(again.statusMessage).toContain("awaiting_approval");
    await approve(approvalId);
    await eventually(() => bot.client.experimental.tasks.getTask(taskId), (t) => t.status === "completed", "task completed after restart");
    const listed = await bot.client.experimental.tasks.listTasks();
    expect(listed.tasks.some((t) => t.taskId === taskId)).toBe(true);
  }, 60_000);

  describe("bad input: a clear MCP error, nothing executed", () => {
    const nothingRuns = async (f: () => Promise<unknown>) => {
      const effects = world.effects().length;
      const count = (await world.runtime.host.list(ACME, { limit: 1000 })).length;
      await f();
      expect(world.effects().length).toBe(effects);
      expect((await world.runtime.host.list(ACME, { limit: 1000 })).length).toBe(count);
    };

    it("an unknown tool, and a tool the authority does not cover", async () => {
      await nothingRuns(async () => {
        await expect(call(bot, "payments.nope", {})).rejects.toThrow(McpError);
        // The code is said once: the client adds "MCP error <code>: ", the server's message does not carry it too.
        await expect(call(bot, "payments.nope", {})).rejects.toThrow(/^MCP error -32602: unknown tool payments.nope: no such tool/);
        await expect(call(bot, "admin.purge", {})).rejects.toThrow(/unknown tool admin.purge/);
      });
    });

    it("arguments failing the schema", async () => {
      await nothingRuns(async () => {
        const r = await call(bot, "payments.refund", { amount: "ten", currency: "EURO" });
        expect(r.isError).toBe(true);
        expect(r.content[0]!.text).toMatch(/^Invalid arguments for payments.refund: .*amount/);
        expect(r.content[0]!.text).toContain("currency");
        // Said once: not "Invalid arguments for X: invalid params for X: ...".
        expect(r.content[0]!.text).not.toMatch(/invalid params/i);
      });
    });

    it("oversized arguments", async () => {
      await nothingRuns(async () => {
        await expect(call(bot, "payments.refund", { amount: 1, currency: "EUR", note: "x".repeat(10_000) })).rejects.toThrow(/bytes; the limit is 8192/);
      });
    });

    it("a bad idempotency key in _meta", async () => {
      await nothingRuns(async () => {
        const r = await call(bot, "payments.refund", { amount: 1, currency: "EUR" }, { "writ/idempotencyKey": 42 });
        expect(r.isError).toBe(true);
        expect(r.content[0]!.text).toContain("writ/idempotencyKey");
      });
    });

    it("a key of another tenant sees none of this tenant's tools, invocations or tasks", async () => {
      const mine = await call(bot, "payments.refund", { amount: amount(), currency: "EUR" });
      const id = mine.structuredContent!.invocationId;
      const globex = await connectClient(world, transport, world.keys.globex);
      try {
        await nothingRuns(async () => {
          expect((await globex.client.listTools()).tools.map((t) => t.name)).toEqual(["writ_invocation_status"]);
          await expect(call(globex, "payments.refund", { amount: 1, currency: "EUR" })).rejects.toThrow(/unknown tool/);
          const st = await call(globex, "writ_invocation_status", { invocationId: id });
          expect(st.isError).toBe(true);
          expect(st.content[0]!.text).toContain("No invocation");
          await expect(globex.client.experimental.tasks.getTask(id)).rejects.toThrow(/not found/i);
        });
      } finally {
        await globex.close();
      }
    }, 30_000);

    it("a key without the submit role sees no action tools and cannot call one", async () => {
      const viewer = await connectClient(world, transport, world.keys.viewer);
      try {
        expect((await viewer.client.listTools()).tools.map((t) => t.name)).toEqual(["writ_invocation_status"]);
        await expect(call(viewer, "payments.refund", { amount: 1, currency: "EUR" })).rejects.toThrow(/lacks the submit role/);
      } finally {
        await viewer.close();
      }
    }, 30_000);

    if (transport === "http") {
      it("no key, a bad key, and a bad Origin are refused before any session", async () => {
        const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
        const post = (headers: Record<string, string>) =>
          fetch(`${world.server.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body: JSON.stringify(init) });
        const none = await post({});
        expect(none.status).toBe(401);
        expect(none.headers.get("www-authenticate")).toContain("Bearer");
        expect(((await none.json()) as { error: { message: string } }).error.message).toContain("API key is required");
        const bad = await post({ authorization: "Bearer writ_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBB" });
        expect(bad.status).toBe(401);
        const evil = await post({ authorization: `Bearer ${world.keys.bot}`, origin: "http://evil.example" });
        expect(evil.status).toBe(403);
        expect(((await evil.json()) as { error: { message: string } }).error.message).toContain("Origin");
        expect((await post({ authorization: `Bearer ${world.keys.bot}`, origin: "http://localhost:3000" })).status).toBe(200);
        // The SDK client without a key: connecting fails with the 401.
        const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
        const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
        await expect(new Client({ name: "x", version: "1" }).connect(new StreamableHTTPClientTransport(new URL(`${world.server.url}/mcp`)))).rejects.toThrow(/401|API key/);
      });

      it("a session id is bound to its key: another key presenting it is answered not found", async () => {
        const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
        const opened = await fetch(`${world.server.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${world.keys.bot}` }, body: JSON.stringify(init) });
        const sid = opened.headers.get("mcp-session-id")!;
        await opened.body?.cancel();
        expect(sid).toMatch(/^mcp_/);
        const list = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };
        const stolen = await fetch(`${world.server.url}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: `Bearer ${world.keys.other}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify(list) });
        expect(stolen.status).toBe(404);
      });
    } else {
      it("writ mcp without a key, or with a bad one, exits with a clear error and serves nothing", () => {
        const env = { ...process.env, WRIT_MCP_TEST_DIR: world.dir, WRIT_MCP_KEY: "" };
        const none = spawnSync(process.execPath, [WRIT_BIN, "mcp", "--config", CONFIG], { env, input: "", encoding: "utf8", timeout: 30_000 });
        expect(none.status).toBe(2);
        expect(none.stderr).toContain("an API key is required");
        expect(none.stdout).toBe("");
        const bad = spawnSync(process.execPath, [WRIT_BIN, "mcp", "--config", CONFIG, "--key", "writ_AAAAAAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBB"], { env, input: "", encoding: "utf8", timeout: 30_000 });
        expect(bad.status).not.toBe(0);
        expect(bad.stderr).toContain("not valid");
        expect(bad.stdout).toBe("");
      }, 60_000);
    }
  });
});
