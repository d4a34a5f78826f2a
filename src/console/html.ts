/**
 * HTML for the console, built with hono/html: every interpolated value is escaped (`&<>"'`);
 * only fragments made by `h` itself pass through unescaped. No inline script and no style
 * attributes anywhere (the Content-Security-Policy forbids both).
 */
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { Actor } from "../core/types.js";

export type H = HtmlEscapedString;
type Value = H | string | number | boolean | null | undefined | ReadonlyArray<H | string | number | null | undefined | false>;

/** An escaping template: `h\`<p>${text}</p>\``. Synchronous (the console never nests promises). */
export function h(strings: TemplateStringsArray, ...values: Value[]): H {
  return html(strings, ...(values as unknown[])) as H;
}

export const nothing: H = h``;

export function actorText(a: Actor | undefined | null): string {
  return a ? `${a.type}:${a.id}` : "unknown";
}

export function iso(ms: number | undefined): string {
  return ms === undefined ? "" : new Date(ms).toISOString();
}

/** "2026-12-01 19:52:03 UTC" in a <time> element. */
export function time(ms: number | undefined): H {
  if (ms === undefined || !Number.isFinite(ms)) return h`<span>—</span>`;
  const t = iso(ms);
  return h`<time datetime="${t}">${t.slice(0, 19).replace("T", " ")} UTC</time>`;
}

/** "in 3 h 5 min" / "4 min ago". */
export function relative(ms: number, now: number): string {
  const d = ms - now;
  const a = Math.abs(d);
  const min = Math.round(a / 60_000);
  const text = a < 60_000 ? `${Math.round(a / 1000)} s` : min < 60 ? `${min} min` : a < 86_400_000 ? `${Math.floor(min / 60)} h ${min % 60} min` : `${Math.round(a / 86_400_000)} d`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
}

const STATUS_CLASS: Record<string, string> = {
  succeeded: "ok",
  approved: "ok",
  resolved: "ok",
  closed: "ok",
  SUCCEEDED: "ok",
  DUPLICATE: "ok",
  failed: "bad",
  denied: "bad",
  FAILED: "bad",
  REFUSED: "bad",
  open: "warn",
  half_open: "warn",
  reconciliation_required: "warn",
  UNKNOWN: "warn",
  TIMED_OUT: "warn",
  unknown: "warn",
  awaiting_approval: "wait",
  pending: "wait",
  parked: "wait",
  handed_off: "wait",
  HANDED_OFF: "wait",
};

/**
 * A status as text in a badge (the colour only repeats what the text says). `kind` overrides the
 * colour where a word means another thing elsewhere (a closed breaker is fine; a closed approval
 * is not a success).
 */
export function badge(status: string, kind?: string): H {
  return h`<span class="badge ${kind ?? STATUS_CLASS[status] ?? "neutral"}">${String(status).replace(/_/g, " ")}</span>`;
}

/** JSON longer than this many lines (or characters) scrolls inside a box of its own. */
const JSON_LINES = 12;
const JSON_CHARS = 800;

/**
 * A value as indented JSON. Short JSON wraps and never scrolls; long JSON is capped in height and
 * scrolls inside a labelled region that takes keyboard focus, so it can be scrolled without a
 * mouse (axe's scrollable-region-focusable; docs/console.md, Accessibility and layouts).
 */
/**
 * An id (invocation, attempt, digest, reference) in monospace that breaks only after its
 * separators (`_`, `-`, `:`, `.`, `/`) or every 8 characters of a long run, never elsewhere (no
 * part is longer than about 20 characters, which fits a phone's line). The full value stays one string to copy (<wbr> adds no text).
 */
export function idText(value: string): H {
  // Random runs (a digest's base64) longer than 16 characters get a break every 8; a part shorter
  // than four characters stays with its neighbour, so no line holds a lone "0".
  const parts: string[] = [];
  for (const sep of String(value).split(/(?<=[_\-:./])/)) {
    for (const p of sep.length > 16 ? (sep.match(/.{1,8}/g) ?? []) : [sep]) {
      const last = parts.length - 1;
      if (last >= 0 && (p.length < 4 || parts[last]!.length < 4)) parts[last] += p;
      else parts.push(p);
    }
  }
  // Each part is unbreakable (a browser would otherwise break after any "-"); <wbr> between parts.
  return h`<span class="id">${parts.map((p, i) => (i === 0 ? h`<span>${p}</span>` : h`<wbr><span>${p}</span>`))}</span>`;
}

/** A reason code (OUTCOME_AMBIGUOUS): never broken inside. */
export function code(value: string): H {
  return h`<code class="code">${value}</code>`;
}

export interface Column {
  label: string;
  /** Class of each cell in the column (`id`: long ids; `status`: badges). */
  cls?: string;
}

/**
 * A table in a labelled, focusable region that scrolls sideways if it must. On a phone each row
 * stacks into a block whose cells carry their column's name (data-label); the explicit table
 * roles keep it a table for screen readers whatever the CSS display (docs/console.md).
 */
function cellOf(c: Column | undefined, cell: H): H {
  return h`<td role="cell" data-label="${c?.label ?? ""}"${c?.cls ? h` class="${c.cls}"` : nothing}>${cell}</td>`;
}

export function table(p: { label: string; caption?: string; columns: Column[]; rows: H[][]; cls?: string; testid?: string }): H {
  return h`<div class="table-wrap" role="region" aria-label="${p.label}" tabindex="0"><table class="stack${p.cls ? ` ${p.cls}` : ""}" role="table">
${p.caption ? h`<caption class="visually-hidden">${p.caption}</caption>` : nothing}<thead role="rowgroup"><tr role="row">${p.columns.map((c) => h`<th scope="col" role="columnheader">${c.label}</th>`)}</tr></thead>
<tbody role="rowgroup"${p.testid ? h` data-testid="${p.testid}"` : nothing}>${p.rows.map((r) => h`<tr role="row">${r.map((cell, i) => cellOf(p.columns[i], cell))}</tr>`)}</tbody>
</table></div>`;
}

export function json(v: unknown, label: string): H {
  let text: string;
  try {
    text = JSON.stringify(v, null, 2) ?? "null";
  } catch {
    text = String(v);
  }
  const long = text.length > JSON_CHARS || text.split("\n").length > JSON_LINES;
  return long ? h`<pre class="json scroll" tabindex="0" role="region" aria-label="${label}">${text}</pre>` : h`<pre class="json">${text}</pre>`;
}

export function q(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : "";
}

export function enc(s: string): string {
  return encodeURIComponent(s);
}

export interface Nav {
  active: "approvals" | "reconciliations" | "invocations" | "health" | "notifications" | "none";
  pendingApprovals: number;
  openReconciliations: number;
  canApprove: boolean;
  canOperate: boolean;
  canRead: boolean;
  /** An admin key over every space: the tenant's notifications. */
  canNotify?: boolean;
}

export interface Who {
  actor: Actor;
  keyId: string;
  tenantId: string;
  roles: string[];
  spaces: string[];
  csrf: string;
}

export interface PageInput {
  title: string;
  /** `inbox`, `queue`, `invocation:<space>:<id>` — pages the live script refreshes on change. */
  live?: string;
  /** The live signature sampled before the page read its data (see live.ts). */
  liveSig?: string;
  nav?: Nav;
  who?: Who;
  flash?: { kind: "ok" | "error"; text: string } | undefined;
  body: H;
}

export function pendingCount(nav: Nav | undefined): number {
  if (!nav) return 0;
  return (nav.canApprove ? nav.pendingApprovals : 0) + (nav.canOperate ? nav.openReconciliations : 0);
}

function navLink(nav: Nav, id: Nav["active"], href: string, label: string, count?: number): H {
  const current = nav.active === id;
  const c = count !== undefined ? h` <span class="count" data-count="${id}">${count}</span><span class="visually-hidden"> waiting</span>` : nothing;
  return h`<li><a href="${href}"${current ? h` aria-current="page"` : nothing}>${label}${c}</a></li>`;
}

export function page(p: PageInput): H {
  const n = pendingCount(p.nav);
  const title = `${n > 0 ? `(${n}) ` : ""}${p.title} · Writ console`;
  const nav = p.nav;
  const who = p.who;
  return h`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<link rel="icon" href="/console/static/icon.svg" type="image/svg+xml">
<title>${title}</title>
<link rel="stylesheet" href="/console/static/console.css">
<script src="/console/static/console.js" defer></script>
</head>
<body${p.live ? h` data-live="${p.live}"` : nothing}${p.liveSig !== undefined ? h` data-live-sig="${p.liveSig}"` : nothing} data-title="${p.title} · Writ console" data-pending="${n}">
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="/console">Writ console</a>
  ${
    nav
      ? h`<nav aria-label="Console sections"><ul>
    ${nav.canApprove ? navLink(nav, "approvals", "/console/approvals", "Approvals", nav.pendingApprovals) : nothing}
    ${nav.canOperate ? navLink(nav, "reconciliations", "/console/reconciliations", "Reconciliations", nav.openReconciliations) : nothing}
    ${nav.canRead ? navLink(nav, "invocations", "/console/invocations", "Invocations") : nothing}
    ${nav.canOperate ? navLink(nav, "health", "/console/health", "Health") : nothing}
    ${nav.canNotify ? navLink(nav, "notifications", "/console/notifications", "Notifications") : nothing}
  </ul></nav>`
      : nothing
  }
  ${
    who
      ? h`<div class="who">
    <span>Signed in as <strong data-testid="who">${actorText(who.actor)}</strong> <span class="muted">(key ${who.keyId}, tenant ${who.tenantId}, roles ${who.roles.join(", ")})</span></span>
    <form method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="${who.csrf}"><button type="submit" class="link">Sign out</button></form>
  </div>`
      : nothing
  }
</header>
<main id="main" tabindex="-1">
${p.flash ? h`<p class="flash ${p.flash.kind}" role="${p.flash.kind === "error" ? "alert" : "status"}">${p.flash.text}</p>` : nothing}
<div id="live">
${p.body}
</div>
</main>
<div id="announcer" class="visually-hidden" aria-live="polite"></div>
</body>
</html>`;
}

/** A CSRF-protected form posting to `action`. */
export function form(action: string, csrf: string, inner: H, attrs: H = nothing): H {
  return h`<form method="post" action="${action}"${attrs}><input type="hidden" name="_csrf" value="${csrf}">${inner}</form>`;
}
