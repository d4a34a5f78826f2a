/**
 * The console's only script and stylesheet, served from /console/static/ (the CSP allows nothing
 * inline). The script is progressive enhancement: every page works without it; with it, live
 * pages refresh on server-sent events and the title counts pending work.
 */

export const CONSOLE_JS = `(function () {
  "use strict";
  var body = document.body;
  if (!body || !body.hasAttribute("data-title")) return;
  var baseTitle = body.getAttribute("data-title");
  var live = body.getAttribute("data-live");
  var announcer = document.getElementById("announcer");
  var signedIn = !!document.querySelector("form[action='/console/sign-out']");

  function announce(text) {
    if (!announcer) return;
    announcer.textContent = "";
    window.setTimeout(function () { announcer.textContent = text; }, 50);
  }
  function setTitle(n) {
    document.title = (n > 0 ? "(" + n + ") " : "") + baseTitle;
    body.setAttribute("data-pending", String(n));
  }
  function setCount(name, n) {
    var el = document.querySelector("[data-count='" + name + "']");
    if (el) el.textContent = String(n);
  }
  // A person typing in a form on the page keeps what they typed: no refresh under their hands.
  function busy() {
    var region = document.getElementById("live");
    if (!region) return false;
    var a = document.activeElement;
    if (a && region.contains(a) && (a.tagName === "TEXTAREA" || (a.tagName === "INPUT" && a.type !== "hidden" && a.type !== "radio"))) return true;
    var fields = region.querySelectorAll("textarea, input:not([type=hidden]):not([type=radio]):not([type=search])");
    for (var i = 0; i < fields.length; i++) if (fields[i].value && fields[i].value !== fields[i].defaultValue) return true;
    var radios = region.querySelectorAll("input[type=radio]");
    for (var j = 0; j < radios.length; j++) if (radios[j].checked !== radios[j].defaultChecked) return true;
    return false;
  }
  var pendingRefresh = false;
  function showStale() {
    if (document.getElementById("stale")) return;
    var p = document.createElement("p");
    p.id = "stale";
    p.className = "flash info";
    p.setAttribute("role", "status");
    p.appendChild(document.createTextNode("This page has changed since you opened it. "));
    var b = document.createElement("button");
    b.type = "button";
    b.textContent = "Show the latest";
    b.addEventListener("click", function () { p.remove(); refresh(true); });
    p.appendChild(b);
    var main = document.getElementById("main");
    if (main) main.insertBefore(p, main.firstChild);
  }
  function refresh(force) {
    if (!force && busy()) { pendingRefresh = true; showStale(); return; }
    pendingRefresh = false;
    fetch(window.location.href, { credentials: "same-origin", headers: { "x-writ-live": "1" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("live");
        var cur = document.getElementById("live");
        if (!next || !cur) return;
        var focusedId = document.activeElement && document.activeElement.id;
        cur.replaceWith(document.importNode(next, true));
        if (focusedId) { var f = document.getElementById(focusedId); if (f) f.focus(); }
        var stale = document.getElementById("stale");
        if (stale) stale.remove();
        body.setAttribute("data-refreshed", String(Number(body.getAttribute("data-refreshed") || "0") + 1));
      })
      .catch(function () {});
  }
  if (!signedIn || typeof window.EventSource !== "function") return;
  var es = new EventSource("/console/events");
  // The signature the page was rendered at: a change that overtook the page while it loaded
  // differs from it, so the first event refreshes the page.
  var last = body.getAttribute("data-live-sig");
  var lastApprovals = null;
  es.addEventListener("change", function (ev) {
    var d;
    try { d = JSON.parse(ev.data); } catch (e) { return; }
    setTitle(d.pending);
    setCount("approvals", d.approvals);
    setCount("reconciliations", d.reconciliations);
    if (lastApprovals !== null && d.approvals > lastApprovals) {
      var n = d.approvals - lastApprovals;
      announce(n + (n === 1 ? " new approval is" : " new approvals are") + " waiting.");
    }
    lastApprovals = d.approvals;
    var changed = last !== null && d.sig !== last;
    last = d.sig;
    if (changed && live) refresh(false);
  });
  es.addEventListener("signed-out", function () { es.close(); window.location.assign("/console/sign-in"); });
  document.addEventListener("focusout", function () {
    window.setTimeout(function () { if (pendingRefresh && !busy()) refresh(false); }, 0);
  });
  window.addEventListener("pagehide", function () { es.close(); });
})();
`;

export const CONSOLE_CSS = `:root {
  --fg: #1b1f24; --muted: #4a525c; --bg: #ffffff; --panel: #f5f7f9; --line: #c9d1d9;
  --accent: #0b5cad; --accent-fg: #ffffff; --danger: #a4161a; --ok-bg: #dff3e4; --ok-fg: #14532d;
  --bad-bg: #fbe3e4; --bad-fg: #7f1d1d; --warn-bg: #fff1c7; --warn-fg: #6b4400; --wait-bg: #e3ecfb; --wait-fg: #123a73;
  --focus: #ffbf47;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; line-height: 1.45; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible, [tabindex]:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; box-shadow: 0 0 0 5px var(--fg);
}
.skip { position: absolute; left: -9999px; top: 0; background: var(--fg); color: #fff; padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; top: .5rem; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
.top { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; padding: .6rem 1rem; background: #11263c; color: #fff; }
.top a { color: #fff; }
.brand { font-weight: 700; text-decoration: none; font-size: 1.1rem; }
.top nav ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; }
.top nav a { text-decoration: none; padding: .25rem .1rem; border-bottom: 3px solid transparent; }
.top nav a[aria-current=page] { border-bottom-color: var(--focus); font-weight: 600; }
.count { display: inline-block; min-width: 1.4em; padding: 0 .35em; margin-left: .2em; border-radius: 1em; background: var(--focus); color: #1b1f24; text-align: center; font-size: .85em; font-weight: 700; }
.who { margin-left: auto; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; font-size: .9rem; }
.who .muted { color: #d5dde6; }
.who form { margin: 0; }
button.link { background: none; border: 1px solid #fff; color: #fff; border-radius: 4px; padding: .2rem .6rem; cursor: pointer; font: inherit; }
main { max-width: 70rem; margin: 0 auto; padding: 1rem; }
main:focus { outline: none; }
h1 { font-size: 1.6rem; margin: .5rem 0 .75rem; }
h2 { font-size: 1.2rem; margin: 1.25rem 0 .5rem; }
h3 { font-size: 1rem; margin: 1rem 0 .4rem; }
.lead { color: var(--muted); max-width: 48rem; }
.muted { color: var(--muted); font-weight: normal; }
.mono, .id, .code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
/* Ids break only between their parts (<wbr> between nowrap spans: html.ts idText); reason codes
   never break. */
.mono { overflow-wrap: break-word; }
.id > span, .code { white-space: nowrap; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem 1rem; margin: 0 0 1rem; background: var(--panel); }
.card h2 { margin-top: .25rem; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(15rem, 1fr)); gap: .4rem 1rem; margin: .5rem 0; }
.facts div { min-width: 0; }
.facts dt { font-size: .8rem; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
.facts dd { margin: 0; overflow-wrap: break-word; }
pre.json { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: .5rem .75rem; white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0; }
pre.json.scroll { max-height: 20rem; overflow: auto; }
.badge { display: inline-block; white-space: nowrap; padding: .05rem .5rem; border-radius: 1em; font-size: .8rem; font-weight: 600; border: 1px solid transparent; vertical-align: middle; }
.badge.ok { background: var(--ok-bg); color: var(--ok-fg); border-color: #8cc9a0; }
.badge.bad { background: var(--bad-bg); color: var(--bad-fg); border-color: #e0a3a6; }
.badge.warn { background: var(--warn-bg); color: var(--warn-fg); border-color: #e5c76b; }
.badge.wait { background: var(--wait-bg); color: var(--wait-fg); border-color: #9db5e0; }
.badge.neutral { background: #eceff2; color: var(--fg); border-color: var(--line); }
form.vote, form.resolve, form.signin { margin-top: .75rem; display: grid; gap: .35rem; max-width: 40rem; }
label { font-weight: 600; font-size: .92rem; }
label.inline { font-weight: normal; display: inline-flex; gap: .35rem; align-items: center; margin-right: 1rem; }
fieldset { border: 1px solid var(--line); border-radius: 6px; padding: .4rem .75rem; }
legend { font-weight: 600; font-size: .92rem; padding: 0 .25rem; }
input, select, textarea { font: inherit; padding: .45rem .5rem; border: 1px solid #6b7681; border-radius: 4px; background: #fff; color: var(--fg); max-width: 100%; }
textarea { width: 100%; }
input[type=radio] { width: auto; }
.buttons { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .25rem; }
button { font: inherit; padding: .45rem 1rem; border-radius: 4px; border: 1px solid #6b7681; background: #fff; color: var(--fg); cursor: pointer; min-height: 2.5rem; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--accent-fg); }
button.danger { background: var(--danger); border-color: var(--danger); color: #fff; }
button:disabled { background: #e9ecef; border-color: #adb5bd; color: #495057; cursor: not-allowed; }
.why { margin: .25rem 0; padding: .4rem .6rem; border-left: 4px solid var(--warn-fg); background: var(--warn-bg); color: var(--warn-fg); }
.flash { padding: .6rem .8rem; border-radius: 6px; border: 1px solid var(--line); margin: .5rem 0 1rem; }
.flash.ok { background: var(--ok-bg); color: var(--ok-fg); border-color: #8cc9a0; }
.flash.error { background: var(--bad-bg); color: var(--bad-fg); border-color: #e0a3a6; }
.flash.warn { background: var(--warn-bg); color: var(--warn-fg); }
.flash.info { background: var(--wait-bg); color: var(--wait-fg); }
.flash p { margin: 0 0 .4rem; } .flash p:last-child { margin-bottom: 0; }
.flash button { margin-left: .5rem; min-height: 2rem; padding: .2rem .7rem; }
.empty { color: var(--muted); font-style: italic; }
.tabs { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem; padding: 0; margin: 0 0 1rem; }
.tabs a { display: inline-block; padding: .3rem .75rem; border: 1px solid var(--line); border-radius: 4px; text-decoration: none; }
.tabs a[aria-current=page] { background: var(--accent); color: #fff; border-color: var(--accent); }
.votes { padding-left: 1.2rem; }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
thead th { background: var(--panel); }
td.hash { max-width: 22rem; }
.filters { display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: .5rem 1rem; align-items: end; background: var(--panel); padding: .75rem; border-radius: 8px; border: 1px solid var(--line); margin-bottom: 1rem; }
.filters div { display: grid; gap: .2rem; }
.filters input, .filters select { width: 100%; }
.pager { margin: 1rem 0; }
.crumbs { margin: 0; color: var(--muted); }
.timeline { list-style: none; padding: 0; margin: .5rem 0 1rem; border-left: 3px solid var(--line); }
.timeline li { position: relative; padding: .3rem 0 .3rem 1rem; }
.timeline li::before { content: ""; position: absolute; left: -8px; top: .65rem; width: 13px; height: 13px; border-radius: 50%; background: #6b7681; border: 2px solid #fff; }
.timeline li.ok::before { background: #1f7a3d; }
.timeline li.bad::before { background: var(--danger); }
.timeline li.warn::before { background: #b07d00; }
.timeline li.wait::before { background: var(--accent); }
.timeline .when { color: var(--muted); font-size: .85rem; margin-right: .4rem; }
.timeline .detail { display: block; color: var(--muted); overflow-wrap: break-word; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(18rem, 1fr)); gap: 1rem; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: .5rem .75rem; background: #fff; }
figure.chart figcaption { font-weight: 600; font-size: .92rem; }
figure.chart svg { width: 100%; height: auto; display: block; }
svg .axis { stroke: #6b7681; stroke-width: 1; }
svg .tick { fill: var(--muted); font-size: 10px; }
svg .line { stroke-width: 2.5; }
.s-ok { fill: #1f7a3d; stroke: #1f7a3d; }
.s-bad { fill: #b3261e; stroke: #b3261e; }
.s-denied { fill: #6f42c1; stroke: #6f42c1; }
.s-warn { fill: #b07d00; stroke: #b07d00; }
.s-info { fill: #0b5cad; stroke: #0b5cad; }
.s-neutral { fill: #6b7681; stroke: #6b7681; }
svg polyline.line { fill: none; }
.legend { display: flex; flex-wrap: wrap; gap: .25rem 1rem; font-size: .85rem; margin: .25rem 0; }
.swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; margin-right: .3rem; vertical-align: -1px; }
.swatch.s-ok { background: #1f7a3d; } .swatch.s-bad { background: #b3261e; } .swatch.s-denied { background: #6f42c1; } .swatch.s-warn { background: #b07d00; } .swatch.s-info { background: #0b5cad; } .swatch.s-neutral { background: #6b7681; }
.inline-form { display: inline-block; margin: .25rem 0; }
section.space { border-top: 2px solid var(--line); margin-top: 1rem; }
@media (max-width: 40rem) {
  .top { padding: .5rem .75rem; }
  .who { margin-left: 0; width: 100%; }
  main { padding: .75rem; }
  h1 { font-size: 1.35rem; }
  .buttons button { flex: 1 1 auto; }
  /* Tables stack on a phone: a block per row, each cell under its column's name. */
  table.stack thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
  table.stack, table.stack tbody, table.stack tr, table.stack td { display: block; }
  table.stack tr { padding: .5rem .6rem; border-bottom: 1px solid var(--line); }
  table.stack tr:last-child { border-bottom: 0; }
  table.stack td { border: 0; padding: .1rem 0; }
  table.stack td::before { content: attr(data-label) ": "; color: var(--muted); font-size: .85rem; }
  table.stack td.lead { font-weight: 600; }
  table.stack td.lead::before, table.stack td.status::before { content: none; }
  table.stack td:empty { display: none; }
}
@media (prefers-reduced-motion: reduce) { * { transition: none !important; animation: none !important; } }
`;

export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#11263c"/><path d="M7 9l4 14 5-10 5 10 4-14" fill="none" stroke="#ffbf47" stroke-width="3" stroke-linejoin="round"/></svg>`;
