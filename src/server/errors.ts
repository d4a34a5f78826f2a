/**
 * HTTP errors: one answer shape (`{ error: { code, message, details? } }`), stable codes, and the
 * ONE table that maps a code to an HTTP status. Every error answer of the server goes through
 * {@link errorReply}; nothing else picks a status for an error.
 */
import { ERROR_CODES, WritError, type ErrorCode } from "../core/errors.js";

/** Codes the HTTP layer raises itself (the core's {@link ERROR_CODES} are the others). */
export const HTTP_ERROR_CODES = [
  "BAD_REQUEST",
  "HEADERS_TOO_LARGE",
  "UNAUTHORIZED",
  "ROUTE_NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "PAYLOAD_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "MALFORMED_JSON",
  "REQUEST_TIMEOUT",
  "CLIENT_CLOSED_REQUEST",
  "RATE_LIMITED",
  "SERVICE_UNAVAILABLE",
  "INTERNAL",
] as const;
export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number];

/** Every code an error answer can carry. */
export type ApiErrorCode = ErrorCode | HttpErrorCode;
export const API_ERROR_CODES: readonly ApiErrorCode[] = [...ERROR_CODES, ...HTTP_ERROR_CODES];

/**
 * Code -> HTTP status. A `Record` over the whole union: a new core code fails to compile until it
 * is given a status here.
 */
export const STATUS_OF: Readonly<Record<ApiErrorCode, number>> = {
  // bad input
  BAD_REQUEST: 400,
  VALIDATION_FAILED: 400,
  INVALID_ARGUMENT: 400,
  CANONICAL_JSON: 400,
  MALFORMED_JSON: 400,
  WEBHOOK_MALFORMED: 400,
  // who is asking
  UNAUTHORIZED: 401,
  WEBHOOK_SIGNATURE_INVALID: 401,
  WEBHOOK_TIMESTAMP_STALE: 401,
  FORBIDDEN: 403,
  // not there (another scope's records are "not there": never 403, never a hint they exist)
  NOT_FOUND: 404,
  SCOPE_VIOLATION: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  // state
  IDEMPOTENCY_CONFLICT: 409,
  CONFLICT: 409,
  INVALID_STATE: 409,
  APPROVAL_CLOSED: 409,
  LEASE_LOST: 409,
  // Too late to cancel: a step started (the provider may have acted).
  STEPS_STARTED: 409,
  // A concurrent writer changed the record first (the host retries these; one that reaches here lost every retry).
  STALE: 409,
  WEBHOOK_REPLAYED: 409,
  // The operation may not have parked yet: the sender should retry (its usual retry schedule).
  COMPLETION_UNKNOWN_REFERENCE: 409,
  PAYLOAD_TOO_LARGE: 413,
  REQUEST_TIMEOUT: 408,
  // The client went away mid-request: nobody reads the answer; not a server fault (nginx's 499).
  CLIENT_CLOSED_REQUEST: 499,
  RATE_LIMITED: 429,
  UNSUPPORTED_MEDIA_TYPE: 415,
  HEADERS_TOO_LARGE: 431,
  // server side
  INTERNAL: 500,
  INVALID_OPTION: 500,
  KEY_ERROR: 500,
  LOCK_ORDER: 500,
  STORE_ERROR: 503,
  STORE_CLOSED: 503,
  // The process is stopping; the work is resumed by recovery.
  ABORTED: 503,
  SERVICE_UNAVAILABLE: 503,
};

/** Codes whose message may be shown to the caller. Server-side faults answer a generic text. */
const CALLER_FACING = (code: ApiErrorCode): boolean => STATUS_OF[code] < 500;

/** An error the HTTP layer raises (auth, limits, routing); carries a stable code. */
export class ApiError extends Error {
  readonly code: ApiErrorCode;
  readonly details: unknown;
  /** Headers the answer carries (`Allow` on 405, `WWW-Authenticate` on 401). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(code: ApiErrorCode, message: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.details = details;
    this.headers = headers;
  }
}

export interface ErrorBody {
  error: { code: ApiErrorCode; message: string; details?: unknown };
}

export interface ErrorReply {
  status: number;
  body: ErrorBody;
  headers: Readonly<Record<string, string>>;
  /** True when the error is a server-side fault: log it with its detail, show none of it. */
  fault: boolean;
}

const GENERIC: Partial<Record<ApiErrorCode, string>> = {
  INTERNAL: "internal error",
  STORE_ERROR: "the store is unavailable; retry later",
  STORE_CLOSED: "the store is unavailable; retry later",
  SERVICE_UNAVAILABLE: "service unavailable; retry later",
};

/** The answer for any thrown value. Unknown values are a 500 with a generic message. */
export function errorReply(err: unknown): ErrorReply {
  let code: ApiErrorCode = "INTERNAL";
  let message = "";
  let details: unknown;
  let headers: Readonly<Record<string, string>> = {};
  if (err instanceof ApiError || err instanceof WritError) {
    code = err.code;
    message = err.message;
    details = err.details;
    if (err instanceof ApiError) headers = err.headers;
  }
  const status = STATUS_OF[code] ?? 500;
  if (!CALLER_FACING(code)) {
    return { status, body: { error: { code, message: GENERIC[code] ?? "internal error" } }, headers: {}, fault: true };
  }
  const body: ErrorBody = { error: { code, message } };
  if (details !== undefined && details !== null) body.error.details = details;
  return { status, body, headers, fault: false };
}
