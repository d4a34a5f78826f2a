/**
 * `writ/server`: the HTTP API (docs/http-api.md): `createApp` (a Hono app) and `startServer`
 * (Node), over a runtime `openRuntime` builds from a config.
 */
export { createApp, resolveAppOptions, type CreateAppOptions, type ResolvedAppOptions } from "./app.js";
export { startServer, type RunningServer, type StartServerOptions } from "./server.js";
export { API_ERROR_CODES, HTTP_ERROR_CODES, STATUS_OF, ApiError, errorReply, type ApiErrorCode, type ErrorBody, type HttpErrorCode } from "./errors.js";
export { createMetrics, metricsFor, type ServerMetrics } from "./metrics.js";
export { keyActor, type Caller } from "./auth.js";
export type { Route } from "./registry.js";
export { openRuntime, type OpenRuntimeOptions, type Runtime } from "../runtime/runtime.js";
