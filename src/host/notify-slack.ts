/**
 * The Slack format of a notification (docs/notifications.md, "Slack"): an incoming-webhook message
 * in Block Kit, with a button to the console page that acts on it. Texts are cut to Block Kit's
 * documented limits (section text 3000, header 150, field 2000 and at most 10 fields, button text
 * 75, button URL 3000, 50 blocks) so Slack never refuses a message for its size.
 */
import type { Json } from "../core/types.js";
import type { NotificationEvent } from "./notify-events.js";

/** Block Kit's limits this builder keeps (Slack's Block Kit reference). */
export const BLOCK_KIT_LIMITS = {
  blocks: 50,
  headerText: 150,
  sectionText: 3000,
  fields: 10,
  fieldText: 2000,
  buttonText: 75,
  buttonUrl: 3000,
  contextElements: 10,
  /** The message's fallback `text` (shown in notifications); Slack truncates past 40000. */
  fallbackText: 3000,
} as const;

function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  // Never split a surrogate pair: a lone half is not valid text.
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

/** Slack mrkdwn treats &, < and > as control characters. */
function esc(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

const TITLES: Record<NotificationEvent["type"], string> = {
  "approval.requested": "Approval needed",
  "approval.decided": "Approval decided",
  "approval.expiring": "Approval expiring soon",
  "reconciliation.opened": "Outcome unknown: reconciliation needed",
  "reconciliation.resolved": "Reconciliation resolved",
  "invocation.ended": "Invocation ended",
  "handoff.overdue": "Handoff overdue",
  "journal.verify_failed": "Journal verification failed",
  "breaker.opened": "Circuit breaker opened",
};

function str(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : undefined;
}

function actorText(v: Json | undefined): string | undefined {
  if (v && typeof v === "object" && !Array.isArray(v) && typeof v.type === "string" && typeof v.id === "string") return `${v.type}:${v.id}`;
  return undefined;
}

/** The console page that acts on the event, when a console URL is configured. */
export function consoleLink(base: string | undefined, e: NotificationEvent): { url: string; label: string } | undefined {
  if (base === undefined) return undefined;
  const d = e.data;
  const root = base.replace(/\/+$/, "");
  const space = encodeURIComponent(e.spaceId ?? "");
  if (e.type.startsWith("approval.") && typeof d.approvalId === "string") return { url: `${root}/console/approvals#apr-${encodeURIComponent(d.approvalId)}`, label: "Open the approval inbox" };
  if ((e.type.startsWith("reconciliation.") || e.type === "handoff.overdue") && typeof d.reconciliationId === "string") {
    return { url: `${root}/console/reconciliations#rec-${encodeURIComponent(d.reconciliationId)}`, label: "Open the reconciliation queue" };
  }
  if (typeof d.invocationId === "string" && e.spaceId !== undefined) return { url: `${root}/console/spaces/${space}/invocations/${encodeURIComponent(d.invocationId)}`, label: "Open the invocation" };
  if (e.type === "journal.verify_failed" || e.type === "breaker.opened") return { url: `${root}/console/health`, label: "Open the health page" };
  return undefined;
}

/** The event's facts as short label/value pairs (the message's fields). */
function facts(e: NotificationEvent): Array<[string, string]> {
  const d = e.data;
  const out: Array<[string, string]> = [];
  const add = (label: string, v: string | undefined): void => {
    if (v !== undefined && v.length > 0) out.push([label, v]);
  };
  add("Action", str(d.action));
  add("Space", e.spaceId);
  add("Requested by", actorText(d.actor));
  add("Decision", str(d.decision));
  add("Status", str(d.status));
  add("Outcome", str(d.outcome));
  add("Reason code", str(d.reasonCode));
  add("Quorum", d.quorum !== undefined ? `${str(d.votes) ?? "0"} of ${str(d.quorum)}` : undefined);
  add("Policy", str(d.policyRef));
  add("Expires", typeof d.expiresAt === "number" ? new Date(d.expiresAt).toISOString() : undefined);
  add("Connector", d.connector !== undefined ? `${str(d.connector)} ${str(d.operation) ?? ""}`.trim() : undefined);
  add("Invocation", str(d.invocationId));
  add("By", actorText(d.by));
  return out.slice(0, BLOCK_KIT_LIMITS.fields);
}

function summary(e: NotificationEvent): string {
  const d = e.data;
  const parts: string[] = [];
  const reasons = Array.isArray(d.reasons) ? d.reasons.filter((r): r is string => typeof r === "string") : [];
  if (reasons.length > 0) parts.push(`*Why:* ${esc(reasons.join("; "))}`);
  if (typeof d.reason === "string") parts.push(`*Why:* ${esc(d.reason)}`);
  if (typeof d.note === "string") parts.push(`*Note:* ${esc(d.note)}`);
  if (typeof d.error === "string") parts.push(`*Error:* ${esc(d.error)}`);
  if (Array.isArray(d.problems)) parts.push(`*Problems:* ${esc(d.problems.map((p) => (p && typeof p === "object" && !Array.isArray(p) ? `${str(p.kind) ?? "?"}${p.seq !== undefined ? ` at seq ${str(p.seq)}` : ""}` : "?")).join(", "))}`);
  return parts.join("\n");
}

/** The Block Kit message for an event (params shown as masked JSON, cut to fit). */
export function slackMessage(e: NotificationEvent, consoleUrl: string | undefined): { text: string; blocks: Json[] } {
  const d = e.data;
  const action = str(d.action);
  const title = `${TITLES[e.type]}${action ? `: ${action}` : ""}`;
  const blocks: Json[] = [{ type: "header", text: { type: "plain_text", text: cut(title, BLOCK_KIT_LIMITS.headerText), emoji: false } }];
  const fields = facts(e).map(([label, v]): Json => ({ type: "mrkdwn", text: cut(`*${label}*\n${esc(v)}`, BLOCK_KIT_LIMITS.fieldText) }));
  const said = summary(e);
  if (said.length > 0) blocks.push({ type: "section", text: { type: "mrkdwn", text: cut(said, BLOCK_KIT_LIMITS.sectionText) } });
  if (fields.length > 0) blocks.push({ type: "section", fields });
  if (d.params !== undefined) {
    const json = JSON.stringify(d.params, null, 1);
    // The fence takes 8 characters; the JSON is cut to what remains.
    blocks.push({ type: "section", text: { type: "mrkdwn", text: "```" + cut(esc(json), BLOCK_KIT_LIMITS.sectionText - 8) + "```" } });
  }
  const link = consoleLink(consoleUrl, e);
  if (link && link.url.length <= BLOCK_KIT_LIMITS.buttonUrl) {
    blocks.push({ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: cut(link.label, BLOCK_KIT_LIMITS.buttonText) }, url: link.url, style: "primary", action_id: "open-console" }] });
  }
  blocks.push({ type: "context", elements: [{ type: "mrkdwn", text: cut(`Writ · ${esc(e.tenantId)}${e.spaceId ? `/${esc(e.spaceId)}` : ""} · ${new Date(e.at).toISOString()} · event ${e.eventId}`, BLOCK_KIT_LIMITS.sectionText) }] });
  return { text: cut(title, BLOCK_KIT_LIMITS.fallbackText), blocks: blocks.slice(0, BLOCK_KIT_LIMITS.blocks) };
}
