/**
 * What the agent sees: an invocation turned into a tool result (structured content plus a line of
 * text an agent can act on) and into an MCP task status (docs/mcp.md, "What the agent sees").
 */
import type { Approval, Invocation, Json } from "../core/types.js";

/** The structured content of a Writ tool result (its schema is RESULT_SCHEMA). */
export interface WritToolResult {
  [k: string]: unknown;
  invocationId: string;
  action: string;
  status: Invocation["status"];
  replayed?: boolean;
  outputs?: Json;
  reasons?: string[];
  error?: string;
  approval?: { approvalId: string; approverRoles: string[]; quorum: number; votes: number; expiresAt: string };
  reconciliationId?: string;
  retry: "not_needed" | "wait" | "do_not_retry" | "new_key_may_help" | "fix_and_retry";
  next: string;
}

export interface CallToolAnswer {
  [k: string]: unknown;
  content: { type: "text"; text: string }[];
  structuredContent?: WritToolResult;
  isError?: boolean;
}

/** The fields of an invocation a result is made of (the core record or the HTTP API's view of it). */
export type DescribedInvocation = Pick<Invocation, "invocationId" | "action" | "status" | "reasons" | "lastError"> & { result?: unknown };

/** The fields of an approval a waiting result names. */
export type DescribedApproval = Pick<Approval, "approvalId" | "approverRoles" | "quorum" | "expiresAt"> & { votes: ReadonlyArray<{ verdict: "approve" | "deny" }> };

/** What else is known about a waiting invocation: its approval, its open reconciliation. */
export interface Extras {
  approval?: DescribedApproval | null;
  reconciliationId?: string;
  replayed?: boolean;
  /** How the agent follows the invocation, in words. @defaultValue "Call writ_invocation_status with invocationId <id> to follow it." */
  follow?: string;
  /** How a later call gets a new idempotency key, in words. @defaultValue "a new _meta idempotency key" */
  newKey?: string;
}

/** True when the invocation will not change without a person, a completion or a worker. */
export function isSettled(inv: Pick<Invocation, "status">): boolean {
  return inv.status === "succeeded" || inv.status === "failed" || inv.status === "denied" || inv.status === "cancelled";
}

/**
 * True when waiting longer inside one tool call cannot help: the state is final, or it waits for a
 * person (an approval, an operator's reconciliation) or for an outside operation's callback.
 */
export function stopsWaiting(inv: Pick<Invocation, "status">): boolean {
  return isSettled(inv) || inv.status === "reconciliation_required" || inv.status === "awaiting_approval" || inv.status === "parked";
}

function transient(inv: DescribedInvocation): boolean {
  return (inv.lastError ?? "").startsWith("CONNECTOR_TRANSIENT_FAILURE") || (inv.lastError ?? "").startsWith("circuit open");
}

/** The structured result for an invocation. */
export function describe(inv: DescribedInvocation, x: Extras = {}): WritToolResult {
  const base = { invocationId: inv.invocationId, action: inv.action, status: inv.status, ...(x.replayed ? { replayed: true } : {}) };
  const poll = x.follow ?? `Call writ_invocation_status with invocationId ${inv.invocationId} to follow it.`;
  switch (inv.status) {
    case "succeeded":
      return { ...base, outputs: (inv.result ?? null) as Json, retry: "not_needed", next: x.replayed ? "Done earlier: this call matched an earlier one with the same idempotency key; nothing was done again." : "Done. The outputs are the action's results." };
    case "denied":
      return { ...base, reasons: inv.reasons ?? [], retry: "do_not_retry", next: `Denied by policy: ${(inv.reasons ?? []).join("; ") || "no reason given"}. Do not retry the same request; ask a person if it must happen.` };
    case "cancelled":
      return { ...base, reasons: inv.reasons ?? [], retry: "do_not_retry", next: "Cancelled before any step ran: nothing happened." };
    case "failed":
      return transient(inv)
        ? { ...base, error: inv.lastError ?? "failed", retry: "new_key_may_help", next: `Failed after retries (${inv.lastError ?? "transient failure"}). Nothing is pending. A later call with ${x.newKey ?? "a new _meta idempotency key"} may succeed; the same key returns this failure.` }
        : { ...base, error: inv.lastError ?? "failed", retry: "do_not_retry", next: `Failed definitely (${inv.lastError ?? "failed"}). Retrying the same request will not help; change it or ask a person.` };
    case "reconciliation_required":
      return {
        ...base,
        error: inv.lastError ?? "outcome unknown",
        ...(x.reconciliationId ? { reconciliationId: x.reconciliationId } : {}),
        retry: "do_not_retry",
        next: `Outcome unknown (${inv.lastError ?? "ambiguous"}): the effect may or may not have happened. DO NOT retry: an operator reconciles it${x.reconciliationId ? ` (reconciliation ${x.reconciliationId})` : ""}. ${poll}`,
      };
    case "awaiting_approval": {
      const ap = x.approval;
      const approval = ap ? { approvalId: ap.approvalId, approverRoles: [...ap.approverRoles], quorum: ap.quorum, votes: ap.votes.filter((v) => v.verdict === "approve").length, expiresAt: new Date(ap.expiresAt).toISOString() } : undefined;
      const who = approval ? `${approval.quorum} approval(s) from ${approval.approverRoles.join(" or ")} (${approval.votes} so far), before ${approval.expiresAt}` : "a person's approval";
      return { ...base, ...(approval ? { approval } : {}), retry: "wait", next: `Waiting for ${who}; if nobody approves by then it is denied. Do not call again: ${poll}` };
    }
    case "parked":
      return { ...base, retry: "wait", next: `Handed off to a long-running outside operation; it completes by callback. ${poll}` };
    case "queued":
    case "running":
      return { ...base, retry: "wait", next: `In progress (${inv.status}). ${poll}` };
  }
}

/** The tool result for an invocation: structured content, one line of text, isError when it did not succeed and will not. */
export function toolResult(inv: Invocation, x: Extras = {}): CallToolAnswer {
  const r = describe(inv, x);
  const failed = inv.status === "failed" || inv.status === "denied" || inv.status === "cancelled" || inv.status === "reconciliation_required";
  const text = `${inv.action}: ${inv.status}. ${r.next}${inv.status === "succeeded" ? `\n${JSON.stringify(r.outputs)}` : ""}`;
  return { content: [{ type: "text", text }], structuredContent: r, ...(failed ? { isError: true } : {}) };
}

/** A tool error before any invocation exists (bad arguments): text the agent can fix its call with. */
export function errorResult(text: string): CallToolAnswer {
  return { content: [{ type: "text", text }], isError: true };
}

export type TaskStatus = "working" | "input_required" | "completed" | "failed" | "cancelled";

/**
 * The MCP task status of an invocation. Waiting for an approval or an operator's reconciliation
 * is `working` (not final: a person acts, then it moves on), with a status message that says so.
 */
export function taskStatusOf(inv: Invocation, x: Extras = {}): { status: TaskStatus; statusMessage: string } {
  const r = describe(inv, x);
  switch (inv.status) {
    case "succeeded":
      return { status: "completed", statusMessage: r.next };
    case "cancelled":
      return { status: "cancelled", statusMessage: r.next };
    case "failed":
    case "denied":
      return { status: "failed", statusMessage: r.next };
    default:
      return { status: "working", statusMessage: `${inv.status}: ${r.next}` };
  }
}
