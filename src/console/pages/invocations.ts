/** Invocations: a filtered, searchable, cursor-paged list, and one invocation's detail with its journal timeline. */
import { INVOCATION_STATUSES, type Invocation, type InvocationStatus, type Json } from "../../core/types.js";
import type { ConsoleData, ShownEntry } from "../data.js";
import { actorText, badge, code, enc, h, idText, json, nothing, q, table, time, type H } from "../html.js";
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

const LIST_COLUMNS = [{ label: "Invocation", cls: "id lead" }, { label: "Action" }, { label: "Status", cls: "status" }, { label: "Actor" }, { label: "Idempotency key", cls: "id" }, { label: "Created" }];

function row(space: string, inv: Invocation): H[] {
  return [h`<a href="/console/spaces/${enc(space)}/invocations/${enc(inv.invocationId)}">${idText(inv.invocationId)}</a>`, h`${inv.action}`, badge(inv.status), h`${actorText(inv.request.actor)}`, idText(inv.idempotencyKey), time(inv.createdAt)];
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
    ? table({ label: `Invocations in ${space}`, caption: `Invocations in space ${space}, newest first`, columns: LIST_COLUMNS, rows: items.map((i) => row(space, i)), testid: "invocation-rows" })
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

/** An unknown outcome, said once: what the reason code means and what the connector replied. */
function explain(reasonCode: string, reason: string): string {
  return `${REASON_TEXT[reasonCode] ?? "The outcome is not known."} The connector said: “${reason}”`;
}

/** What a journal entry means: a title, a reason code if any, and a short detail. */
export interface Described {
  title: string;
  code?: string;
  detail: string;
  kind: string;
}

/**
 * Reasons a detail page says once, in the one place they belong: an unknown outcome's connector
 * reply is explained in the notice at the top while its reconciliation is open (`above`), else
 * in its "Sent to reconciliation" entry. Every other mention carries only the reason code.
 */
export interface Said {
  reasons: ReadonlySet<string>;
  above: ReadonlySet<string>;
}

/** One line saying what a journal entry means (reasons in `said` are left to their one place). */
export function describe(e: ShownEntry, said: Said = { reasons: new Set(), above: new Set() }): Described {
  const d = (e.data ?? {}) as { [k: string]: Json };
  const reasons = Array.isArray(d.reasons) ? d.reasons.map(String).join("; ") : "";
  const unsaid = (v: Json | undefined): string => (said.reasons.has(str(v)) ? "" : str(v));
  const withCode = (c: string, rest: Omit<Described, "code">): Described => (c ? { ...rest, code: c } : rest);
  switch (e.type) {
    case "invocation.submitted":
      return { kind: "info", title: "Submitted", detail: `by ${actorOf(d.actor)} under authority ${str(d.authorityRef)}, idempotency key ${str(d.idempotencyKey)}` };
    case "invocation.claimed":
      return { kind: "info", title: "Claimed by a worker", detail: `${str(d.owner)} (claim ${str(d.attemptCount)})` };
    case "approval.opened":
      return { kind: "wait", title: "Evaluated: approval required", detail: `${reasons ? `policy ${reasons}; ` : ""}quorum ${str(d.quorum)} of ${Array.isArray(d.approverRoles) ? d.approverRoles.map((r) => str(r)).join(", ") : ""}` };
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
      return withCode(str(d.reasonCode), { kind, title: `Attempt ${state.toLowerCase().replace(/_/g, " ")}${d.stepName ? ` at step ${str(d.stepIndex)} (${str(d.stepName)})` : ""}`, detail: [unsaid(d.reason), d.externalRef ? `reference ${str(d.externalRef)}` : ""].filter(Boolean).join(": ") });
    }
    case "reconciliation.opened": {
      // The place the unknown outcome is explained, unless the notice at the top already does.
      const above = said.above.has(str(d.reason));
      return withCode(str(d.reasonCode), { kind: "warn", title: "Sent to reconciliation", detail: above ? "(explained at the top of the page)" : explain(str(d.reasonCode), str(d.reason)) });
    }
    case "reconciliation.resolved":
      return { kind: d.outcome === "succeeded" ? "ok" : "bad", title: `Reconciliation resolved as ${str(d.outcome)}`, detail: `by ${actorOf(d.by)}${d.externalRef ? `, reference ${str(d.externalRef)}` : ""} — “${str(d.note)}”` };
    default:
      // Every other approval.* entry (vote, granted, denied, revoked, expired, and any added later).
      if (e.type.startsWith("approval.")) {
        const what = e.type.slice(9);
        return { kind: what === "granted" ? "ok" : what === "vote" ? "info" : "bad", title: `Approval ${what}`, detail: `${actorOf(d.by) ? `by ${actorOf(d.by)}` : ""}${d.note ? ` — “${str(d.note)}”` : ""} (${str(d.votes)} of ${str(d.quorum)} votes)` };
      }
      if (e.type.startsWith("completion.")) return { kind: "info", title: `Completion ${e.type.slice(11)}`, detail: [str(d.outcome), str(d.externalRef)].filter(Boolean).join(", ") };
      if (e.type.startsWith("invocation.")) {
        const to = e.type.slice(11);
        const kind = to === "succeeded" ? "ok" : to === "failed" || to === "denied" ? "bad" : to === "reconciliation_required" ? "warn" : "info";
        return { kind, title: `Status: ${str(d.from).replace(/_/g, " ")} → ${to.replace(/_/g, " ")}`, detail: [reasons, unsaid(d.error)].filter(Boolean).join("; ") };
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
  const stepOf = (i: number): string => `step ${i}${steps.find((x) => x.stepIndex === i) ? ` (${steps.find((x) => x.stepIndex === i)!.stepName})` : ""}`;
  const said: Said = { reasons: new Set(recs.map((r) => r.reason)), above: new Set(recOpen ? [recOpen.reason] : []) };
  const reasonCell = (c: string | undefined, reason: string | undefined): H => h`${c ? code(c) : nothing}${c && reason && !said.reasons.has(reason) ? " " : ""}${reason && !said.reasons.has(reason) ? reason : ""}`;
  const body = h`<p class="crumbs"><a href="/console/invocations${q({ space })}">Invocations</a> / ${idText(inv.invocationId)}</p>
<h1>${inv.action} <span class="muted">v${inv.actionVersion}</span> <span data-testid="status">${badge(inv.status)}</span></h1>
${inv.status === "awaiting_approval" && approval ? h`<p class="flash info">Waiting for approval <a href="/console/approvals#apr-${approval.approvalId}">${idText(approval.approvalId)}</a> (${approval.votes.filter((x) => x.verdict === "approve").length} of ${approval.quorum}).</p>` : nothing}
${
  recOpen
    ? h`<div class="flash warn" data-testid="unknown-outcome"><p>The outcome of ${stepOf(recOpen.stepIndex)} is unknown. ${code(recOpen.reasonCode)}: ${explain(recOpen.reasonCode, recOpen.reason)}</p>
<p><a href="/console/reconciliations#rec-${recOpen.reconciliationId}">Resolve it in the reconciliation queue</a>.</p></div>`
    : nothing
}
<dl class="facts">
  <div><dt>Invocation</dt><dd>${idText(inv.invocationId)}</dd></div>
  <div><dt>Space</dt><dd>${space}</dd></div>
  <div><dt>Actor</dt><dd>${actorText(inv.request.actor)}</dd></div>
  <div><dt>Authority</dt><dd>${inv.request.authorityRef}</dd></div>
  <div><dt>Idempotency key</dt><dd>${idText(inv.idempotencyKey)}</dd></div>
  <div><dt>Request digest</dt><dd>${idText(inv.requestDigest)}</dd></div>
  <div><dt>Created</dt><dd>${time(inv.createdAt)}</dd></div>
  <div><dt>Updated</dt><dd>${time(inv.updatedAt)}</dd></div>
  <div><dt>Claims</dt><dd>${inv.attemptCount}${inv.retryCount > 0 ? `, ${inv.retryCount} retries` : ""}</dd></div>
  ${inv.reasons && inv.reasons.length > 0 ? h`<div><dt>Reasons</dt><dd>${inv.reasons.join("; ")}</dd></div>` : nothing}
  ${inv.lastError && !said.reasons.has(inv.lastError) ? h`<div><dt>Last error</dt><dd>${inv.lastError}</dd></div>` : nothing}
  ${inv.leaseOwner ? h`<div><dt>Lease</dt><dd>${idText(inv.leaseOwner)} until ${time(inv.leaseExpiresAt)}</dd></div>` : nothing}
</dl>
<h2>Parameters <span class="muted">(sensitive fields masked)</span></h2>
${json(inv.request.params, "Parameters")}
${inv.result !== undefined ? h`<h2>Result</h2>${json(inv.result, "Result")}` : nothing}
<h2 id="timeline-h">Timeline</h2>
<ol class="timeline" aria-labelledby="timeline-h" data-testid="timeline">
${timeline.map((e) => {
  const d = describe(e, said);
  return h`<li class="ev ${d.kind}" data-type="${e.type}"><span class="when">${time(e.at)}</span> <strong>${d.title}</strong>${d.code || d.detail ? h` <span class="detail">${d.code ? code(d.code) : nothing}${d.code && d.detail ? " " : ""}${d.detail}</span>` : nothing}</li>`;
})}
</ol>
${truncated ? h`<p class="muted">Older journal entries were not scanned (the journal is long); the timeline may miss the earliest events.</p>` : nothing}
<h2>Steps</h2>
${
  steps.length > 0
    ? table({
        label: "Steps",
        columns: [{ label: "#" }, { label: "Step", cls: "lead" }, { label: "Connector" }, { label: "Status", cls: "status" }, { label: "Reference", cls: "id" }, { label: "Reason" }, { label: "Started" }, { label: "Ended" }],
        rows: steps.map((x) => [h`${x.stepIndex}`, h`${x.stepName}`, h`${x.connector ?? "—"}`, badge(x.status), x.externalRef ? idText(x.externalRef) : nothing, reasonCell(x.reasonCode, x.reason), time(x.startedAt), time(x.endedAt)]),
      })
    : h`<p class="empty">No step has started.</p>`
}
<h2>Attempts</h2>
${
  attempts.length > 0
    ? table({
        label: "Attempts",
        columns: [{ label: "Attempt", cls: "id lead" }, { label: "State", cls: "status" }, { label: "Reason" }, { label: "Decision", cls: "id" }, { label: "Started" }, { label: "Ended" }],
        rows: attempts.map((x) => [idText(x.attemptId), badge(x.state), reasonCell(x.reasonCode, x.reason), x.decisionId ? idText(x.decisionId) : nothing, time(x.startedAt), time(x.endedAt)]),
      })
    : h`<p class="empty">No attempt yet.</p>`
}
<h2>Journal entries</h2>
${table({
  label: "Journal entries",
  cls: "journal",
  columns: [{ label: "Seq" }, { label: "Type", cls: "lead" }, { label: "At" }, { label: "Hash / previous", cls: "id hash" }, { label: "Data" }],
  rows: timeline.map((e) => [
    h`${e.seq ?? "—"}`,
    h`<span class="mono">${e.type}</span>`,
    time(e.at),
    e.hash === undefined ? h`<span class="muted">not sealed yet (the sequencer chains it within moments)</span>` : h`${idText(e.hash)}<br><span class="muted">${e.prevHash ? idText(e.prevHash) : "(first)"}</span>`,
    h`<details><summary>data</summary>${json(e.data, `Data of ${e.type}${e.seq !== undefined ? ` (seq ${e.seq})` : ""}`)}</details>`,
  ]),
})}`;
  return { body, title: `${inv.action} ${inv.invocationId}` };
}
