/** The reconciliation queue: outcomes nobody knows, why, and a form to record what really happened. */
import type { AttemptRecord, Invocation, ReconciliationRecord, StepCheckpoint } from "../../core/types.js";
import type { ConsoleData } from "../data.js";
import { badge, code, enc, form, h, idText, nothing, relative, table, time, type H } from "../html.js";
import type { Viewer } from "../viewer.js";

/** What each reason code means for the person deciding. */
export const REASON_TEXT: Record<string, string> = {
  OUTCOME_AMBIGUOUS: "The connector's reply could not tell whether the effect happened.",
  EXECUTION_TIMEOUT: "The connector did not answer in time; the effect may or may not have happened.",
  COMPLETION_OVERDUE: "A handed-off operation did not report back before its deadline.",
  COMPLETION_CONTRADICTED: "Two completions for the same operation disagree.",
  RECOVERY_EXHAUSTED: "Workers kept stopping mid-way; Writ stopped retrying.",
  ACTION_VERSION_UNAVAILABLE: "The action's version is no longer deployed, and a step had started or run.",
  DENIED_AFTER_PARTIAL: "The policy denied the remaining steps after some had run.",
  COMPENSATION_FAILED: "A compensation step failed.",
  COMPENSATION_NOT_ALLOWED: "A compensation step was not allowed.",
  UNKNOWN: "A step was started but its outcome was never recorded.",
};

function card(v: Viewer, space: string, r: ReconciliationRecord, inv: Invocation | null, steps: StepCheckpoint[], attempts: AttemptRecord[], now: number): H {
  const id = `rec-${r.reconciliationId}`;
  const step = steps.find((s) => s.stepIndex === r.stepIndex);
  const last = [...attempts].reverse().find((a) => a.stepIndex === r.stepIndex || a.stepIndex === undefined);
  const canResolve = r.status === "open" && v.allows(space, "operate");
  const resolveForm = canResolve
    ? form(
        `/console/spaces/${enc(space)}/reconciliations/${enc(r.reconciliationId)}/resolve`,
        v.session.csrf,
        h`<input type="hidden" name="back" value="/console/reconciliations">
        <fieldset>
          <legend>What happened at the provider?</legend>
          <label class="inline"><input type="radio" name="outcome" value="succeeded" required> It succeeded</label>
          <label class="inline"><input type="radio" name="outcome" value="failed"> It failed (no effect)</label>
        </fieldset>
        <label for="${id}-ref">External reference (the provider's id, if it succeeded)</label>
        <input id="${id}-ref" name="externalRef" maxlength="512" autocomplete="off" value="${r.externalRef ?? ""}">
        <label for="${id}-note">Note (required: how you know)</label>
        <textarea id="${id}-note" name="note" rows="2" maxlength="2000" required></textarea>
        <div class="buttons"><button type="submit" class="primary">Resolve</button></div>`,
        h` class="resolve"`, // unnamed, not a landmark: see the vote form in approvals.ts
      )
    : nothing;
  return h`<article class="card reconciliation" id="${id}" data-reconciliation="${r.reconciliationId}" aria-labelledby="${id}-title">
  <h2 id="${id}-title">${inv?.action ?? "invocation"} <span class="muted">step ${r.stepIndex}${step ? ` (${step.stepName})` : ""}</span> ${badge(r.status)}</h2>
  <p><strong>${code(r.reasonCode)}</strong>: ${REASON_TEXT[r.reasonCode] ?? "The outcome is not known."}</p>
  <dl class="facts">
    <div><dt>Connector's last reply</dt><dd data-testid="reason">${r.reason}</dd></div>
    <div><dt>External reference</dt><dd>${idText(r.externalRef ?? step?.externalRef ?? "none")}</dd></div>
    <div><dt>Invocation</dt><dd><a href="/console/spaces/${enc(space)}/invocations/${enc(r.invocationId)}">${idText(r.invocationId)}</a></dd></div>
    <div><dt>Requested by</dt><dd>${inv ? `${inv.request.actor.type}:${inv.request.actor.id}` : "—"}</dd></div>
    <div><dt>Space</dt><dd>${space}</dd></div>
    <div><dt>Attempts</dt><dd>${attempts.length}${last ? h` (last: ${badge(last.state)}${last.reasonCode ? h` ${code(last.reasonCode)}` : nothing})` : nothing}</dd></div>
    <div><dt>Opened</dt><dd>${time(r.createdAt)} <span class="muted">(${relative(r.createdAt, now)})</span></dd></div>
    ${inv?.overdueAt !== undefined ? h`<div><dt>Overdue since</dt><dd>${time(inv.overdueAt)}</dd></div>` : nothing}
    ${
      r.resolution
        ? h`<div><dt>Resolution</dt><dd>${badge(r.resolution.outcome)} by <strong>${r.resolution.by.type}:${r.resolution.by.id}</strong> ${time(r.resolution.at)}${r.resolution.externalRef ? h`, reference ${idText(r.resolution.externalRef)}` : nothing} — “${r.resolution.note}”</dd></div>`
        : nothing
    }
  </dl>
  ${resolveForm}
</article>`;
}

export async function reconciliationsBody(data: ConsoleData, v: Viewer, query: { status?: string }, now: number): Promise<{ body: H; count: number }> {
  const status = query.status === "resolved" ? "resolved" : "open";
  const cards: H[] = [];
  const keyRows: H[][] = [];
  for (const space of v.spacesWith("operate")) {
    const scope = v.scope(space);
    for (const r of await data.reconciliations(scope, { status, limit: 200 })) {
      const inv = await data.invocation(scope, r.invocationId);
      const [steps, attempts] = [await data.steps(scope, r.invocationId), await data.attempts(scope, r.invocationId)];
      cards.push(card(v, space, r, inv, steps, attempts, now));
    }
    if (status === "open") {
      for (const k of await data.unknownKeys(scope, 200)) keyRows.push([h`${space}`, h`${k.action}`, idText(k.idempotencyKey), idText(k.attemptId), h`${time(k.updatedAt)} <span class="muted">(${relative(k.updatedAt, now)})</span>`]);
    }
  }
  // Keys bare boundary executions left unknown: no invocation, so no card; an operator settles them
  // with resolve-key (docs/boundary.md, Interrupted executions).
  const keys =
    keyRows.length === 0
      ? nothing
      : h`<section aria-labelledby="unknown-keys-title" data-testid="unknown-keys">
<h2 id="unknown-keys-title">Keys left unknown by direct boundary executions</h2>
<p>An execution through the boundary itself (not an invocation of the host) was interrupted, timed out or got an ambiguous reply. Check with the provider, then settle the key: <code>writ reconcile resolve-key --action &lt;action&gt; --key &lt;key&gt; --outcome succeeded|failed --note …</code> or <code>POST /v1/spaces/{space}/boundary/keys/resolve</code>.</p>
${table({ label: "Keys with an unknown outcome", columns: [{ label: "Space" }, { label: "Action" }, { label: "Idempotency key", cls: "id" }, { label: "Attempt", cls: "id" }, { label: "Since" }], rows: keyRows, testid: "unknown-key-rows" })}
</section>`;
  const body = h`<h1>Reconciliations</h1>
<p class="lead">Writ could not know these outcomes, so it neither retried nor guessed. Check with the provider, then record what happened; the resolution is journaled with your name.</p>
<nav aria-label="Reconciliation status"><ul class="tabs">
  <li><a href="/console/reconciliations"${status === "open" ? h` aria-current="page"` : nothing}>open</a></li>
  <li><a href="/console/reconciliations?status=resolved"${status === "resolved" ? h` aria-current="page"` : nothing}>resolved</a></li>
</ul></nav>
<section aria-label="Reconciliations (${status})" data-testid="reconciliations">
${cards.length > 0 ? cards : keyRows.length > 0 ? nothing : h`<p class="empty">Nothing ${status === "open" ? "waiting" : "resolved yet"}.</p>`}
</section>
${keys}`;
  return { body, count: cards.length + keyRows.length };
}
