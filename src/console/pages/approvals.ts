/** The approval inbox: each pending approval with its exact request, the policy's reasons, quorum, votes and expiry. */
import { APPROVAL_STATUSES, type Approval, type ApprovalStatus, type Invocation, type Json } from "../../core/types.js";
import type { ConsoleData } from "../data.js";
import { actorText, badge, enc, form, h, idText, json, nothing, relative, time, type H } from "../html.js";
import type { Viewer } from "../viewer.js";

interface Asked {
  reasons: string[];
  policyRef?: string;
  /** How it ended, from its last `approval.<status>` entry (revoked: who and why). */
  ended?: { by?: string; note?: string; at: number };
}

/**
 * From the journal: the policy's reasons for asking (each approval's `approval.opened` entry) and,
 * for an approval no longer pending, the entry that ended it (newer, so met first going back).
 */
async function askedFor(data: ConsoleData, v: Viewer, space: string, approvals: Approval[]): Promise<Map<string, Asked>> {
  const want = new Set(approvals.map((a) => a.approvalId));
  const ended = new Map(approvals.filter((a) => a.status !== "pending").map((a) => [a.approvalId, `approval.${a.status}`]));
  const out = new Map<string, Asked>();
  const endOf = new Map<string, Asked["ended"]>();
  if (want.size === 0) return out;
  await data.journalBackwards(
    v.scope(space),
    (e) => {
      const id = e.refs.approvalId ?? "";
      if (!want.has(id)) return "skip";
      const d = (e.data ?? {}) as { reasons?: Json; policyRef?: Json; by?: Json; note?: Json };
      if (e.type === ended.get(id) && !endOf.has(id)) {
        const by = d.by as { type?: unknown; id?: unknown } | undefined;
        endOf.set(id, { at: e.at, ...(typeof by?.type === "string" && typeof by.id === "string" ? { by: `${by.type}:${by.id}` } : {}), ...(typeof d.note === "string" ? { note: d.note } : {}) });
      }
      if (e.type !== "approval.opened") return "skip";
      const end = endOf.get(id);
      out.set(id, { reasons: Array.isArray(d.reasons) ? d.reasons.map(String) : [], ...(typeof d.policyRef === "string" ? { policyRef: d.policyRef } : {}), ...(end ? { ended: end } : {}) });
      want.delete(id);
      return want.size === 0 ? "stop" : "skip";
    },
    20_000,
  );
  return out;
}

/** Badge colours of approval statuses; any other (a status added later) shows in neutral grey. */
const APPROVAL_KIND: Record<string, string> = { pending: "wait", approved: "ok", denied: "bad" };

/**
 * When and how a decided approval was decided (never its expiry, which no longer matters). Any
 * status other than pending ends the approval, a status this console does not know included: it
 * shows in words with the time and, when the journal says, who ended it.
 */
function decided(a: Approval, ended: Asked["ended"]): H {
  const by = (who: string[]): H => (who.length > 0 ? h` by <strong>${who.join(", ")}</strong>` : nothing);
  const voters = (verdict: "approve" | "deny"): string[] => a.votes.filter((x) => x.verdict === verdict).map((x) => actorText(x.approver));
  switch (a.status) {
    case "approved":
      return h`Approved${by(voters("approve"))} ${time(a.updatedAt)}`;
    case "denied":
      return h`Denied${by(voters("deny"))} ${time(a.updatedAt)}`;
    case "expired":
      return h`Expired ${time(a.expiresAt)} <span class="muted">(nobody decided in time)</span>`;
    case "closed":
      // Closed without a verdict: its invocation ended otherwise (docs/approvals.md, Closed approvals).
      return a.closed
        ? h`Closed: the invocation was ${a.closed.invocationStatus}${by(a.closed.by ? [actorText(a.closed.by)] : [])} ${time(a.closed.at)} <span class="muted">(no vote is taken on it)</span>`
        : h`Closed ${time(a.updatedAt)}`;
    default: {
      const word = String(a.status).replace(/_/g, " ");
      return h`${word.charAt(0).toUpperCase()}${word.slice(1)}${by(ended?.by ? [ended.by] : [])} ${time(ended?.at ?? a.updatedAt)}${ended?.note ? h` — “${ended.note}”` : nothing}`;
    }
  }
}

/** Why the signed-in key may not vote on this approval, or null when it may. */
export function voteBlocked(v: Viewer, space: string, a: Approval): string | null {
  const me = v.who.actor;
  if (a.requestedBy.type === me.type && a.requestedBy.id === me.id) return `You (${actorText(me)}) asked for this: another person must approve or deny it (four-eyes rule).`;
  // Where approvals record who submitted (principals bound to keys), the submitter is a requester too.
  const submitted = (a as { submittedBy?: { principal?: { type: string; id: string }; keyId?: string } }).submittedBy;
  if (submitted?.keyId === v.key.keyId || (submitted?.principal && submitted.principal.type === me.type && submitted.principal.id === me.id)) {
    return `You (${actorText(me)}) submitted this request: another person must approve or deny it (four-eyes rule).`;
  }
  if (!v.allows(space, "approve")) return "Your API key lacks the approve role in this space.";
  const mine = a.votes.find((x) => x.approver.type === me.type && x.approver.id === me.id);
  if (mine) return `You already voted (${mine.verdict}).`;
  const roles = [...v.key.roles, ...(v.key.roles.includes("admin") ? ["approve", "operate", "submit"] : []), ...(v.key.approverRoles ?? [])];
  if (!roles.some((r) => a.approverRoles.includes(r))) return `Only holders of ${a.approverRoles.join(" or ")} may vote on this.`;
  if (a.status !== "pending") return `This approval is ${a.status}.`;
  return null;
}

function card(v: Viewer, space: string, a: Approval, inv: Invocation | null, asked: Asked | undefined, now: number): H {
  const id = `apr-${a.approvalId}`;
  const approvals = a.votes.filter((x) => x.verdict === "approve").length;
  const blocked = a.status === "pending" ? voteBlocked(v, space, a) : null;
  const req = inv?.request;
  const back = "/console/approvals";
  const actions =
    a.status !== "pending"
      ? nothing
      : form(
          `/console/spaces/${enc(space)}/approvals/${enc(a.approvalId)}/vote`,
          v.session.csrf,
          h`<input type="hidden" name="back" value="${back}">
          <label for="${id}-note">Note (optional, journaled with your vote)</label>
          <textarea id="${id}-note" name="note" rows="2" maxlength="2000"${blocked ? h` disabled` : nothing}></textarea>
          ${blocked ? h`<p class="why" id="${id}-why">${blocked}</p>` : nothing}
          <div class="buttons">
            <button type="submit" name="verdict" value="approve" class="primary"${blocked ? h` disabled aria-describedby="${id}-why"` : nothing}>Approve</button>
            <button type="submit" name="verdict" value="deny" class="danger"${blocked ? h` disabled aria-describedby="${id}-why"` : nothing}>Deny</button>
          </div>`,
          // No accessible name: a named form is a landmark, and thirty "Vote on payments.refund"
          // landmarks would be indistinguishable (axe landmark-unique). The card's heading leads here.
          h` class="vote"`,
        );
  return h`<article class="card approval" id="${id}" data-approval="${a.approvalId}" data-status="${a.status}" aria-labelledby="${id}-title">
  <h2 id="${id}-title">${req?.action ?? "request"} <span class="muted">v${req?.actionVersion ?? "?"}</span> ${badge(a.status, APPROVAL_KIND[a.status] ?? "neutral")}</h2>
  <dl class="facts">
    <div><dt>Requested by</dt><dd data-testid="requester">${actorText(a.requestedBy)}</dd></div>
    <div><dt>Authority</dt><dd>${req?.authorityRef ?? "—"}</dd></div>
    <div><dt>Space</dt><dd>${space}</dd></div>
    <div><dt>Invocation</dt><dd>${a.invocationId ? h`<a href="/console/spaces/${enc(space)}/invocations/${enc(a.invocationId)}">${idText(a.invocationId)}</a>` : "—"}</dd></div>
    <div><dt>Policy</dt><dd>${asked ? h`${asked.reasons.length > 0 ? asked.reasons.join(", ") : "(no reasons given)"}${asked.policyRef ? h` <span class="muted mono">${asked.policyRef}</span>` : nothing}` : "not recorded"}</dd></div>
    <div><dt>Approvers</dt><dd>${a.approverRoles.join(", ")}</dd></div>
    <div><dt>Quorum</dt><dd><span data-testid="quorum">${approvals} of ${a.quorum}</span> approval${a.quorum === 1 ? "" : "s"}</dd></div>
    ${a.status === "pending" ? h`<div><dt>Expires</dt><dd>${time(a.expiresAt)} <span class="muted">(${relative(a.expiresAt, now)})</span></dd></div>` : h`<div><dt>Decided</dt><dd data-testid="decided">${decided(a, asked?.ended)}</dd></div>`}
    <div><dt>Request digest</dt><dd>${idText(a.requestDigest)}</dd></div>
  </dl>
  <h3>Parameters <span class="muted">(sensitive fields masked)</span></h3>
  ${req ? json(req.params, `Parameters of ${req.action} (${a.approvalId})`) : h`<p>The invocation is not available.</p>`}
  ${
    a.votes.length > 0
      ? h`<h3>Votes</h3><ul class="votes">${a.votes.map((x) => h`<li>${badge(x.verdict === "approve" ? "approved" : "denied")} <strong>${actorText(x.approver)}</strong> ${time(x.at)}${x.note ? h` — “${x.note}”` : nothing}</li>`)}</ul>`
      : nothing
  }
  ${actions}
</article>`;
}

export async function approvalsBody(data: ConsoleData, v: Viewer, query: { status?: string }, now: number): Promise<{ body: H; count: number }> {
  const status: ApprovalStatus | "all" = query.status === "all" || (APPROVAL_STATUSES as readonly string[]).includes(query.status ?? "") ? (query.status as ApprovalStatus | "all") : "pending";
  const cards: H[] = [];
  let count = 0;
  for (const space of v.spacesWith("approve")) {
    const scope = v.scope(space);
    const list = await data.approvals(scope, status === "all" ? undefined : status, 200);
    const asked = await askedFor(data, v, space, list);
    for (const a of list) {
      const inv = a.invocationId ? await data.invocation(scope, a.invocationId) : null;
      cards.push(card(v, space, a, inv, asked.get(a.approvalId), now));
      count++;
    }
  }
  const tabs = [...APPROVAL_STATUSES, "all" as const].map(
    (s) => h`<li><a href="/console/approvals${s === "pending" ? "" : `?status=${s}`}"${s === status ? h` aria-current="page"` : nothing}>${s}</a></li>`,
  );
  const body = h`<h1>Approvals</h1>
<p class="lead">A policy asked a person to agree before these run. Approving lets the worker evaluate the request again with your approval; denying ends it.</p>
<nav aria-label="Approval status"><ul class="tabs">${tabs}</ul></nav>
<section aria-label="Approvals (${status})" data-testid="approvals">
${cards.length > 0 ? cards : h`<p class="empty">No ${status === "all" ? "" : status + " "}approvals.</p>`}
</section>`;
  return { body, count };
}
