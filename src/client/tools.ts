/**
 * Governed tools: the one core the agent framework adapters (`writ/ai-sdk`, `writ/openai-agents`,
 * `writ/langchain`) turn into their framework's tool shape (docs/client.md, Governed tools). Each
 * tool is a Writ action the API key's principal may ask for; running it submits a governed
 * invocation through the client (actor: the key's principal; authority: the one the listing
 * names), waits a bounded time and answers in words a model can act on: done with outputs, denied
 * with the policy's reasons, waiting for a named approval, or an unknown outcome a person resolves.
 * A retried tool call is not a second action: its idempotency key comes from the tool call's id.
 */
import { canonicalize } from "../core/canonical.js";
import type { Json } from "../core/types.js";
import { describe, type WritToolResult } from "../mcp/results.js";
import { STATUS_INPUT_SCHEMA } from "../mcp/schema.js";
import type { WritClient } from "./client.js";
import { WritApiError, isWritApiError } from "./errors.js";
import type { Approval, GrantedAction, Invocation } from "./types.js";

/** The status tool every tool set includes unless turned off: where an invocation stands now. */
export const STATUS_TOOL_NAME = "writ_invocation_status";

export interface GovernedToolsOptions {
  /** Only these actions (ids); an id the key's principal may not ask for is an error. @defaultValue every action the listing gives */
  actions?: readonly string[];
  /** How long a tool call waits for its invocation to settle before answering "in progress". @defaultValue 10000 */
  waitMs?: number;
  /**
   * Goes before each tool call id in the idempotency key: `<keyPrefix>:<tool>:<toolCallId>`.
   * Tool call ids are unique within one conversation or run only; give a run or conversation id
   * here when ids may repeat across them. @defaultValue "tool"
   */
  keyPrefix?: string;
  /** Offer `writ_invocation_status` too (follows an invocation a tool call left waiting). @defaultValue true */
  statusTool?: boolean;
}

/** What a tool call answers: words for the model and the structured result. */
export interface ToolOutcome {
  /** What happened and what to do next, in words (what the adapters give the model). */
  text: string;
  /** The structured result; null when nothing was admitted (bad arguments, a reused call id). */
  result: (WritToolResult & { approvalId?: string }) | null;
}

/** One call of a tool: the framework's call id (the idempotency key's source) and its abort signal. */
export interface ToolCall {
  toolCallId?: string | undefined;
  signal?: AbortSignal | undefined;
}

/** A governed tool, framework-neutral: the adapters convert its shape, nothing more. */
export interface GovernedTool {
  /** The tool name: the action id with every character outside `A-Z a-z 0-9 _ -` as `_` (`payments.refund` -> `payments_refund`). */
  name: string;
  title: string;
  description: string;
  /** JSON Schema of the arguments (the action's params). */
  inputSchema: Record<string, unknown>;
  annotations: GrantedAction["annotations"];
  /** The Writ action (absent on the status tool). */
  action?: { id: string; version: string; authorityRef: string };
  run(args: unknown, call?: ToolCall): Promise<ToolOutcome>;
}

const GOVERNANCE = "Governed by Writ: policy decides, a person may have to approve, and every outcome is journaled. The answer says what happened and what to do next.";

/** A tool name for an action id: OpenAI and the AI SDK allow `^[a-zA-Z0-9_-]{1,64}$`. */
export function toolNameOf(actionId: string): string {
  return actionId.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
}

function fail(message: string): never {
  throw new WritApiError("INVALID_OPTION", 0, message);
}

function checkOptions(o: GovernedToolsOptions): Required<Omit<GovernedToolsOptions, "actions">> & { actions?: readonly string[] | undefined } {
  if (typeof o !== "object" || o === null) fail("governedTools: options must be an object");
  const waitMs = o.waitMs ?? 10_000;
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > 600_000) fail("governedTools: waitMs must be an integer from 0 to 600000");
  const keyPrefix = o.keyPrefix ?? "tool";
  if (typeof keyPrefix !== "string" || keyPrefix.length === 0 || keyPrefix.length > 100) fail("governedTools: keyPrefix must be 1-100 characters");
  if (o.actions !== undefined && (!Array.isArray(o.actions) || !o.actions.every((a) => typeof a === "string"))) fail("governedTools: actions must be a list of action ids");
  return { waitMs, keyPrefix, statusTool: o.statusTool ?? true, actions: o.actions };
}

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The idempotency key of a tool call: `<prefix>:<tool>:<toolCallId>`, so the framework's retry of
 * one call is the same request; without a call id, derived from the arguments (the same arguments
 * are the same call). Keys over the API's 255 characters are hashed.
 */
export async function toolCallKey(prefix: string, tool: GovernedTool & { action: object }, args: unknown, toolCallId: string | undefined): Promise<string> {
  if (toolCallId !== undefined && toolCallId.length > 0) {
    const key = `${prefix}:${tool.name}:${toolCallId}`;
    return key.length <= 255 ? key : `${prefix}:${tool.name}:sha256:${await sha256Hex(toolCallId)}`;
  }
  return `${prefix}:${tool.name}:derived:${await sha256Hex(canonicalize({ action: tool.action.id, version: tool.action.version, arguments: args as Json }))}`;
}

/** What a refused submit says is wrong: the params schema's issues (text, or `{ path, message }`), else the error's message. */
function issuesOf(e: WritApiError): string {
  const issues = (e.details as { issues?: unknown } | undefined)?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return e.message;
  return issues
    .slice(0, 10)
    .map((i: unknown) => {
      const { path, message } = (typeof i === "object" && i !== null ? i : {}) as { path?: unknown; message?: unknown };
      return typeof message === "string" ? `${typeof path === "string" ? path : ""}: ${message}` : String(i);
    })
    .join("; ");
}

/** The approval an agent's key may read (the approve role), else only its id. */
async function approvalOf(client: WritClient, inv: Invocation, signal: AbortSignal | undefined): Promise<Approval | null> {
  if (inv.status !== "awaiting_approval" || inv.approvalId === undefined) return null;
  try {
    return await client.approvals.get(inv.approvalId, { signal });
  } catch (e) {
    if (isWritApiError(e, "FORBIDDEN", "NOT_FOUND")) return null;
    throw e;
  }
}

/** Words and structure for an invocation, as a tool answers them. */
export async function outcomeOf(client: WritClient, inv: Invocation, o: { replayed?: boolean; signal?: AbortSignal | undefined } = {}): Promise<ToolOutcome> {
  const follow = `To check later, call ${STATUS_TOOL_NAME} with invocationId ${inv.invocationId}.`;
  const approval = await approvalOf(client, inv, o.signal);
  const r = describe(inv, { follow, newKey: "a new tool call", ...(approval ? { approval } : {}), ...(o.replayed ? { replayed: true } : {}) });
  const result = { ...r, ...(inv.approvalId !== undefined ? { approvalId: inv.approvalId } : {}) };
  let text = `${inv.action}: ${inv.status}. ${r.next}`;
  if (inv.status === "succeeded") text += `\nOutputs: ${JSON.stringify(r.outputs)}`;
  if (inv.status === "awaiting_approval") {
    text += ` Tell the user: this needs a person's approval (approval ${inv.approvalId ?? "pending"}); it runs by itself once approved, and nothing happened yet.`;
  }
  if (inv.status === "reconciliation_required") text += " Tell the user a person will check whether it happened.";
  return { text, result };
}

/**
 * The governed tools of the key's principal: one per action it may ask for (from
 * `GET …/actions`), and `writ_invocation_status`.
 * @example
 * const tools = await governedTools(createClient({ baseUrl, apiKey, space: "default" }), { waitMs: 5000 });
 * const out = await tools[0].run({ paymentId: "pay_1", amount: 1200, currency: "EUR" }, { toolCallId: "call_1" });
 */
export async function governedTools(client: WritClient, options: GovernedToolsOptions = {}): Promise<GovernedTool[]> {
  const o = checkOptions(options);
  const listed = await client.actions.list();
  if (o.actions) {
    const missing = o.actions.filter((id) => !listed.some((a) => a.action === id));
    if (missing.length > 0) fail(`governedTools: the key's principal may not ask for ${missing.join(", ")} (no authority covers it, or no such action); it may ask for ${listed.map((a) => a.action).join(", ") || "nothing"}`);
  }
  const chosen = o.actions ? listed.filter((a) => o.actions!.includes(a.action)) : listed;
  const tools: GovernedTool[] = [];
  for (const a of chosen) {
    const name = toolNameOf(a.action);
    if (name === STATUS_TOOL_NAME || tools.some((t) => t.name === name)) fail(`governedTools: two actions map to the tool name ${name}; choose one with the actions option`);
    tools.push(actionTool(client, a, name, o));
  }
  if (o.statusTool) tools.push(statusTool(client));
  return tools;
}

function actionTool(client: WritClient, a: GrantedAction, name: string, o: { waitMs: number; keyPrefix: string }): GovernedTool {
  const tool: GovernedTool & { action: { id: string; version: string; authorityRef: string } } = {
    name,
    title: a.title,
    description: `${a.description ?? `Runs the Writ action ${a.action} (version ${a.version}).`}\n\n${GOVERNANCE}`,
    inputSchema: a.inputSchema,
    annotations: a.annotations,
    action: { id: a.action, version: a.version, authorityRef: a.authorityRef },
    async run(args, call = {}) {
      const idempotencyKey = await toolCallKey(o.keyPrefix, tool, args, call.toolCallId);
      let submitted;
      try {
        submitted = await client.invocations.submit(
          { action: a.action, actionVersion: a.version, authorityRef: a.authorityRef, params: (args ?? {}) as Record<string, unknown>, idempotencyKey },
          { signal: call.signal },
        );
      } catch (e) {
        if (isWritApiError(e, "VALIDATION_FAILED")) return { text: `Invalid arguments for ${name}: ${issuesOf(e)}. Nothing was run; fix the arguments and call again.`, result: null };
        if (isWritApiError(e, "IDEMPOTENCY_CONFLICT")) return { text: `This tool call (key ${idempotencyKey}) was already made with other arguments. Nothing was run; a new request needs a new tool call.`, result: null };
        throw e;
      }
      let inv = submitted.invocation;
      try {
        inv = (await client.invocations.wait(inv.invocationId, { until: "settled", timeoutMs: o.waitMs, signal: call.signal })).invocation;
      } catch (e) {
        // Admitted: the answer says so even when the wait fails; the status tool follows it.
        if (!isWritApiError(e, "NETWORK_ERROR", "ABORTED", "SERVICE_UNAVAILABLE", "RATE_LIMITED")) throw e;
      }
      return outcomeOf(client, inv, { replayed: submitted.replayed, signal: call.signal });
    },
  };
  return tool;
}

function statusTool(client: WritClient): GovernedTool {
  return {
    name: STATUS_TOOL_NAME,
    title: "Writ invocation status",
    description:
      "Where a Writ invocation stands (the invocationId a Writ tool returned): succeeded with outputs, denied, waiting for approval, outcome unknown (do not retry), failed. Waits up to waitMs (default 0, at most 60000) for it to settle.",
    inputSchema: STATUS_INPUT_SCHEMA,
    annotations: { readOnly: true, destructive: false, idempotent: true, openWorld: false },
    async run(args, call = {}) {
      const a = (args ?? {}) as { invocationId?: unknown; waitMs?: unknown };
      if (typeof a.invocationId !== "string" || a.invocationId.length === 0 || a.invocationId.length > 200) return { text: `${STATUS_TOOL_NAME} needs { invocationId: string } (the invocationId a Writ tool returned).`, result: null };
      const waitMs = a.waitMs ?? 0;
      if (typeof waitMs !== "number" || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > 60_000) return { text: `${STATUS_TOOL_NAME}: waitMs must be an integer from 0 to 60000.`, result: null };
      try {
        const { invocation } = await client.invocations.wait(a.invocationId, { until: "settled", timeoutMs: waitMs, signal: call.signal });
        return await outcomeOf(client, invocation, { signal: call.signal });
      } catch (e) {
        if (isWritApiError(e, "NOT_FOUND", "VALIDATION_FAILED")) return { text: `No invocation ${a.invocationId.slice(0, 200)} in this space.`, result: null };
        throw e;
      }
    },
  };
}
