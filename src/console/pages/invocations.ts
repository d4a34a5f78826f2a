/** Invocations: a filtered, searchable, cursor-paged list, and one invocation's detail with its journal timeline. */
import { INVOCATION_STATUSES, type Invocation, type InvocationStatus, type Json } from "../../core/types.js";
import type { ConsoleData, ShownEntry } from "../data.js";
import { actorText, badge, enc, h, json, nothing, q, time, type H } from "../html.js";
import { isSpaceId } from "../options.js";
import type { Viewer } from "../viewer.js";
import { REASON_TEXT } from "./reconciliations.js";

const PAGE = 25;
const SCAN_CAP = 2000;

export interface ListQuery {
  space?: string;
  status?: string;
  action?: string;
  actor?: string;
  from?: string;
  to?: string;
  q?: string;
  cursor?: string;
}

/** `2026-12-01T10:00` (a datetime-local value, read as UTC) -> epoch ms, or undefined. */
function parseTime(s: string | undefined): number | undefined {
  if (!s) return undefined;
  const t = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(s) ? s : `${s}Z`);
  return Number.isFinite(t) ? t : undefined;
}

export function readableSpaces(v: Viewer): string[] {
  return v.spaces.filter((s) => v.allows(s, "submit") || v.allows(s, "approve") || v.allows(s, "operate"));
}

/** The space a list or detail shows: one the key may read, else null. */
export function pickSpace(v: Viewer, asked: string | undefined): string | null {
  const readable = readableSpaces(v);
  if (asked === undefined || asked === "") return readable[0] ?? null;
  if (!isSpaceId(asked)) return null;
  return v.allows(asked, "submit") || v.allows(asked, "approve") || v.allows(asked, "operate") ? asked : null;
}

function row(space: string, inv: Invocation): H {
  return h`<tr>
  <td><a href="/console/spaces/${enc(space)}/invocations/${enc(inv.invocationId)}" class="mono">${inv.invocationId}</a></td>
  <td>${inv.action}</td>
  <td>${badge(inv.status)}</td>
  <td>${actorText(inv.request.actor)}</td>
  <td class="mono">${inv.idempotencyKey}</td>
  <td>${time(inv.createdAt)}</td>
</tr>`;
}

export async function invocationsBody(data: ConsoleData, v: Viewer, query: ListQuery, actions: string[]): Promise<H> {
  const space = pickSpace(v, query.space);
  if (!space) return h`<h1>Invocations</h1><p class="flash error" role="alert">Your API key may not read that space.</p>`;
  const scope = v.scope(space);
  const status = (INVOCATION_STATUSES as readonly string[]).includes(query.status ?? "") ? (query.status as InvocationStatus) : undefined;
  const action = actions.includes(query.action ?? "") ? query.action : undefined;
  const actor = (query.actor ?? "").trim().slice(0, 300);
  const from = parseTime(query.from);
  const to = parseTime(query.to);
  const search = (query.q ?? "").trim().slice(0, 300);
  const matches = (inv: Invocation): boolean =>
    (!action || inv.action === action) && (!actor || actorText(inv.request.actor) === actor || inv.request.actor.id === actor) && (from === undefined || inv.createdAt >= from) && (to === undefined || inv.createdAt <= to);

  let items: Invocation[] = [];
  let next: string | null = null;
  let scanned = 0;
  if (search) {
    const byId = await data.invocation(scope, search);
    items = byId ? [byId] : await data.byIdempotencyKey(scope, search);
  } else {
    let after = query.cursor && query.cursor.length <= 200 ? query.cursor : undefined;
    outer: for (;;) {
      const page = await data.invocations(scope, { limit: 100, ...(status ? { status } : {}), ...(after ? { after } : {}) });
      for (const inv of page) {
        scanned++;
        after = inv.invocationId;
        if (from !== undefined && inv.createdAt < from) break outer; // newest first: nothing older can match
        if (matches(inv)) items.push(inv);
        if (items.length === PAGE || scanned >= SCAN_CAP) {
          next = inv.invocationId;
          break outer;
        }
      }
      if (page.length < 100) break;
    }
  }
  const keep = { space, status: status ?? "", action: action ?? "", actor, from: query.from ?? "", to: query.to ?? "" };
  const spaces = readableSpaces(v);
  const spaceField = v.key.spaces.includes("*")
    ? h`<input id="f-space" name="space" value="${space}" list="known-spaces" maxlength="200"><datalist id="known-spaces">${spaces.map((s) => h`<option value="${s}">`)}</datalist>`
    : h`<select id="f-space" name="space">${spaces.map((s) => h`<option${s === space ? h` selected` : nothing}>${s}</option>`)}</select>`;
  return h`<h1>Invocations</h1>
<form method="get" action="/console/invocations" class="filters" role="search" aria-label="Filter invocations">
  <div><label for="f-q">Search by invocation id or idempotency key</label><input id="f-q" name="q" type="search" value="${search}" maxlength="300"></div>
  <div><label for="f-space">Space</label>${spaceField}</div>
  <div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">any</option>${INVOCATION_STATUSES.map((s) => h`<option value="${s}"${s === status ? h` selected` : nothing}>${s.replace(/_/g, " ")}</option>`)}</select></div>
  <div><label for="f-action">Action</label><select id="f-action" name="action"><option value="">any</option>${actions.map((a) => h`<option${a === action ? h` selected` : nothing}>${a}</option>`)}</select></div>
  <div><label for="f-actor">Actor (type:id or id)</label><input id="f-actor" name="actor" value="${actor}" maxlength="300"></div>
  <div><label for="f-from">Created from (UTC)</label><input id="f-from" name="from" type="datetime-local" value="${query.from ?? ""}"></div>
  <div><label for="f-to">Created until (UTC)</label><input id="f-to" name="to" type="datetime-local" value="${query.to ?? ""}"></div>
  <div class="buttons"><button type="submit" class="primary">Apply</button> <a href="/console/invocations">Clear</a></div>
</form>
${
  items.length > 0
    ? h`<div class="table-wrap" role="region" aria-label="Invocations in ${space}" tabindex="0"><table>
  <caption class="visually-hidden">Invocations in space ${space}, newest first</caption>
  <thead><tr><th scope="col">Invocation</th><th scope="col">Action</th><th scope="col">Status</th><th scope="col">Actor</th><th scope="col">Idempotency key</th><th scope="col">Created</th></tr></thead>
  <tbody data-testid="invocation-rows">${items.map((i) => row(space, i))}</tbody>
</table></div>`
    : h`<p class="empty">${search ? `No invocation with the id or idempotency key “${search}” in ${space}.` : "No invocations match."}</p>`
}
${next ? h`<p class="pager"><a href="/console/invocations${q({ ...keep, cursor: next })}" rel="next">Older invocations →</a>${items.length < PAGE ? h` <span class="muted">(scanned ${scanned}; more may match further back)</span>` : nothing}</p>` : nothing}`;
}

// detail ---------------------------------------------------------------------------------------

function str(v: Json | undefined): string {
  return typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v);
}

function actorOf(v: Json | undefined): string {
  const a = v as { type?: unknown; id?: unknown } | null | undefined;
  return a && typeof a === "object" && typeof a.type === "string" && typeof a.id === "string" ? `${a.type}:${a.id}` : "";
}

/** One line saying what a journal entry means. */
export function describe(e: ShownEntry): { title: string; detail: string; kind: string } {
  const d = (e.data ?? {}) as { [k: string]: Json };
  const reasons = Array.isArray(d.reasons) ? d.reasons.map(String).join("; ") : "";
  switch (e.type) {
    case "invocation.submitted":
      return { kind: "info", title: "Submitted", detail: `by ${actorOf(d.actor)} under authority ${str(d.authorityRef)}, idempotency key ${str(d.idempotencyKey)}` };
    case "invocation.claimed":
      return { kind: "info", title: "Claimed by a worker", detail: `${str(d.owner)} (claim ${str(d.attemptCount)})` };
    case "approval.opened":
      return { kind: "wait", title: "Evaluated: approval required", detail: `${reasons ? `policy ${reasons}; ` : ""}quorum ${str(d.quorum)} of ${Array.isArray(d.approverRoles) ? d.approverRoles.map((r) => str(r)).join(", ") : ""}` };
    case "approval.vote":
    case "approval.granted":
    case "approval.denied":
    case "approval.revoked":
    case "approval.expired":
      return { kind: e.type === "approval.granted" ? "ok" : e.type === "approval.vote" ? "info" : "bad", title: `Approval ${e.type.slice(9)}`, detail: `${actorOf(d.by) ? `by ${actorOf(d.by)}` : ""}${d.note ? ` — “${str(d.note)}”` : ""} (${str(d.votes)} of ${str(d.quorum)} votes)` };
    case "approval.closed":
      return { kind: "info", title: "Approval closed", detail: `the invocation was ${str(d.invocationStatus)}${actorOf(d.by) ? ` by ${actorOf(d.by)}` : ""}; no vote is taken on it` };
    case "decision.consumed":
      return { kind: "ok", title: "Evaluated: ALLOW, decision consumed", detail: `policy ${str(d.policyRef)}, from step ${str(d.startStep)}` };
    case "step.succeeded":
      return { kind: "ok", title: `Step ${str(d.stepIndex)} (${str(d.stepName)}) succeeded`, detail: d.externalRef ? `reference ${str(d.externalRef)}` : "" };
    case "attempt.settled":
    case "attempt.refused":
    case "attempt.duplicate": {
      const state = str(d.state);
      const kind = state === "SUCCEEDED" || state === "DUPLICATE" ? "ok" : state === "HANDED_OFF" ? "wait" : state === "REFUSED" || state === "FAILED" ? "bad" : "warn";
      return { kind, title: `Attempt ${state.toLowerCase().replace(/_/g, " ")}${d.stepName ? ` at step ${str(d.stepIndex)} (${str(d.stepName)})` : ""}`, detail: [str(d.reasonCode), str(d.reason), d.externalRef ? `reference ${str(d.externalRef)}` : ""].filter(Boolean).join(": ") };
    }
    case "reconciliation.opened":
      return { kind: "warn", title: "Sent to reconciliation", detail: `${str(d.reasonCode)}: ${REASON_TEXT[str(d.reasonCode)] ?? ""} ${str(d.reason)}`.trim() };
    case "reconciliation.resolved":
      return { kind: d.outcome === "succeeded" ? "ok" : "bad", title: `Reconciliation resolved as ${str(d.outcome)}`, detail: `by ${actorOf(d.by)}${d.externalRef ? `, reference ${str(d.externalRef)}` : ""} — “${str(d.note)}”` };
    default:
      if (e.type.startsWith("completion.")) return { kind: "info", title: `Completion ${e.type.slice(11)}`, detail: [str(d.outcome), str(d.externalRef)].filter(Boolean).join(", ") };
      if (e.type.startsWith("invocation.")) {
        const to = e.type.slice(11);
        const kind = to === "succeeded" ? "ok" : to === "failed" || to === "denied" ? "bad" : to === "reconciliation_required" ? "warn" : "info";
        return { kind, title: `Status: ${str(d.from).replace(/_/g, " ")} → ${to.replace(/_/g, " ")}`, detail: [reasons, str(d.error)].filter(Boolean).join("; ") };
      }
      return { kind: "info", title: e.type, detail: "" };
  }
}

export async function invocationDetail(data: ConsoleData, v: Viewer, space: string, invocationId: string): Promise<{ body: H; title: string } | null> {
  const scope = v.scope(space);
  const inv = await data.invocation(scope, invocationId);
  if (!inv) return null;
  const [steps, attempts, recs] = [await data.steps(scope, inv.invocationId), await data.attempts(scope, inv.invocationId), await data.reconciliations(scope, { invocationId: inv.invocationId, limit: 50 })];
  const approval = inv.approvalId ? await data.approval(scope, inv.approvalId) : null;
  const submitted = `invocation.submitted:${inv.invocationId}`;
  const { entries, truncated } = await data.journalBackwards(
    scope,
    (e) => {
      if (e.id === submitted) return "last";
      const mine = e.refs.invocationId === inv.invocationId || (approval !== null && e.refs.approvalId === approval.approvalId);
      return mine ? "take" : "skip";
    },
    20_000,
  );
  const timeline = [...entries].reverse();
  const recOpen = recs.find((r) => r.status === "open");
  const body = h`<p class="crumbs"><a href="/console/invocations${q({ space })}">Invocations</a> / <span class="mono">${inv.invocationId}</span></p>
<h1>${inv.action} <span class="muted">v${inv.actionVersion}</span> <span data-testid="status">${badge(inv.status)}</span></h1>
${inv.status === "awaiting_approval" && approval ? h`<p class="flash info">Waiting for approval <a href="/console/approvals#apr-${approval.approvalId}">${approval.approvalId}</a> (${approval.votes.filter((x) => x.verdict === "approve").length} of ${approval.quorum}).</p>` : nothing}
${recOpen ? h`<p class="flash warn">The outcome is unknown: <a href="/console/reconciliations#rec-${recOpen.reconciliationId}">resolve it in the reconciliation queue</a>.</p>` : nothing}
<dl class="facts">
  <div><dt>Invocation</dt><dd class="mono">${inv.invocationId}</dd></div>
  <div><dt>Space</dt><dd>${space}</dd></div>
  <div><dt>Actor</dt><dd>${actorText(inv.request.actor)}</dd></div>
  <div><dt>Authority</dt><dd>${inv.request.authorityRef}</dd></div>
  <div><dt>Idempotency key</dt><dd class="mono">${inv.idempotencyKey}</dd></div>
  <div><dt>Request digest</dt><dd class="mono">${inv.requestDigest}</dd></div>
  <div><dt>Created</dt><dd>${time(inv.createdAt)}</dd></div>
  <div><dt>Updated</dt><dd>${time(inv.updatedAt)}</dd></div>
  <div><dt>Claims</dt><dd>${inv.attemptCount}${inv.retryCount > 0 ? `, ${inv.retryCount} retries` : ""}</dd></div>
  ${inv.reasons && inv.reasons.length > 0 ? h`<div><dt>Reasons</dt><dd>${inv.reasons.join("; ")}</dd></div>` : nothing}
  ${inv.lastError ? h`<div><dt>Last error</dt><dd>${inv.lastError}</dd></div>` : nothing}
  ${inv.leaseOwner ? h`<div><dt>Lease</dt><dd>${inv.leaseOwner} until ${time(inv.leaseExpiresAt)}</dd></div>` : nothing}
</dl>
<h2>Parameters <span class="muted">(sensitive fields masked)</span></h2>
${json(inv.request.params)}
${inv.result !== undefined ? h`<h2>Result</h2>${json(inv.result)}` : nothing}
<h2 id="timeline-h">Timeline</h2>
<ol class="timeline" aria-labelledby="timeline-h" data-testid="timeline">
${timeline.map((e) => {
  const d = describe(e);
  return h`<li class="ev ${d.kind}" data-type="${e.type}"><span class="when">${time(e.at)}</span> <strong>${d.title}</strong>${d.detail ? h` <span class="detail">${d.detail}</span>` : nothing}</li>`;
})}
</ol>
${truncated ? h`<p class="muted">Older journal entries were not scanned (the journal is long); the timeline may miss the earliest events.</p>` : nothing}
<h2>Steps</h2>
${
  steps.length > 0
    ? h`<div class="table-wrap" role="region" aria-label="Steps" tabindex="0"><table><thead><tr><th scope="col">#</th><th scope="col">Step</th><th scope="col">Connector</th><th scope="col">Status</th><th scope="col">Reference</th><th scope="col">Reason</th><th scope="col">Started</th><th scope="col">Ended</th></tr></thead>
<tbody>${steps.map((s) => h`<tr><td>${s.stepIndex}</td><td>${s.stepName}</td><td>${s.connector ?? "—"}</td><td>${badge(s.status)}</td><td class="mono">${s.externalRef ?? ""}</td><td>${s.reasonCode ? h`<span class="mono">${s.reasonCode}</span> ` : nothing}${s.reason ?? ""}</td><td>${time(s.startedAt)}</td><td>${time(s.endedAt)}</td></tr>`)}</tbody></table></div>`
    : h`<p class="empty">No step has started.</p>`
}
<h2>Attempts</h2>
${
  attempts.length > 0
    ? h`<div class="table-wrap" role="region" aria-label="Attempts" tabindex="0"><table><thead><tr><th scope="col">Attempt</th><th scope="col">State</th><th scope="col">Reason code</th><th scope="col">Reason</th><th scope="col">Decision</th><th scope="col">Started</th><th scope="col">Ended</th></tr></thead>
<tbody>${attempts.map((a) => h`<tr><td class="mono">${a.attemptId}</td><td>${badge(a.state)}</td><td class="mono">${a.reasonCode ?? ""}</td><td>${a.reason ?? ""}</td><td class="mono">${a.decisionId ?? ""}</td><td>${time(a.startedAt)}</td><td>${time(a.endedAt)}</td></tr>`)}</tbody></table></div>`
    : h`<p class="empty">No attempt yet.</p>`
}
<h2>Journal entries</h2>
<div class="table-wrap" role="region" aria-label="Journal entries" tabindex="0"><table class="journal"><thead><tr><th scope="col">Seq</th><th scope="col">Type</th><th scope="col">At</th><th scope="col">Hash / previous</th><th scope="col">Data</th></tr></thead>
<tbody>${timeline.map((e) => h`<tr><td>${e.seq ?? "—"}</td><td class="mono">${e.type}</td><td>${time(e.at)}</td><td class="mono hash">${e.hash === undefined ? h`<span class="muted">not sealed yet (the sequencer chains it within moments)</span>` : h`${e.hash}<br><span class="muted">${e.prevHash ?? "(first)"}</span>`}</td><td><details><summary>data</summary>${json(e.data)}</details></td></tr>`)}</tbody></table></div>`;
  return { body, title: `${inv.action} ${inv.invocationId}` };
}
