/**
 * The client's one error: the API's typed code (`VALIDATION_FAILED`, `NOT_FOUND`, ...) with the
 * HTTP status, or a code of the client's own when no answer came (`NETWORK_ERROR`, `ABORTED`) or
 * the answer was not the API's (`BAD_RESPONSE`). Switch on `code`, never on the message.
 */
import type { components } from "./openapi.js";

/** Every code the API answers errors with (the `Error` schema of its OpenAPI document). */
export type ApiErrorCode = components["schemas"]["Error"]["error"]["code"];

/** Codes the client raises itself: no answer, or an answer that is not the API's. */
export const CLIENT_ERROR_CODES = ["NETWORK_ERROR", "ABORTED", "BAD_RESPONSE", "INVALID_OPTION"] as const;
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

export type WritErrorCode = ApiErrorCode | ClientErrorCode;

/**
 * An error answer of the Writ API, or a request that got none.
 * @example
 * try { await writ.approvals.approve(id); }
 * catch (e) { if (e instanceof WritApiError && e.code === "FORBIDDEN") ... }
 */
export class WritApiError extends Error {
  /** The API's code, or the client's own (`NETWORK_ERROR`, `ABORTED`, `BAD_RESPONSE`, `INVALID_OPTION`). */
  readonly code: WritErrorCode;
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The answer's `x-request-id` (quote it to an operator: the server's log has the detail). */
  readonly requestId: string | undefined;
  /** The error's `details` (e.g. `issues` of VALIDATION_FAILED). */
  readonly details: unknown;

  constructor(code: WritErrorCode, status: number, message: string, o: { requestId?: string | undefined; details?: unknown; cause?: unknown } = {}) {
    super(message, o.cause !== undefined ? { cause: o.cause } : undefined);
    this.name = "WritApiError";
    this.code = code;
    this.status = status;
    this.requestId = o.requestId;
    this.details = o.details;
  }
}

/** True when `e` is a {@link WritApiError}, with `code` one of `codes` when given. */
export function isWritApiError(e: unknown, ...codes: WritErrorCode[]): e is WritApiError {
  return e instanceof WritApiError && (codes.length === 0 || codes.includes(e.code));
}
