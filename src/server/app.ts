/**
 * The HTTP API (docs/http-api.md) as a Hono app. Web standards only (Request/Response): `startServer`
 * serves it on Node; any Hono adapter can serve it elsewhere.
 *
 * @example
 * const runtime = await openRuntime(config);
 * const app = createApp(runtime);              // app.fetch(request) -> Response
 * const server = await startServer(runtime, { port: 8787 });
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { base64url } from "../core/encoding.js";
import { WritError, errorMessage } from "../core/errors.js";
import { silentLogger, type Logger } from "../host/options.js";
import { createMcpHttp, type McpHttp, type McpHttpOptions } from "../mcp/http.js";
import { configDemoSpace } from "../runtime/default-space.js";
import type { Runtime } from "../runtime/runtime.js";
import { authenticate } from "./auth.js";
import type { ServerContext } from "./context.js";
import { ApiError, errorReply } from "./errors.js";
import { metricsFor } from "./metrics.js";
import { hasRequestId, jsonResponse, mountRoutes, openApiDocument, type AppEnv, type Route } from "./registry.js";
import { actionRoutes } from "./routes/actions.js";
import { approvalRoutes } from "./routes/approvals.js";
import { boundaryRoutes } from "./routes/boundary.js";
import { completionRoutes } from "./routes/completions.js";
import { decisionRoutes } from "./routes/decisions.js";
import { invocationRoutes } from "./routes/invocations.js";
import { journalRoutes } from "./routes/journal.js";
import { notificationRoutes } from "./routes/notifications.js";
import { reconciliationRoutes } from "./routes/reconciliations.js";
import { breakerRoutes } from "./routes/breakers.js";
import { systemRoutes } from "./routes/system.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";
import { createConsole, type ConsoleOptions } from "../console/index.js";
import { resolveServerConfig, type ResolvedServerConfig, type ServerConfig } from "../config/server-options.js";

export interface CreateAppOptions {
  /** Largest request body accepted (413 beyond). @defaultValue config.server.bodyLimitBytes, else 1048576 (1 MiB) */
  bodyLimitBytes?: number;
  /** Deepest JSON nesting accepted in a body (400 beyond). @defaultValue config.server.maxJsonDepth, else 32 */
  maxJsonDepth?: number;
  /** Structured logger (pino-compatible): one line per request, faults with their detail. @defaultValue silent */
  logger?: Logger;
  /** Check every JSON answer against its declared response schema; a mismatch is a 500 (tests). @defaultValue false */
  checkResponses?: boolean;
  /** How long /healthz waits for the store. @defaultValue config.server.healthTimeoutMs, else 2000 */
  healthTimeoutMs?: number;
  /** Per-key rate limit (429 RATE_LIMITED with Retry-After beyond). @defaultValue config.server.rateLimit, else { perSecond: 200, burst: 1000 } */
  rateLimit?: Partial<RateLimit>;
  /**
   * How long a verified API key is answered from memory without reading the store (0: never).
   * A key revoked through this process is refused at once; one revoked by another process (the
   * CLI, another server) within this bound, or at once on PostgreSQL (docs/security.md).
   * @defaultValue config.server.apiKeyCacheMs, else 1000
   */
  apiKeyCacheMs?: number;
  /** The operator console at /console (docs/console.md). @defaultValue config.console, else on with its defaults */
  console?: ConsoleOptions;
  /** The MCP endpoint at `/mcp` (docs/mcp.md); `false` turns it off. @defaultValue on, with the config's `mcp` options */
  mcp?: McpHttpOptions | false;
}

export interface ResolvedAppOptions {
  bodyLimitBytes: number;
  maxJsonDepth: number;
  logger: Logger;
  checkResponses: boolean;
  healthTimeoutMs: number;
  rateLimit: RateLimit;
  apiKeyCacheMs: number;
}

/** Options `createApp` takes beside the config's `server` section (their defaults are here). */
const DEFAULTS = { checkResponses: false } as const;

/**
 * Defaults in one place, each option checked with an error that names it. The server options
 * come from `config.server` (src/config/server-options.ts, which holds their defaults); an option
 * passed here wins.
 */
export function resolveAppOptions(runtime: Runtime, o: CreateAppOptions = {}): ResolvedAppOptions {
  if (typeof o !== "object" || o === null) throw new WritError("INVALID_OPTION", "createApp: options must be an object");
  if (o.logger !== undefined && (typeof o.logger !== "object" || typeof o.logger?.error !== "function")) throw new WritError("INVALID_OPTION", "createApp: logger must be a pino-compatible logger");
  if (o.checkResponses !== undefined && typeof o.checkResponses !== "boolean") throw new WritError("INVALID_OPTION", "createApp: checkResponses must be a boolean");
  const server = serverOptionsOf(runtime, o, "createApp: ");
  return {
    bodyLimitBytes: server.bodyLimitBytes,
    maxJsonDepth: server.maxJsonDepth,
    logger: o.logger ?? silentLogger,
    checkResponses: o.checkResponses ?? DEFAULTS.checkResponses,
    healthTimeoutMs: server.healthTimeoutMs,
    rateLimit: server.rateLimit,
    apiKeyCacheMs: server.apiKeyCacheMs,
  };
}

/** The config's `server` options with the ones passed in code over them, checked. */
export function serverOptionsOf(runtime: Runtime, o: ServerConfig, where: string): ResolvedServerConfig {
  const config = runtime.config.server ?? {};
  const given = Object.fromEntries(SERVER_KEYS.flatMap((k) => (o[k] !== undefined ? [[k, o[k]]] : [])));
  // A rate limit in code completes the config's: { perSecond } given keeps the config's burst.
  const rateLimit = o.rateLimit !== undefined || config.rateLimit !== undefined ? { ...config.rateLimit, ...o.rateLimit } : undefined;
  return resolveServerConfig({ ...config, ...given, ...(rateLimit ? { rateLimit } : {}) }, where);
}

const SERVER_KEYS = ["port", "host", "bodyLimitBytes", "maxJsonDepth", "apiKeyCacheMs", "healthTimeoutMs", "headersTimeoutMs", "requestTimeoutMs"] as const;

/** A caller-supplied request id is echoed only when it is short and plain; otherwise one is made. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The routes of the API, in the order they are matched. */
export function apiRoutes(s: ServerContext, openapi: () => unknown): Route[] {
  return [
    ...systemRoutes(s, openapi),
    ...invocationRoutes(s),
    ...actionRoutes(s),
    ...approvalRoutes(s),
    ...reconciliationRoutes(s),
    ...notificationRoutes(s),
    ...breakerRoutes(s),
    ...journalRoutes(s),
    ...decisionRoutes(s),
    ...boundaryRoutes(s),
    ...completionRoutes(s),
  ];
}

/** Ends the console's live streams and the long polls of an app (its server is closing). */
const liveClosers = new WeakMap<object, () => void>();
export function closeLiveStreams(app: object): void {
  liveClosers.get(app)?.();
}

const mcpEndpoints = new WeakMap<object, McpHttp>();

/** The `/mcp` endpoint of an app made by {@link createApp} (its sessions are closed with the server). */
export function mcpEndpointOf(app: object): McpHttp | undefined {
  return mcpEndpoints.get(app);
}

/** Creates the Hono app of the HTTP API over an open runtime. */
export function createApp(runtime: Runtime, options: CreateAppOptions = {}): Hono<AppEnv> {
  const opts = resolveAppOptions(runtime, options);
  const { clock, crypto, random } = runtime.host.context.o;
  const log = opts.logger;
  const closing = new AbortController();
  const s: ServerContext = { runtime, clock, crypto, random, metrics: metricsFor(runtime.host), log, healthTimeoutMs: opts.healthTimeoutMs, closing: closing.signal };

  let doc: unknown;
  const info = {
    title: "Writ HTTP API",
    version: "1.0.0",
    description: "Governed action execution: invocations, approvals, completions, reconciliations, journal, decisions and the execution boundary.",
    license: { name: "Apache-2.0", identifier: "Apache-2.0" },
  };
  const routes = apiRoutes(s, () => (doc ??= openApiDocument(routes, info)));

  /** Every error answer, from every place, goes through here. */
  const fail = (c: Context<AppEnv>, err: unknown): Response => {
    const r = errorReply(err);
    if (r.fault) {
      log.error({ requestId: c.get("requestId"), method: c.req.method, route: c.get("route") ?? "unmatched", err: errorMessage(err), stack: err instanceof Error ? err.stack : undefined }, "request failed");
    }
    return jsonResponse(c, r.status, r.body, r.headers);
  };

  const limiter = createRateLimiter(opts.rateLimit, () => clock.now());
  const keyCache = { maxAgeMs: opts.apiKeyCacheMs };
  const app = new Hono<AppEnv>();
  liveClosers.set(app, () => closing.abort());
  app.use("*", async (c, next) => {
    const given = c.req.header("x-request-id");
    const requestId = given !== undefined && REQUEST_ID.test(given) ? given : `req_${base64url(random.bytes(12))}`;
    c.set("requestId", requestId);
    const t0 = performance.now();
    s.metrics.inFlight(1);
    try {
      await next();
    } finally {
      s.metrics.inFlight(-1);
    }
    const res = c.res;
    if (!hasRequestId(res)) res.headers.set("x-request-id", requestId);
    const route = c.get("route") ?? "unmatched";
    const ms = performance.now() - t0;
    s.metrics.request(c.req.method, route, res.status, ms / 1000);
    // The silent default logger is not handed a line it would drop.
    if (log !== silentLogger) log.info({ requestId, method: c.req.method, route, status: res.status, ms: Math.round(ms * 100) / 100 }, "request");
  });
  mountRoutes(app, routes, {
    bodyLimitBytes: opts.bodyLimitBytes,
    maxJsonDepth: opts.maxJsonDepth,
    checkResponses: opts.checkResponses,
    authenticate: async (header) => {
      const key = await authenticate(runtime.store, crypto, header, keyCache);
      limiter.take(key.keyId);
      return key;
    },
    fail,
  });
  const consoleOptions = options.console ?? runtime.config.console ?? {};
  if (consoleOptions.enabled !== false) {
    const con = createConsole(s, consoleOptions);
    app.route("/console", con.app);
    liveClosers.set(app, () => {
      closing.abort();
      con.close();
    });
  }
  if (options.mcp !== false) {
    const demoSpace = configDemoSpace(runtime.config);
    const mcpOptions = { bodyLimitBytes: opts.bodyLimitBytes, logger: log, ...(demoSpace !== undefined ? { demoSpace } : {}), ...(runtime.config.mcp ?? {}), ...(options.mcp ?? {}) };
    const mcp = createMcpHttp({ host: runtime.host, store: runtime.store, crypto, random }, mcpOptions);
    mcpEndpoints.set(app, mcp);
    app.all("/mcp", (c) => {
      c.set("route", "/mcp");
      return mcp.handle(c.req.raw);
    });
  }
  app.notFound((c) => fail(c, new ApiError("ROUTE_NOT_FOUND", `no route ${c.req.method} ${c.req.path.slice(0, 200)}`)));
  app.onError((err, c) => fail(c, err));
  return app;
}
