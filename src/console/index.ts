/**
 * The operator console (docs/console.md): server-rendered pages at /console on the same origin as
 * the API, signed in with an API key exchanged for a session cookie. Approval inbox,
 * reconciliation queue, invocations with their journal timeline, health; live updates over
 * server-sent events.
 *
 * Security: the session cookie is HttpOnly, SameSite=Strict, Secure behind TLS, with an absolute
 * and an idle lifetime; every POST carries the session's CSRF token (and a cross-site Origin is
 * refused); the Content-Security-Policy allows only this origin's script and stylesheet (no inline
 * script, no inline style); every value is escaped by the HTML template.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { base64url } from "../core/encoding.js";
import { WritError, errorMessage } from "../core/errors.js";
import type { ApiRole } from "../core/types.js";
import { verifyApiKey } from "../runtime/api-keys.js";
import { approver } from "../server/routes/approvals.js";
import type { ServerContext } from "../server/context.js";
import { ApiError, STATUS_OF, type ApiErrorCode } from "../server/errors.js";
import type { AppEnv } from "../server/registry.js";
import { readBody, decodeUtf8 } from "../server/body.js";
import { CONSOLE_CSS, CONSOLE_ICON, CONSOLE_JS } from "./assets.js";
import { consoleData, type ConsoleData } from "./data.js";
import { h, page, type H, type Nav } from "./html.js";
import { liveSig, liveStream, type LiveStreams, createLiveStreams } from "./live.js";
import { resolveConsoleOptions, type ConsoleOptions, type ResolvedConsoleOptions } from "./options.js";
import { approvalsBody } from "./pages/approvals.js";
import { healthBody } from "./pages/health.js";
import { invocationDetail, invocationsBody, pickSpace } from "./pages/invocations.js";
import { reconciliationsBody } from "./pages/reconciliations.js";
import { notificationsBody } from "./pages/notifications.js";
import { createSessions, sameToken, type Sessions } from "./session.js";
import { navOf, viewerOf, type Viewer } from "./viewer.js";

export { resolveConsoleOptions, type ConsoleOptions, type ResolvedConsoleOptions } from "./options.js";

export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const FORM_LIMIT = 16 * 1024;
const COOKIE = "writ_console";
const SECURE_COOKIE = "__Host-writ_console";
const PRE_COOKIE = "writ_console_signin";

export interface Console {
  app: Hono<AppEnv>;
  sessions: Sessions;
  /** Ends every live stream (server shutdown). */
  close(): void;
}

type C = Context<AppEnv>;

function param(c: C, name: string): string {
  return c.req.param(name) ?? "";
}

function cookies(c: C): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (c.req.header("cookie") ?? "").split(";")) {
    const i = part.indexOf("=");
    if (i > 0) out.set(part.slice(0, i).trim(), part.slice(i + 1).trim());
  }
  return out;
}

/** Redirect targets are console paths only (never another origin). */
function safeBack(v: string | null | undefined, dflt: string): string {
  if (typeof v !== "string" || !/^\/console(\/[A-Za-z0-9_\-./%]*)?(\?[A-Za-z0-9_\-.%=&:+]*)?(#[A-Za-z0-9_-]*)?$/.test(v) || v.includes("//") || v.includes("..")) return dflt;
  return v;
}

export function createConsole(s: ServerContext, options: ConsoleOptions = {}): Console {
  const o: ResolvedConsoleOptions = resolveConsoleOptions(options);
  const { clock, crypto, random, runtime, log } = s;
  const sessions = createSessions(o, clock, random, crypto);
  const data: ConsoleData = consoleData(runtime);
  const streams: LiveStreams = createLiveStreams();
  const actionIds = runtime.config.actions.map((a) => a.id);
  const app = new Hono<AppEnv>();

  const secure = (c: C): boolean => new URL(c.req.url).protocol === "https:" || (o.trustProxy && (c.req.header("x-forwarded-proto") ?? "").split(",")[0]!.trim() === "https");
  const sessionCookie = (c: C, value: string, maxAgeS: number): string =>
    secure(c) ? `${SECURE_COOKIE}=${value}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAgeS}` : `${COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}`;
  const sessionIdOf = (c: C): string | undefined => {
    const jar = cookies(c);
    return jar.get(SECURE_COOKIE) ?? jar.get(COOKIE);
  };

  const send = (c: C, status: number, body: H, extra: Record<string, string> = {}): Response =>
    c.html(body.toString(), status as 200, { "cache-control": "no-store", ...extra });

  const errorPage = (c: C, status: number, title: string, text: string, v?: Viewer, nav?: Nav): Response =>
    send(c, status, page({ title, ...(nav ? { nav } : {}), ...(v ? { who: v.who } : {}), body: h`<h1>${title}</h1><p>${text}</p><p><a href="/console">Back to the console</a></p>` }));

  /** The signed-in viewer, or null (no cookie, unknown or ended session, revoked key). */
  async function viewer(c: C): Promise<Viewer | null> {
    const id = sessionIdOf(c);
    const session = sessions.get(id);
    if (!session || id === undefined) return null;
    const key = await data.apiKey(session.keyId);
    if (!key || key.revokedAt !== undefined) {
      sessions.endKey(session.keyId);
      return null;
    }
    return viewerOf(id, session, key, o);
  }

  /** Live signatures of page requests, sampled before the page reads its data. */
  const sigs = new WeakMap<Viewer, string>();

  async function render(c: C, v: Viewer, active: Nav["active"], title: string, body: H, live?: string, status = 200): Promise<Response> {
    const nav = await navOf(v, data, active);
    const flash = v.session.flash;
    delete v.session.flash;
    const sig = live ? sigs.get(v) : undefined;
    return send(c, status, page({ title, nav, who: v.who, flash, body, ...(live ? { live } : {}), ...(sig !== undefined ? { liveSig: sig } : {}) }));
  }

  /** Reads a form body (urlencoded, at most 16 KiB). */
  async function formOf(c: C): Promise<URLSearchParams> {
    const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") throw new ApiError("UNSUPPORTED_MEDIA_TYPE", "the console accepts forms sent as application/x-www-form-urlencoded");
    return new URLSearchParams(decodeUtf8(await readBody(c.req.raw, FORM_LIMIT)));
  }

  /** A state change must come from this origin and carry the expected CSRF token. */
  function crossSite(c: C): boolean {
    const site = c.req.header("sec-fetch-site");
    if (site !== undefined && site !== "same-origin" && site !== "none") return true;
    const origin = c.req.header("origin");
    if (origin !== undefined && origin !== "null" && origin !== new URL(c.req.url).origin) return true;
    return origin === "null";
  }

  const csrfRefused = (c: C): Response =>
    errorPage(c, 403, "Form refused", "This form did not carry this console's security token (or came from another site). Nothing was changed. Reload the page and try again.");

  /** Routes needing a session: pages redirect to sign-in, the rest answer 401. */
  function signedIn(route: string, fn: (c: C, v: Viewer, form: URLSearchParams) => Promise<Response>, kind: "page" | "post" = "page") {
    return async (c: C): Promise<Response> => {
      c.set("route", route);
      const v = await viewer(c);
      if (!v) {
        if (kind === "post") return errorPage(c, 401, "Signed out", "Your session has ended. Sign in again; nothing was changed.");
        const next = safeBack(new URL(c.req.url).pathname + new URL(c.req.url).search, "/console");
        return c.redirect(`/console/sign-in${next !== "/console" ? `?next=${encodeURIComponent(next)}` : ""}`, 303);
      }
      let form = new URLSearchParams();
      if (kind === "post") {
        if (crossSite(c)) return csrfRefused(c);
        try {
          form = await formOf(c);
        } catch (e) {
          return failed(c, e, v);
        }
        const token = form.get("_csrf");
        if (token === null || !sameToken(crypto, token, v.session.csrf)) return csrfRefused(c);
      } else {
        // Sampled first: a change that lands while the page reads its data moves the stream's
        // signature past this one, so the stream's first event refreshes the page.
        try {
          sigs.set(v, await liveSig(data, v));
        } catch {
          /* the page renders without one; the stream's first event then only sets its baseline */
        }
      }
      try {
        return await fn(c, v, form);
      } catch (e) {
        return failed(c, e, v);
      }
    };
  }

  function failed(c: C, e: unknown, v?: Viewer): Response {
    const code: ApiErrorCode = e instanceof WritError || e instanceof ApiError ? e.code : "INTERNAL";
    const status = STATUS_OF[code] ?? 500;
    if (status >= 500) {
      log.error({ requestId: c.get("requestId"), route: c.get("route") ?? "console", err: errorMessage(e), stack: e instanceof Error ? e.stack : undefined }, "console request failed");
      return errorPage(c, status, "Something went wrong", `The server could not finish this (request ${c.get("requestId")}). Nothing you see here is lost; try again.`, v);
    }
    return errorPage(c, status, "Refused", `${errorMessage(e)} (${code})`, v);
  }

  /** After a state change: back to where the form was, with a one-shot message. */
  const done = (c: C, v: Viewer, kind: "ok" | "error", text: string, back: string): Response => {
    v.session.flash = { kind, text };
    return c.redirect(back, 303);
  };

  // Security headers on every console answer.
  app.use("*", async (c, next) => {
    await next();
    const hd = c.res.headers;
    hd.set("content-security-policy", CONTENT_SECURITY_POLICY);
    hd.set("x-content-type-options", "nosniff");
    hd.set("x-frame-options", "DENY");
    // same-origin, not no-referrer: with no-referrer a browser sends `Origin: null` on form posts.
    hd.set("referrer-policy", "same-origin");
    hd.set("cross-origin-opener-policy", "same-origin");
    hd.set("cross-origin-resource-policy", "same-origin");
    hd.set("permissions-policy", "camera=(), microphone=(), geolocation=(), payment=()");
    if (secure(c)) hd.set("strict-transport-security", "max-age=31536000");
  });

  app.get("/static/console.js", (c) => {
    c.set("route", "/console/static/console.js");
    return c.body(CONSOLE_JS, 200, { "content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache" });
  });
  app.get("/static/console.css", (c) => {
    c.set("route", "/console/static/console.css");
    return c.body(CONSOLE_CSS, 200, { "content-type": "text/css; charset=utf-8", "cache-control": "no-cache" });
  });

  app.get("/static/icon.svg", (c) => {
    c.set("route", "/console/static/icon.svg");
    return c.body(CONSOLE_ICON, 200, { "content-type": "image/svg+xml", "cache-control": "max-age=86400" });
  });

  // sign-in / sign-out ----------------------------------------------------------------------------

  const signInPage = (c: C, status: number, error?: string): Response => {
    const pre = base64url(random.bytes(24));
    const next = safeBack(c.req.query("next"), "/console");
    const body = h`<h1>Sign in to the Writ console</h1>
<p class="lead">Paste a Writ API key (<span class="mono">writ_&lt;id&gt;_&lt;secret&gt;</span>). It is checked once and exchanged for a session cookie; the key itself is not kept by your browser.</p>
${error ? h`<p class="flash error" role="alert" id="signin-error">${error}</p>` : h``}
<form method="post" action="/console/sign-in" class="signin">
  <input type="hidden" name="_csrf" value="${pre}">
  <input type="hidden" name="next" value="${next}">
  <label for="api-key">API key</label>
  <input id="api-key" name="apiKey" type="password" autocomplete="off" spellcheck="false" required maxlength="300"${error ? h` aria-invalid="true" aria-describedby="signin-error"` : h``} autofocus>
  <div class="buttons"><button type="submit" class="primary">Sign in</button></div>
</form>`;
    return send(c, status, page({ title: "Sign in", body }), { "set-cookie": `${PRE_COOKIE}=${pre}; Path=/console/sign-in; HttpOnly; SameSite=Strict; Max-Age=1800${secure(c) ? "; Secure" : ""}` });
  };

  app.get("/sign-in", async (c) => {
    c.set("route", "/console/sign-in");
    if (await viewer(c)) return c.redirect("/console", 303);
    return signInPage(c, 200);
  });

  app.post("/sign-in", async (c) => {
    c.set("route", "/console/sign-in");
    if (crossSite(c)) return csrfRefused(c);
    let form: URLSearchParams;
    try {
      form = await formOf(c);
    } catch (e) {
      return failed(c, e);
    }
    const pre = cookies(c).get(PRE_COOKIE);
    const token = form.get("_csrf");
    if (pre === undefined || token === null || !sameToken(crypto, token, pre)) return csrfRefused(c);
    const text = (form.get("apiKey") ?? "").trim();
    const key = text.length > 0 && text.length <= 300 ? await verifyApiKey(runtime.store, crypto, text) : null;
    if (!key) return signInPage(c, 401, "That API key is not valid (unknown, revoked or mistyped).");
    const { id } = sessions.create(key.keyId);
    const next = safeBack(form.get("next"), "/console");
    c.header("set-cookie", sessionCookie(c, id, Math.floor(o.sessionTtlMs / 1000)), { append: true });
    c.header("set-cookie", `${PRE_COOKIE}=; Path=/console/sign-in; HttpOnly; SameSite=Strict; Max-Age=0`, { append: true });
    return c.redirect(next, 303);
  });

  app.post(
    "/sign-out",
    signedIn(
      "/console/sign-out",
      async (c, v) => {
        sessions.end(v.sessionId);
        streams.endSession(v.sessionId);
        c.header("set-cookie", sessionCookie(c, "", 0));
        return c.redirect("/console/sign-in", 303);
      },
      "post",
    ),
  );

  // pages ---------------------------------------------------------------------------------------

  const needTenantAdmin = (v: Viewer): void => {
    if (!v.key.spaces.includes("*") || !v.allows("*", "admin")) throw new ApiError("FORBIDDEN", "The notifications page needs an admin API key for every space (*)");
  };
  const need = (v: Viewer, role: ApiRole, what: string): void => {
    if (v.spacesWith(role).length === 0) throw new ApiError("FORBIDDEN", `${what} needs an API key with the ${role} role in one of your spaces`);
  };

  app.get(
    "/",
    signedIn("/console", async (c, v) => c.redirect(v.spacesWith("approve").length > 0 ? "/console/approvals" : v.spacesWith("operate").length > 0 ? "/console/reconciliations" : "/console/invocations", 303)),
  );

  app.get(
    "/approvals",
    signedIn("/console/approvals", async (c, v) => {
      need(v, "approve", "The approval inbox");
      const { body } = await approvalsBody(data, v, { status: c.req.query("status") }, clock.now());
      return render(c, v, "approvals", "Approvals", body, "inbox");
    }),
  );

  app.post(
    "/spaces/:space/approvals/:id/vote",
    signedIn(
      "/console/spaces/:space/approvals/:id/vote",
      async (c, v, form) => {
        const back = safeBack(form.get("back"), "/console/approvals");
        const verdict = form.get("verdict");
        if (verdict !== "approve" && verdict !== "deny") return done(c, v, "error", "Choose Approve or Deny.", back);
        const note = (form.get("note") ?? "").trim();
        if (note.length > 2000) return done(c, v, "error", "The note is longer than 2000 characters.", back);
        const caller = v.caller(param(c, "space"), ["approve"]);
        try {
          const by = approver(caller, note.length > 0 ? note : undefined);
          const ap = await runtime.host.approvals[verdict](caller.scope, param(c, "id"), by);
          const text = verdict === "deny" ? `Denied: the invocation ends denied.` : ap.status === "approved" ? `Approved: quorum reached, the invocation is queued to run.` : `Your approval is recorded (${ap.votes.filter((x) => x.verdict === "approve").length} of ${ap.quorum}).`;
          return done(c, v, "ok", text, back);
        } catch (e) {
          if (e instanceof WritError && STATUS_OF[e.code] < 500) return done(c, v, "error", `Refused: ${e.message}`, back);
          throw e;
        }
      },
      "post",
    ),
  );

  app.get(
    "/reconciliations",
    signedIn("/console/reconciliations", async (c, v) => {
      need(v, "operate", "The reconciliation queue");
      const { body } = await reconciliationsBody(data, v, { status: c.req.query("status") }, clock.now());
      return render(c, v, "reconciliations", "Reconciliations", body, "queue");
    }),
  );

  app.post(
    "/spaces/:space/reconciliations/:id/resolve",
    signedIn(
      "/console/spaces/:space/reconciliations/:id/resolve",
      async (c, v, form) => {
        const back = safeBack(form.get("back"), "/console/reconciliations");
        const outcome = form.get("outcome");
        const note = (form.get("note") ?? "").trim();
        const ref = (form.get("externalRef") ?? "").trim();
        if (outcome !== "succeeded" && outcome !== "failed") return done(c, v, "error", "Choose whether it succeeded or failed.", back);
        if (note.length === 0) return done(c, v, "error", "A note is required: say how you know.", back);
        const caller = v.caller(param(c, "space"), ["operate"]);
        try {
          const inv = await runtime.host.reconcile.resolve(caller.scope, param(c, "id"), { outcome, note, by: caller.actor, ...(ref.length > 0 ? { externalRef: ref } : {}) });
          return done(c, v, "ok", `Resolved as ${outcome}: the invocation is now ${inv.status.replace(/_/g, " ")}.`, back);
        } catch (e) {
          if (e instanceof WritError && STATUS_OF[e.code] < 500) return done(c, v, "error", `Refused: ${e.message}`, back);
          throw e;
        }
      },
      "post",
    ),
  );

  app.get(
    "/invocations",
    signedIn("/console/invocations", async (c, v) => {
      const qy = c.req.query();
      const body = await invocationsBody(data, v, qy, actionIds);
      return render(c, v, "invocations", "Invocations", body);
    }),
  );

  app.get(
    "/spaces/:space/invocations/:id",
    signedIn("/console/spaces/:space/invocations/:id", async (c, v) => {
      const space = pickSpace(v, param(c, "space"));
      const id = param(c, "id");
      const found = space && id.length <= 200 ? await invocationDetail(data, v, space, id) : null;
      if (!found) return errorPage(c, 404, "Not found", `No invocation ${id} in this space.`, v, await navOf(v, data, "invocations"));
      return render(c, v, "invocations", found.title, found.body, `invocation:${space}`);
    }),
  );

  app.get(
    "/health",
    signedIn("/console/health", async (c, v) => {
      need(v, "operate", "The health page");
      const body = await healthBody(data, v, { verify: c.req.query("verify") }, clock.now());
      return render(c, v, "health", "Health", body);
    }),
  );

  app.get(
    "/notifications",
    signedIn("/console/notifications", async (c, v) => {
      needTenantAdmin(v);
      const body = await notificationsBody(runtime.host.notifications, v, { status: c.req.query("status") }, clock.now());
      return render(c, v, "notifications", "Notifications", body);
    }),
  );

  app.post(
    "/notifications/deliveries/:id/redeliver",
    signedIn(
      "/console/notifications/deliveries/:id/redeliver",
      async (c, v, form) => {
        const back = safeBack(form.get("back"), "/console/notifications");
        needTenantAdmin(v);
        try {
          const d = await runtime.host.notifications.redeliver(v.key.tenantId, param(c, "id"));
          return done(c, v, "ok", `Delivery ${d.deliveryId} (${d.eventType}) is pending again: it is sent in its turn.`, back);
        } catch (e) {
          if (e instanceof WritError && STATUS_OF[e.code] < 500) return done(c, v, "error", `Refused: ${e.message}`, back);
          throw e;
        }
      },
      "post",
    ),
  );

  app.get(
    "/events",
    async (c) => {
      c.set("route", "/console/events");
      const v = await viewer(c);
      if (!v) return c.text("signed out", 401, { "cache-control": "no-store" });
      return liveStream(c, v, data, streams, o, clock, () => viewer(c));
    },
  );

  app.all("*", async (c) => {
    c.set("route", "/console/*");
    if (c.req.method !== "GET" && c.req.method !== "HEAD" && c.req.method !== "POST") return errorPage(c, 405, "Not allowed", `${c.req.method} is not used by the console.`);
    return errorPage(c, 404, "Not found", "There is no such console page.");
  });

  return { app, sessions, close: () => streams.closeAll() };
}

export { safeBack as _safeBack };
