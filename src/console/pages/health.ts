/** Health: connectors (breakers, error rate, latency), workers and their leases, the journal of each space, and charts of the last hour. */
import type { JournalVerification } from "../../core/journal.js";
import { TERMINAL_INVOCATION_STATUSES, type Invocation, type Json } from "../../core/types.js";
import { lines, stackedBars } from "../charts.js";
import type { ConsoleData, ShownEntry } from "../data.js";
import { badge, enc, h, idText, nothing, relative, table, time, type H } from "../html.js";
import type { Viewer } from "../viewer.js";

const HOUR = 3600_000;
const BUCKET = 5 * 60_000;
/**
 * Where an invocation stands at the end of the hour, by its latest status change in it: the four
 * terminal statuses (finished), or waiting in reconciliation for a person (not finished).
 */
const OUTCOMES = [
  { name: "succeeded", status: "succeeded", cls: "s-ok" },
  { name: "failed", status: "failed", cls: "s-bad" },
  { name: "denied", status: "denied", cls: "s-denied" },
  { name: "cancelled", status: "cancelled", cls: "s-neutral" },
  { name: "in reconciliation", status: "reconciliation_required", cls: "s-warn" },
] as const;
const CONNECTOR_COLUMNS = ["Connector", "Operation", "Breaker", "Consecutive failures", "Calls (1 h)", "Error rate", "Median latency", "p95 latency"].map((label, i) => ({ label, ...(i === 0 ? { cls: "lead" } : i === 2 ? { cls: "status" } : {}) }));
const FINISHED: ReadonlySet<string> = new Set<string>(TERMINAL_INVOCATION_STATUSES);

interface CallStats {
  calls: number;
  errors: number;
  latencies: number[];
}

function median(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)]!;
}

function p95(xs: number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.95) - 1)]!;
}

function ms(x: number | null): string {
  return x === null ? "—" : x < 1000 ? `${Math.round(x)} ms` : `${(x / 1000).toFixed(1)} s`;
}

async function lastHour(data: ConsoleData, v: Viewer, space: string, now: number): Promise<{ entries: ShownEntry[]; truncated: boolean }> {
  const since = now - HOUR;
  return data.journalBackwards(v.scope(space), (e) => (e.at < since ? "stop" : "take"), 20_000);
}

function connectorStats(data: ConsoleData, entries: ShownEntry[]): Map<string, CallStats> {
  const consumedAt = new Map<string, number>();
  for (const e of entries) if (e.type === "decision.consumed" && e.refs.attemptId) consumedAt.set(e.refs.attemptId, e.at);
  const out = new Map<string, CallStats>();
  const add = (key: string, error: boolean, latency: number | null): void => {
    const s = out.get(key) ?? { calls: 0, errors: 0, latencies: [] };
    s.calls++;
    if (error) s.errors++;
    if (latency !== null && latency >= 0) s.latencies.push(latency);
    out.set(key, s);
  };
  for (const e of entries) {
    const d = (e.data ?? {}) as { [k: string]: Json };
    if (e.type !== "attempt.settled" && e.type !== "step.succeeded") continue;
    const action = typeof d.action === "string" ? data.action(d.action) : undefined;
    const step = typeof d.stepIndex === "number" ? action?.steps[d.stepIndex] : undefined;
    if (!step) continue;
    const key = `${step.connector}\u0000${step.operation}`;
    if (e.type === "step.succeeded") {
      add(key, false, null);
      continue;
    }
    const state = typeof d.state === "string" ? d.state : "";
    const started = e.refs.attemptId ? consumedAt.get(e.refs.attemptId) : undefined;
    add(key, !(state === "SUCCEEDED" || state === "HANDED_OFF"), started !== undefined ? e.at - started : null);
  }
  return out;
}

function buckets(now: number): { starts: number[]; labels: string[] } {
  const end = Math.ceil(now / BUCKET) * BUCKET;
  const starts: number[] = [];
  for (let t = end - HOUR; t < end; t += BUCKET) starts.push(t);
  return { starts, labels: starts.map((t) => new Date(t).toISOString().slice(11, 16)) };
}

/**
 * Per 5-minute bucket, counted in invocations (never in journal events): submitted in the bucket;
 * by outcome, each invocation once, in the bucket of its latest status change of the hour, and
 * only when that change left it finished or in reconciliation (an invocation retried, or
 * reconciled and then resolved, counts once; one still waiting is not finished).
 */
export function throughput(entries: ShownEntry[], starts: number[]): { submitted: number[]; finished: number[]; outcomes: Array<{ name: string; cls: string; values: number[] }> } {
  const idx = (at: number): number => Math.floor((at - starts[0]!) / BUCKET);
  const outcomes = OUTCOMES.map((o) => ({ name: o.name, cls: o.cls, values: starts.map(() => 0) }));
  const submitted = starts.map(() => 0);
  const finished = starts.map(() => 0);
  const latest = new Map<string, ShownEntry>();
  const seen = new Set<string>();
  // Newest first: the first status change met per invocation is its latest.
  for (const e of entries) {
    const id = e.refs.invocationId;
    const i = idx(e.at);
    if (id === undefined || i < 0 || i >= starts.length) continue;
    if (e.type === "invocation.submitted") {
      if (!seen.has(id)) submitted[i]!++;
      seen.add(id);
    } else if (e.type.startsWith("invocation.") && !latest.has(id)) latest.set(id, e);
  }
  for (const e of latest.values()) {
    const status = e.type.slice("invocation.".length);
    const o = OUTCOMES.findIndex((x) => x.status === status);
    if (o < 0) continue;
    const i = idx(e.at);
    outcomes[o]!.values[i]!++;
    if (FINISHED.has(status)) finished[i]!++;
  }
  return { submitted, finished, outcomes };
}

function charts(space: string, entries: ShownEntry[], now: number): H {
  const { starts, labels } = buckets(now);
  const { submitted, finished, outcomes } = throughput(entries, starts);
  const id = `c-${space.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  return h`<div class="charts">
  ${stackedBars(`${id}-out`, `Outcomes per 5 minutes, last hour, in invocations (${space})`, labels, outcomes)}
  ${lines(`${id}-tp`, `Throughput per 5 minutes, last hour, in invocations (${space})`, labels, [
    { name: "submitted", cls: "s-info", values: submitted },
    { name: "finished", cls: "s-ok", values: finished },
  ])}
</div>`;
}

function verification(v: JournalVerification): H {
  return h`<div class="flash ${v.ok ? "ok" : "error"}" role="status" data-testid="verify-result">
  <p><strong>${v.ok ? "The journal verifies." : "The journal does NOT verify."}</strong> ${v.entries} entries and ${v.checkpoints} signed checkpoint(s) checked; head ${v.headSeq}.</p>
  ${v.problems.length > 0 ? h`<ul>${v.problems.slice(0, 10).map((p) => h`<li>${JSON.stringify(p)}</li>`)}</ul>` : nothing}
</div>`;
}

export async function healthBody(data: ConsoleData, v: Viewer, query: { verify?: string }, now: number): Promise<H> {
  const sections: H[] = [];
  for (const space of v.spacesWith("operate")) {
    const scope = v.scope(space);
    const breakers = await data.breakers(scope);
    const { entries, truncated } = await lastHour(data, v, space, now);
    const stats = connectorStats(data, entries);
    const connectorRows = data.connectors().flatMap((c) =>
      c.operations.map((op) => {
        const b = breakers.find((x) => x.connector === c.id && x.operation === op);
        const s = stats.get(`${c.id}\u0000${op}`);
        return [h`${c.id}`, h`${op}`, h`${badge(b?.state ?? "closed")}${b && b.state !== "closed" ? h` <span class="muted">until ${time(b.openUntil)}</span>` : nothing}`, h`${b?.failures ?? 0}`, h`${s?.calls ?? 0}`, h`${s && s.calls > 0 ? `${Math.round((s.errors / s.calls) * 100)}%` : "—"}`, h`${ms(median(s?.latencies ?? []))}`, h`${ms(p95(s?.latencies ?? []))}`];
      }),
    );
    const running: Invocation[] = await data.invocations(scope, { status: "running", limit: 500 });
    const byOwner = new Map<string, Invocation[]>();
    for (const inv of running) {
      const k = inv.leaseOwner ?? "(none)";
      byOwner.set(k, [...(byOwner.get(k) ?? []), inv]);
    }
    const head = await data.journalHead(scope);
    const unsealed = await data.unsealedCount(scope, 1000);
    const cp = await data.lastCheckpoint(scope);
    const arch = await data.archiveState(scope);
    const lag = (head?.seq ?? 0) - arch.archivedThrough;
    const verified = query.verify === space ? await data.verifyJournal(scope) : null;
    sections.push(h`<section class="space" aria-labelledby="h-${space}">
<h2 id="h-${space}">Space ${space}</h2>
${charts(space, entries, now)}
${truncated ? h`<p class="muted">Only the latest 20,000 journal entries of the hour were read.</p>` : nothing}
<h3>Connectors</h3>
<p class="muted">Breaker state is this process's (each worker process keeps its own); calls, errors and latency come from the journal of the last hour (latency: decision consumed to attempt settled).</p>
${table({ label: `Connectors in ${space}`, testid: "connectors", columns: CONNECTOR_COLUMNS, rows: connectorRows })}
<h3>Workers and leases</h3>
${
  byOwner.size > 0
    ? table({
        label: `Workers in ${space}`,
        columns: [{ label: "Worker", cls: "id lead" }, { label: "Leases held" }, { label: "Earliest lease expiry" }, { label: "Invocations" }],
        rows: [...byOwner].map(([owner, invs]) => {
          const exp = Math.min(...invs.map((i) => i.leaseExpiresAt ?? Infinity));
          return [idText(owner), h`${invs.length}`, Number.isFinite(exp) ? h`${time(exp)} ${exp < now ? h`${badge("expired")}` : h`<span class="muted">(${relative(exp, now)})</span>`}` : h`—`, h`${invs.slice(0, 5).map((i) => h`<a href="/console/spaces/${enc(space)}/invocations/${enc(i.invocationId)}">${idText(i.invocationId)}</a> `)}`];
        }),
      })
    : h`<p class="empty">No invocation is running right now (no lease held).</p>`
}
<h3>Journal</h3>
<dl class="facts">
  <div><dt>Entries (head)</dt><dd>${head?.seq ?? 0}${unsealed > 0 ? h` <span class="muted">(+${unsealed >= 1000 ? "1000 or more" : unsealed} not sealed yet)</span>` : nothing}</dd></div>
  <div><dt>Head hash</dt><dd>${head ? idText(head.hash) : "—"}</dd></div>
  <div data-testid="archive-lag"><dt>Archive</dt><dd>${!arch.archiving ? "off (archive.enabled: false)" : arch.archivedThrough === 0 ? h`nothing archived yet <span class="muted">(lag ${lag} entries; writ journal archive)</span>` : h`archived through seq ${arch.archivedThrough} <span class="muted">(lag ${lag} entr${lag === 1 ? "y" : "ies"})</span>`}</dd></div>
  <div data-testid="oldest-live"><dt>Oldest entry in the database</dt><dd>${arch.oldestLive ? h`seq ${arch.oldestLive.seq} at ${time(arch.oldestLive.at)}` : "—"}</dd></div>
  <div><dt>Last signed checkpoint</dt><dd>${cp ? h`seq ${cp.seq} at ${time(cp.at)}${head && cp.seq < head.seq ? h` <span class="muted">(${head.seq - cp.seq} entries since)</span>` : nothing}` : "none yet (writ journal checkpoint)"}</dd></div>
</dl>
<form method="get" action="/console/health#h-${space}" class="inline-form"><input type="hidden" name="verify" value="${space}"><button type="submit">Verify the journal of ${space}</button></form>
${verified ? verification(verified) : nothing}
</section>`);
  }
  return h`<h1>Health</h1>${sections.length > 0 ? sections : h`<p class="empty">Your API key has the operate role in no space.</p>`}`;
}
