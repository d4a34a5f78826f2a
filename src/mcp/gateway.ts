/**
 * Writ as an MCP server (docs/mcp.md). Each action the caller's principal holds an authority for is
 * a tool; a tool call is a governed invocation submitted through the host (actor = the key's
 * principal, authority = the principal's); long-running calls are MCP tasks whose id is the
 * invocation id, so a task outlives the session and the server process.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ActionDefinition } from "../core/action.js";
import { canonicalize } from "../core/canonical.js";
import { base64url, utf8 } from "../core/encoding.js";
import { WritError, errorMessage } from "../core/errors.js";
import type { ActionRequest, Authority, Invocation, Json } from "../core/types.js";
import type { Host } from "../host/host.js";
import { silentLogger } from "../host/options.js";
import type { McpCaller } from "./principal.js";
import { invocationChanges } from "../host/changes.js";
import { grantedActions } from "../host/granted.js";
import { errorResult, isSettled, stopsWaiting, toolResult, type CallToolAnswer, type Extras } from "./results.js";
import { RESULT_SCHEMA, STATUS_INPUT_SCHEMA, inputSchemaOf } from "./schema.js";
import { createInvocationTaskStore } from "./task-store.js";
import { IDEMPOTENCY_META, storedIdempotencyKey } from "./idempotency.js";

export { IDEMPOTENCY_META, storedIdempotencyKey };

/** The status tool every principal sees. */
export const STATUS_TOOL = "writ_invocation_status";

import { resolveGatewayLimits, type McpGatewayOptions, type ResolvedGatewayOptions } from "./options.js";

export { type McpGatewayOptions, type ResolvedGatewayOptions };

/** The gateway's options with their defaults (docs/mcp.md). */
export function resolveGatewayOptions(o: McpGatewayOptions = {}): ResolvedGatewayOptions {
  return { ...resolveGatewayLimits(o), logger: o.logger ?? silentLogger };
}

/** An MCP tool name for an action id (MCP names allow letters, digits, `_`, `-`, `.`). */
export function toolNameOf(actionId: string): string {
  return actionId.replace(/[^A-Za-z0-9_.-]/g, "_");
}

interface VisibleTool {
  tool: Tool;
  action: ActionDefinition<unknown>;
  authority: Authority;
}

/**
 * A tool's title: the action's `title`, else its description when that is one short sentence, else
 * a readable form of its id (`payments.refund_all` -> "Payments refund all").
 */
export function toolTitleOf(a: Pick<ActionDefinition<unknown>, "id" | "title" | "description">): string {
  if (a.title !== undefined && a.title.trim().length > 0) return a.title.trim();
  const d = a.description?.trim().replace(/\.$/, "");
  if (d !== undefined && d.length > 0 && d.length <= 80 && !/[.\n]/.test(d)) return d;
  const words = a.id.replace(/([a-z0-9])([A-Z])/g, "$1 $2").split(/[^A-Za-z0-9]+/).filter((w) => w.length > 0).join(" ").toLowerCase();
  return words.length > 0 ? words[0]!.toUpperCase() + words.slice(1) : a.id;
}

function toolOf(name: string, a: ActionDefinition<unknown>): Tool {
  const readOnly = a.readOnly === true;
  const governance = "Governed by Writ: policy decides, a person may have to approve, and every outcome is journaled. Results say what happened and what to do next.";
  const title = toolTitleOf(a);
  return {
    name,
    title,
    description: `${a.description ?? `Runs the Writ action ${a.id} (version ${a.version}).`}\n\n${governance}`,
    inputSchema: inputSchemaOf(a),
    outputSchema: RESULT_SCHEMA,
    annotations: {
      title,
      readOnlyHint: readOnly,
      destructiveHint: readOnly ? false : (a.destructive ?? true),
      idempotentHint: a.idempotent,
      openWorldHint: a.openWorld ?? true,
    },
    execution: { taskSupport: "optional" },
    _meta: { "writ/action": a.id, "writ/actionVersion": a.version },
  };
}

const STATUS_TOOL_DEF: Tool = {
  name: STATUS_TOOL,
  title: "Writ invocation status",
  description: "Where a Writ invocation stands (the invocationId a Writ tool returned): succeeded with outputs, denied, waiting for approval (who must act, until when), reconciliation required (do not retry), failed. Optionally waits up to waitMs for a change.",
  inputSchema: STATUS_INPUT_SCHEMA,
  outputSchema: RESULT_SCHEMA,
  annotations: { title: "Writ invocation status", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  execution: { taskSupport: "forbidden" },
};

function sameActor(a: { type: string; id: string }, b: { type: string; id: string }): boolean {
  return a.type === b.type && a.id === b.id;
}

/** The gateway's reads and waits over the host, shared by the tool handlers and the task store. */
export interface GatewayReads {
  /** The caller's own invocation, or null (another principal's or another scope's is "not there"). */
  own(invocationId: string): Promise<Invocation | null>;
  extras(inv: Invocation): Promise<Extras>;
  answer(inv: Invocation, replayed?: boolean): Promise<CallToolAnswer>;
}

export function gatewayReads(host: Host, caller: McpCaller): GatewayReads {
  const reads: GatewayReads = {
    async own(invocationId) {
      if (typeof invocationId !== "string" || invocationId.length === 0 || invocationId.length > 200) return null;
      const inv = await host.get(caller.scope, invocationId);
      return inv && sameActor(inv.request.actor, caller.principal) ? inv : null;
    },
    async extras(inv) {
      if (inv.status === "awaiting_approval" && inv.approvalId) return { approval: await host.approvals.get(caller.scope, inv.approvalId) };
      if (inv.status === "reconciliation_required") {
        const opts = { status: "open" as const, invocationId: inv.invocationId, limit: 1 };
        const recs = await host.reconcile.list(caller.scope, opts);
        return recs[0] ? { reconciliationId: recs[0].reconciliationId } : {};
      }
      return {};
    },
    async answer(inv, replayed) {
      return toolResult(inv, { ...(await reads.extras(inv)), ...(replayed ? { replayed } : {}) });
    },
  };
  return reads;
}

/**
 * Creates the MCP server of one session for an authenticated caller. Connect it to a transport
 * (`server.connect(transport)`); `serveMcpStdio` and the `/mcp` route of `writ serve` do.
 * @example
 * const server = createMcpServer(runtime.host, callerOf(keyRecord, "payments"), { callWaitMs: 5000 });
 * await server.connect(new StdioServerTransport());
 */
export function createMcpServer(host: Host, caller: McpCaller, options: McpGatewayOptions = {}): Server {
  const o = resolveGatewayOptions(options);
  const { clock, crypto } = host.context.o;
  const reads = gatewayReads(host, caller);
  const changes = invocationChanges(host);
  const server = new Server(
    { name: "writ", version: "0.1.0", title: "Writ: governed actions" },
    {
      capabilities: { tools: { listChanged: false }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
      taskStore: createInvocationTaskStore(host, caller, reads, o),
      instructions:
        "Each tool is a Writ action run under your authority. A result's `retry` and `next` fields say what to do: never retry a call whose status is reconciliation_required; for waiting states call writ_invocation_status. Pass `_meta: { \"writ/idempotencyKey\": \"...\" }` to make a call's identity explicit.",
    },
  );

  async function visible(): Promise<Map<string, VisibleTool>> {
    const out = new Map<string, VisibleTool>();
    if (!caller.canSubmit) return out;
    for (const { action, authority } of await grantedActions(host, caller.scope, caller.principal)) {
      const name = toolNameOf(action.id);
      if (name === STATUS_TOOL || out.has(name)) {
        o.logger.warn({ action: action.id, tool: name }, "MCP: two actions map to one tool name; the later one is not offered");
        continue;
      }
      out.set(name, { tool: toolOf(name, action), action, authority });
    }
    return out;
  }

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const tools = [...(await visible()).values()].map((v) => v.tool);
    return { tools: [...tools, STATUS_TOOL_DEF] };
  });

  server.setRequestHandler(CallToolRequestSchema, async (req, extra): Promise<CallToolAnswer | { task: unknown }> => {
    const { name } = req.params;
    const args: unknown = req.params.arguments ?? {};
    const size = jsonBytes(args);
    if (size > o.maxArgumentsBytes) throw new McpError(ErrorCode.InvalidParams, `the arguments of ${name.slice(0, 100)} are ${size} bytes; the limit is ${o.maxArgumentsBytes}. Nothing was run.`);
    const progressToken = req.params._meta?.progressToken;
    const progress = progressToken === undefined ? null : makeProgress(progressToken, extra.sendNotification);
    if (name === STATUS_TOOL) {
      if (req.params.task) throw new McpError(ErrorCode.InvalidParams, `${STATUS_TOOL} does not run as a task`);
      return statusCall(args, extra.signal, progress);
    }
    const v = (await visible()).get(name);
    if (!v) {
      const why = caller.canSubmit ? "no such tool, or your authority does not cover it" : "this API key lacks the submit role in this space";
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${name.slice(0, 100)}: ${why}. Call tools/list to see the tools you may use. Nothing was run.`);
    }
    const key = idempotencyKeyOf(req.params._meta, v.action, args);
    if (typeof key !== "string") return key;
    const request: ActionRequest = {
      tenantId: caller.scope.tenantId,
      spaceId: caller.scope.spaceId,
      action: v.action.id,
      actionVersion: v.action.version,
      actor: { ...caller.principal },
      authorityRef: v.authority.authorityRef,
      params: args as { [k: string]: Json },
      idempotencyKey: key,
    };
    let inv: Invocation;
    let replayed: boolean;
    try {
      ({ invocation: inv, replayed } = await host.submit(request, { submittedBy: caller.submittedBy }));
    } catch (e) {
      if (e instanceof WritError && e.code === "VALIDATION_FAILED") return errorResult(`Invalid arguments for ${name}: ${issuesOf(e)}. Nothing was run; fix the arguments and call again.`);
      if (e instanceof WritError && e.code === "IDEMPOTENCY_CONFLICT") return errorResult(`The idempotency key ${key} was already used with other arguments for ${name}. Nothing was run; use a new key for a new request.`);
      o.logger.error({ err: errorMessage(e), tool: name }, "MCP: submit failed");
      throw new McpError(ErrorCode.InternalError, "Writ could not admit the call (a server fault, logged); it is not known to have run. Retry the same call: the idempotency key makes a retry safe.");
    }
    o.logger.info({ tool: name, invocationId: inv.invocationId, replayed, principal: `${caller.principal.type}:${caller.principal.id}` }, "MCP tool call admitted");
    if (req.params.task) {
      const task = await extra.taskStore!.createTask({ ...(req.params.task.ttl !== undefined ? { ttl: req.params.task.ttl } : {}), pollInterval: o.taskPollIntervalMs, context: { invocationId: inv.invocationId } });
      return { task };
    }
    watchCancel(inv.invocationId, extra.signal);
    const last = await follow(inv, o.callWaitMs, extra.signal, progress, stopsWaiting);
    return reads.answer(last, replayed);
  });

  /** A call the client cancels (notifications/cancelled) cancels its invocation if no step started. */
  function watchCancel(invocationId: string, signal: AbortSignal): void {
    const cancel = (): void => {
      // The SDK aborts handlers on a cancel notification and also when the connection closes;
      // only the first (the transport is still there) is the client's wish to cancel.
      setImmediate(() => {
        if (server.transport === undefined) return;
        host.cancel(caller.scope, invocationId, caller.principal).then(
          () => o.logger.info({ invocationId }, "MCP: call cancelled by the client; invocation cancelled"),
          (e: unknown) => o.logger.info({ invocationId, err: errorMessage(e) }, "MCP: call cancelled by the client; the invocation could not be cancelled"),
        );
      });
    };
    // Cancelled while it was being admitted: the signal fired before anyone listened.
    if (signal.aborted) cancel();
    else signal.addEventListener("abort", cancel, { once: true });
  }

  /**
   * Reads the invocation until `done` holds, the wait ends or the call is cancelled. Woken by the
   * host's events for it (a worker in this process); every `pollMs` it reads anyway, for changes
   * made by other processes; with a progress token, at least every two seconds.
   */
  async function follow(inv: Invocation, waitMs: number, signal: AbortSignal, progress: Progress | null, done: (cur: Invocation) => boolean): Promise<Invocation> {
    const until = clock.now() + waitMs;
    let cur = inv;
    let lastSent = "";
    let sentAt = 0;
    // Watching from before the first read: an event between a read and the wait is not missed.
    const watch = changes.watch(inv.invocationId);
    try {
      for (;;) {
        const now = clock.now();
        if (progress && (cur.status !== lastSent || now - sentAt >= 2000)) {
          lastSent = cur.status;
          sentAt = now;
          await progress(`${cur.action}: ${cur.status}`);
        }
        if (done(cur) || signal.aborted || now >= until) return cur;
        await watch.next(Math.min(o.pollMs, until - now, progress ? 2000 : Infinity), signal);
        cur = (await host.get(caller.scope, cur.invocationId)) ?? cur;
      }
    } finally {
      watch.close();
    }
  }

  async function statusCall(args: unknown, signal: AbortSignal, progress: Progress | null): Promise<CallToolAnswer> {
    const a = args as { invocationId?: unknown; waitMs?: unknown };
    if (typeof a !== "object" || a === null || typeof a.invocationId !== "string" || a.invocationId.length === 0 || a.invocationId.length > 200) {
      return errorResult(`${STATUS_TOOL} needs { invocationId: string } (the invocationId a Writ tool returned)`);
    }
    const extraKeys = Object.keys(a).filter((k) => k !== "invocationId" && k !== "waitMs");
    if (extraKeys.length > 0) return errorResult(`${STATUS_TOOL}: unknown argument(s) ${extraKeys.join(", ").slice(0, 200)}`);
    if (a.waitMs !== undefined && !(typeof a.waitMs === "number" && Number.isInteger(a.waitMs) && a.waitMs >= 0 && a.waitMs <= 60_000)) return errorResult(`${STATUS_TOOL}: waitMs must be an integer from 0 to 60000`);
    const inv = await reads.own(a.invocationId);
    if (!inv) return errorResult(`No invocation ${a.invocationId.slice(0, 200)} of yours in this space.`);
    // Waiting for a change: a state where waiting cannot help, other than the one it was in.
    const last = await follow(inv, a.waitMs ?? 0, signal, progress, (cur) => isSettled(cur) || (stopsWaiting(cur) && cur.status !== inv.status));
    return reads.answer(last);
  }

  function idempotencyKeyOf(meta: { [k: string]: unknown } | undefined, action: ActionDefinition<unknown>, args: unknown): string | CallToolAnswer {
    const given = meta?.[IDEMPOTENCY_META];
    if (given !== undefined) {
      // eslint-disable-next-line no-control-regex -- control characters are not part of a key
      if (typeof given !== "string" || given.length === 0 || given.length > 200 || /[\u0000-\u001f\u007f-\u009f]/.test(given)) {
        return errorResult(`_meta["${IDEMPOTENCY_META}"] must be a string of 1-200 printable characters. Nothing was run.`);
      }
      return storedIdempotencyKey(given);
    }
    // Derived: the same principal calling the same tool with the same arguments is the same call,
    // so a client's retry after a lost answer is not a second action (docs/mcp.md).
    let text: string;
    try {
      text = canonicalize({ principal: caller.principal, action: action.id, version: action.version, arguments: args as Json });
    } catch (e) {
      return errorResult(`The arguments cannot be read as JSON (${errorMessage(e)}). Nothing was run.`);
    }
    return `mcp:derived:${base64url(crypto.sha256(utf8(text)))}`;
  }

  return server;
}

type Progress = (message: string) => Promise<void>;

function makeProgress(token: string | number, send: (n: { method: "notifications/progress"; params: { progressToken: string | number; progress: number; message: string } }) => Promise<void>): Progress {
  let n = 0;
  return async (message) => {
    n += 1;
    try {
      await send({ method: "notifications/progress", params: { progressToken: token, progress: n, message } });
    } catch {
      // A notification that cannot be sent changes nothing about the invocation.
    }
  };
}

/** What a refused submit says is wrong: the params schema's issues, else the error's own message. */
function issuesOf(e: WritError): string {
  const issues = (e.details as { issues?: unknown } | undefined)?.issues;
  return Array.isArray(issues) && issues.length > 0 ? issues.map(String).join("; ") : e.message;
}

function jsonBytes(v: unknown): number {
  try {
    return utf8(JSON.stringify(v) ?? "").length;
  } catch {
    return Number.MAX_SAFE_INTEGER;
  }
}
