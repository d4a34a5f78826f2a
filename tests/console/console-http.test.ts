/**
 * The console over plain HTTP (no browser): session cookie attributes, CSRF and origin checks on
 * every state change, escaping, security headers, bad input, session end (sign-out, revoked key,
 * idle and absolute expiry), and the live stream. Invariant: a refused request changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/server/app.js";
import { _safeBack, CONTENT_SECURITY_POLICY } from "../../src/console/index.js";
import { resolveConsoleOptions } from "../../src/console/options.js";
import { revokeApiKey } from "../../src/runtime/api-keys.js";
import { SCOPE, startConsoleRig, until, type ConsoleRig } from "./rig.js";

let rig: ConsoleRig;

beforeAll(async () => {
  rig = await startConsoleRig();
});
afterAll(async () => {
  await rig?.close();
});

const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** Signs in over HTTP; returns the session cookie pair and the page's CSRF token. */
async function signIn(key: string, base = rig.url): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${base}/console/sign-in`);
  const pre = form.headers.getSetCookie().find((c) => c.startsWith("writ_console_signin="))!.split(";")[0]!;
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const res = await fetch(`${base}/console/sign-in`, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: pre }, body: new URLSearchParams({ _csrf: token, apiKey: key }) });
  expect(res.status).toBe(303);
  const cookie = res.headers.getSetCookie().find((c) => c.startsWith("writ_console="))!.split(";")[0]!;
  const page = await fetch(`${base}/console/invocations`, { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  return { cookie, csrf };
}

async function pendingFor(invocationId: string) {
  return until("approval", async () => (await rig.runtime.host.approvals.list(SCOPE, { status: "pending" })).find((a) => a.invocationId === invocationId));
}

describe("console sessions", () => {
  it("sets an HttpOnly, SameSite=Strict, bounded session cookie scoped to /console (no Secure over plain http)", async () => {
    const form = await fetch(`${rig.url}/console/sign-in`);
    const pre = form.headers.getSetCookie()[0]!.split(";")[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await fetch(`${rig.url}/console/sign-in`, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: pre }, body: new URLSearchParams({ _csrf: token, apiKey: rig.keys.bob }) });
    const set = res.headers.getSetCookie().find((c) => c.startsWith("writ_console="))!;
    expect(set).toMatch(/; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=28800$/);
    expect(set).not.toContain("Secure");
    // The key text never comes back.
    expect(res.headers.getSetCookie().join(";")).not.toContain(rig.keys.bob);
  });

  it("marks the cookie Secure (__Host- prefix, Path=/) behind TLS: https, or X-Forwarded-Proto with trustProxy", async () => {
    const app = createApp(rig.runtime, { console: { spaces: ["prod"], trustProxy: true } });
    const viaProxy = await app.fetch(new Request("http://writ.internal/console/sign-in", { headers: { "x-forwarded-proto": "https" } }));
    expect(viaProxy.headers.getSetCookie()[0]).toContain("; Secure");
    expect(viaProxy.headers.get("strict-transport-security")).toBe("max-age=31536000");
    const form = await app.fetch(new Request("https://writ.example/console/sign-in"));
    const pre = form.headers.getSetCookie()[0]!.split(";")[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const res = await app.fetch(new Request("https://writ.example/console/sign-in", { method: "POST", headers: { ...FORM, cookie: pre, origin: "https://writ.example" }, body: new URLSearchParams({ _csrf: token, apiKey: rig.keys.bob }) }));
    expect(res.status).toBe(303);
    expect(res.headers.getSetCookie().find((c) => c.startsWith("__Host-writ_console="))).toMatch(/; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=\d+$/);
    // Without trustProxy the forwarded header is not believed.
    const untrusted = createApp(rig.runtime, { console: { spaces: ["prod"] } });
    const plain = await untrusted.fetch(new Request("http://writ.internal/console/sign-in", { headers: { "x-forwarded-proto": "https" } }));
    expect(plain.headers.getSetCookie()[0]).not.toContain("Secure");
  });

  it("refuses a sign-in without its form token, and a wrong key with 401 and no session", async () => {
    const noToken = await fetch(`${rig.url}/console/sign-in`, { method: "POST", redirect: "manual", headers: FORM, body: new URLSearchParams({ apiKey: rig.keys.alice }) });
    expect(noToken.status).toBe(403);
    expect(noToken.headers.getSetCookie().some((c) => c.startsWith("writ_console="))).toBe(false);
    const form = await fetch(`${rig.url}/console/sign-in`);
    const pre = form.headers.getSetCookie()[0]!.split(";")[0]!;
    const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
    const wrong = await fetch(`${rig.url}/console/sign-in`, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: pre }, body: new URLSearchParams({ _csrf: token, apiKey: rig.keys.alice.slice(0, -3) + "xyz" }) });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("not valid");
    expect(wrong.headers.getSetCookie().some((c) => c.startsWith("writ_console="))).toBe(false);
  });

  it("sends a signed-out visitor to sign-in (pages) or answers 401 (live stream, forms)", async () => {
    const page = await fetch(`${rig.url}/console/approvals?status=all`, { redirect: "manual" });
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe("/console/sign-in?next=%2Fconsole%2Fapprovals%3Fstatus%3Dall");
    expect((await fetch(`${rig.url}/console/events`)).status).toBe(401);
    const post = await fetch(`${rig.url}/console/spaces/prod/approvals/apr_x/vote`, { method: "POST", headers: FORM, body: "verdict=approve" });
    expect(post.status).toBe(401);
  });

  it("ends the session at sign-out and when the key is revoked", async () => {
    const a = await signIn(rig.keys.sam);
    const out = await fetch(`${rig.url}/console/sign-out`, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: a.cookie }, body: new URLSearchParams({ _csrf: a.csrf }) });
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie()[0]).toMatch(/^writ_console=; .*Max-Age=0/);
    expect((await fetch(`${rig.url}/console/invocations`, { headers: { cookie: a.cookie }, redirect: "manual" })).status).toBe(303);

    const { createApiKey } = await import("../../src/runtime/api-keys.js");
    const { crypto, random, clock } = rig.runtime.host.context.o;
    const temp = await createApiKey(rig.runtime.store, crypto, random, { tenantId: "acme", roles: ["operate"], name: "temp", spaces: ["prod"] }, clock.now());
    const b = await signIn(temp.key);
    expect((await fetch(`${rig.url}/console/invocations`, { headers: { cookie: b.cookie }, redirect: "manual" })).status).toBe(200);
    await revokeApiKey(rig.runtime.store, temp.record.keyId, "acme", clock.now());
    expect((await fetch(`${rig.url}/console/invocations`, { headers: { cookie: b.cookie }, redirect: "manual" })).status).toBe(303);
  });

  it("ends a session after its idle lifetime", async () => {
    const { startServer } = await import("../../src/server/index.js");
    const server = await startServer(rig.runtime, { port: 0, console: { spaces: ["prod"], idleTtlMs: 1000 } });
    try {
      const s = await signIn(rig.keys.olga, server.url);
      expect((await fetch(`${server.url}/console/reconciliations`, { headers: { cookie: s.cookie }, redirect: "manual" })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1200));
      expect((await fetch(`${server.url}/console/reconciliations`, { headers: { cookie: s.cookie }, redirect: "manual" })).status).toBe(303);
    } finally {
      await server.close();
    }
  });
});

describe("console state changes", () => {
  it("refuses a vote without the CSRF token, with a wrong one, and from another origin; then accepts the real one", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "p1", amount: 9000, currency: "EUR" } });
    const ap = await pendingFor(invocationId);
    const s = await signIn(rig.keys.bob);
    const url = `${rig.url}/console/spaces/prod/approvals/${ap.approvalId}/vote`;
    const tries: Array<[string, Record<string, string>, URLSearchParams]> = [
      ["no token", { ...FORM, cookie: s.cookie }, new URLSearchParams({ verdict: "approve" })],
      ["wrong token", { ...FORM, cookie: s.cookie }, new URLSearchParams({ verdict: "approve", _csrf: s.csrf.slice(0, -2) + "AA" })],
      ["cross-site origin", { ...FORM, cookie: s.cookie, origin: "https://evil.example" }, new URLSearchParams({ verdict: "approve", _csrf: s.csrf })],
      ["cross-site fetch", { ...FORM, cookie: s.cookie, "sec-fetch-site": "cross-site" }, new URLSearchParams({ verdict: "approve", _csrf: s.csrf })],
      ["null origin", { ...FORM, cookie: s.cookie, origin: "null" }, new URLSearchParams({ verdict: "approve", _csrf: s.csrf })],
    ];
    for (const [what, headers, body] of tries) {
      const r = await fetch(url, { method: "POST", redirect: "manual", headers, body });
      expect(r.status, what).toBe(403);
      expect((await rig.runtime.host.approvals.get(SCOPE, ap.approvalId))?.status, what).toBe("pending");
    }
    const ok = await fetch(url, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: s.cookie, origin: rig.url }, body: new URLSearchParams({ verdict: "approve", _csrf: s.csrf, note: "fine" }) });
    expect(ok.status).toBe(303);
    expect(ok.headers.get("location")).toBe("/console/approvals");
    const after = await rig.runtime.host.approvals.get(SCOPE, ap.approvalId);
    expect(after?.status).toBe("approved");
    expect(after?.votes).toEqual([expect.objectContaining({ approver: { type: "user", id: "bob" }, verdict: "approve", note: "fine" })]);
  });

  it("a CSRF token belongs to its session: another person's token is refused", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "p2", amount: 9100, currency: "EUR" } });
    const ap = await pendingFor(invocationId);
    const bob = await signIn(rig.keys.bob);
    const alice = await signIn(rig.keys.alice);
    const r = await fetch(`${rig.url}/console/spaces/prod/approvals/${ap.approvalId}/vote`, { method: "POST", headers: { ...FORM, cookie: bob.cookie }, body: new URLSearchParams({ verdict: "deny", _csrf: alice.csrf }) });
    expect(r.status).toBe(403);
    expect((await rig.runtime.host.approvals.get(SCOPE, ap.approvalId))?.status).toBe("pending");
  });

  it("refuses a form that is too large (413), not a form (415), or a role the key lacks (403); nothing changes", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "p3", amount: 9200, currency: "EUR" } });
    const ap = await pendingFor(invocationId);
    const olga = await signIn(rig.keys.olga); // operate only: may not vote
    const url = `${rig.url}/console/spaces/prod/approvals/${ap.approvalId}/vote`;
    const big = await fetch(url, { method: "POST", headers: { ...FORM, cookie: olga.cookie }, body: `_csrf=${olga.csrf}&note=${"x".repeat(20_000)}` });
    expect(big.status).toBe(413);
    const json = await fetch(url, { method: "POST", headers: { "content-type": "application/json", cookie: olga.cookie }, body: JSON.stringify({ _csrf: olga.csrf }) });
    expect(json.status).toBe(415);
    const role = await fetch(url, { method: "POST", headers: { ...FORM, cookie: olga.cookie }, body: new URLSearchParams({ _csrf: olga.csrf, verdict: "approve" }) });
    expect(role.status).toBe(403);
    expect(await role.text()).toContain("role");
    const other = await fetch(`${rig.url}/console/spaces/staging/approvals/${ap.approvalId}/vote`, { method: "POST", headers: { ...FORM, cookie: olga.cookie }, body: new URLSearchParams({ _csrf: olga.csrf, verdict: "approve" }) });
    expect(other.status).toBe(403);
    expect((await rig.runtime.host.approvals.get(SCOPE, ap.approvalId))?.status).toBe("pending");
  });

  it("resolving needs a note and an outcome; a bad one is refused with a message and changes nothing", async () => {
    const { invocationId } = await rig.submit({ action: "messages.send", params: { to: "lost@example.com", body: "hi" } });
    const rec = await until("reconciliation", async () => (await rig.runtime.host.reconcile.list(SCOPE, { status: "open" })).find((r) => r.invocationId === invocationId));
    const s = await signIn(rig.keys.olga);
    const url = `${rig.url}/console/spaces/prod/reconciliations/${rec.reconciliationId}/resolve`;
    const noNote = await fetch(url, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: s.cookie }, body: new URLSearchParams({ _csrf: s.csrf, outcome: "succeeded" }) });
    expect(noNote.status).toBe(303);
    const shown = await fetch(`${rig.url}/console/reconciliations`, { headers: { cookie: s.cookie } });
    expect(await shown.text()).toContain("A note is required");
    expect((await rig.runtime.host.reconcile.list(SCOPE, { status: "open" })).some((r) => r.reconciliationId === rec.reconciliationId)).toBe(true);
    const ok = await fetch(url, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: s.cookie }, body: new URLSearchParams({ _csrf: s.csrf, outcome: "failed", note: "provider has no record" }) });
    expect(ok.status).toBe(303);
    expect((await rig.runtime.host.get(SCOPE, invocationId))?.status).toBe("failed");
    const again = await fetch(url, { method: "POST", redirect: "manual", headers: { ...FORM, cookie: s.cookie }, body: new URLSearchParams({ _csrf: s.csrf, outcome: "succeeded", note: "second try" }) });
    expect(again.status).toBe(303);
    expect(await (await fetch(`${rig.url}/console/reconciliations`, { headers: { cookie: s.cookie } })).text()).toContain("already resolved");
  });
});

describe("console pages", () => {
  it("escapes every outside value and sends a strict CSP and the other security headers", async () => {
    const payload = `<script>alert(1)</script>"><img src=x onerror=alert(2)>'`;
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: payload, amount: 9300, currency: "EUR", memo: payload }, idempotencyKey: `x<b>${Date.now()}` });
    await pendingFor(invocationId);
    const s = await signIn(rig.keys.alice);
    for (const path of ["/console/approvals", `/console/spaces/prod/invocations/${invocationId}`, "/console/invocations", `/console/invocations?q=${encodeURIComponent(payload)}&actor=${encodeURIComponent(payload)}`]) {
      const r = await fetch(`${rig.url}${path}`, { headers: { cookie: s.cookie } });
      const html = await r.text();
      expect(r.status, path).toBe(200);
      expect(html, path).not.toContain("<script>alert");
      expect(html, path).not.toContain("<img src=x");
      expect(html, path).not.toMatch(/<script(?![^>]*src="\/console\/static\/console\.js")/);
      expect(html, path).not.toMatch(/ style=|<style/);
      expect(r.headers.get("content-security-policy")).toBe(CONTENT_SECURITY_POLICY);
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain("unsafe-inline");
  });

  it("answers an unknown console path with a 404 page and unknown ids without leaking other scopes", async () => {
    const s = await signIn(rig.keys.alice);
    const r = await fetch(`${rig.url}/console/nope`, { headers: { cookie: s.cookie } });
    expect(r.status).toBe(404);
    expect(r.headers.get("content-type")).toContain("text/html");
    const inv = await fetch(`${rig.url}/console/spaces/prod/invocations/inv_missing`, { headers: { cookie: s.cookie } });
    expect(inv.status).toBe(404);
    const bob = await signIn(rig.keys.bob);
    const health = await fetch(`${rig.url}/console/health`, { headers: { cookie: bob.cookie } });
    expect(health.status).toBe(403);
  });

  it("streams a change event with the pending counts, and another when something happens", async () => {
    const s = await signIn(rig.keys.alice);
    const ac = new AbortController();
    const res = await fetch(`${rig.url}/console/events`, { headers: { cookie: s.cookie }, signal: ac.signal });
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = res.body!.getReader();
    const dec = new TextDecoder();
    let buf = "";
    const nextEvent = async (): Promise<{ pending: number; approvals: number }> => {
      for (;;) {
        const m = /event: change\ndata: (.*)\n\n/.exec(buf);
        if (m) {
          buf = buf.slice(m.index + m[0].length);
          return JSON.parse(m[1]!) as { pending: number; approvals: number };
        }
        const { value, done } = await reader.read();
        if (done) throw new Error("stream ended");
        buf += dec.decode(value);
      }
    };
    const first = await nextEvent();
    const pendingNow = (await rig.runtime.host.approvals.list(SCOPE, { status: "pending" })).length;
    expect(first.approvals).toBe(pendingNow);
    await rig.submit({ action: "payments.refund", params: { paymentId: "live", amount: 9400, currency: "EUR" } });
    let ev = await nextEvent();
    while (ev.approvals === first.approvals) ev = await nextEvent();
    expect(ev.approvals).toBe(first.approvals + 1);
    ac.abort();
  });

  // Invariant: a search by the idempotency key an MCP agent sent finds its call, which the
  // gateway stores under `mcp:<key>` (docs/mcp.md); the stored form finds it too, once.
  it("finds an MCP agent's call by the key the agent sent", async () => {
    const { invocationId } = await rig.submit({ action: "payments.refund", params: { paymentId: "pay_mcp", amount: 1200, currency: "EUR" }, idempotencyKey: "mcp:agent-key-42" });
    const { cookie } = await signIn(rig.keys.alice);
    for (const q of ["agent-key-42", "mcp:agent-key-42"]) {
      const page = await (await fetch(`${rig.url}/console/invocations?q=${encodeURIComponent(q)}`, { headers: { cookie } })).text();
      expect(page.split(`/invocations/${invocationId}"`).length - 1, q).toBe(1);
    }
  });

  it("redirects only to console paths", () => {
    for (const bad of ["//evil.example/x", "https://evil.example", "/console/../v1/x", "/consoleX", "javascript:alert(1)", "/console//evil"]) expect(_safeBack(bad, "/console")).toBe("/console");
    expect(_safeBack("/console/approvals?status=all", "/console")).toBe("/console/approvals?status=all");
  });

  it("checks its options by name", () => {
    expect(() => resolveConsoleOptions({ spaces: [] })).toThrow(/spaces/);
    expect(() => resolveConsoleOptions({ sessionTtlMs: -1 })).toThrow(/sessionTtlMs/);
    expect(() => resolveConsoleOptions({ trustProxy: "yes" as unknown as boolean })).toThrow(/trustProxy/);
    expect(resolveConsoleOptions({}).sessionTtlMs).toBe(8 * 3600_000);
  });
});
