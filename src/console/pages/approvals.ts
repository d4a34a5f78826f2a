/** The approval inbox: each pending approval with its exact request, the policy's reasons, quorum, votes and expiry. */
import { APPROVAL_STATUSES, type Approval, type ApprovalStatus, type Invocation, type Json } from "../../core/types.js";
import type { ConsoleData } from "../data.js";
import { actorText, badge, enc, form, h, json, nothing, relative, time, type H } from "../html.js";
import type { Viewer } from "../viewer.js";

interface Asked {
  reasons: string[];
  policyRef?: string;
}

/** The policy's reasons for asking, from each approval's `approval.opened` journal entry. */
async function askedFor(data: ConsoleData, v: Viewer, space: string, approvals: Approval[]): Promise<Map<string, Asked>> {
  const want = new Set(approvals.map((a) => a.approvalId));
  const out = new Map<string, Asked>();
  if (want.size === 0) return out;
  await data.journalBackwards(
    v.scope(space),
    (e) => {
      if (e.type !== "approval.opened" || !want.has(e.refs.approvalId ?? "")) return "skip";
      const d = (e.data ?? {}) as { reasons?: Json; policyRef?: Json };
      out.set(e.refs.approvalId!, { reasons: Array.isArray(d.reasons) ? d.reasons.map(String) : [], ...(typeof d.policyRef === "string" ? { policyRef: d.policyRef } : {}) });
      want.delete(e.refs.approvalId!);
      return want.size === 0 ? "stop" : "skip";
    },
    20_000,
  );
  return out;
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
          h` class="vote" aria-label="Vote on ${req?.action ?? "this request"}"`,
        );
  return h`<article class="card approval" id="${id}" data-approval="${a.approvalId}" aria-labelledby="${id}-title">
  <h2 id="${id}-title">${req?.action ?? "request"} <span class="muted">v${req?.actionVersion ?? "?"}</span> ${badge(a.status)}</h2>
  <dl class="facts">
    <div><dt>Requested by</dt><dd data-testid="requester">${actorText(a.requestedBy)}</dd></div>
    <div><dt>Authority</dt><dd>${req?.authorityRef ?? "—"}</dd></div>
    <div><dt>Space</dt><dd>${space}</dd></div>
    <div><dt>Invocation</dt><dd>${a.invocationId ? h`<a href="/console/spaces/${enc(space)}/invocations/${enc(a.invocationId)}">${a.invocationId}</a>` : "—"}</dd></div>
    <div><dt>Policy</dt><dd>${asked ? h`${asked.reasons.length > 0 ? asked.reasons.join(", ") : "(no reasons given)"}${asked.policyRef ? h` <span class="muted mono">${asked.policyRef}</span>` : nothing}` : "not recorded"}</dd></div>
    <div><dt>Approvers</dt><dd>${a.approverRoles.join(", ")}</dd></div>
    <div><dt>Quorum</dt><dd><span data-testid="quorum">${approvals} of ${a.quorum}</span> approval${a.quorum === 1 ? "" : "s"}</dd></div>
    <div><dt>Expires</dt><dd>${time(a.expiresAt)} <span class="muted">(${relative(a.expiresAt, now)})</span></dd></div>
    <div><dt>Request digest</dt><dd class="mono">${a.requestDigest}</dd></div>
  </dl>
  <h3>Parameters <span class="muted">(sensitive fields masked)</span></h3>
  ${req ? json(req.params) : h`<p>The invocation is not available.</p>`}
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
  const tabs = (["pending", "approved", "denied", "expired", "revoked", "all"] as const).map(
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
