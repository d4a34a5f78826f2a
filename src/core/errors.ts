/**
 * Stable string codes. Tests and callers switch on `code`, never on message text.
 */

/** Boundary refusal reason codes (docs/boundary.md, Checks, in order), in check order. */
export const REFUSAL_CODES = [
  "REQUEST_MALFORMED",
  "DECISION_MALFORMED",
  "DECISION_KEY_UNKNOWN",
  "DECISION_KEY_REVOKED",
  "DECISION_SIGNATURE_INVALID",
  "DECISION_NOT_ALLOW",
  "REQUEST_DIGEST_MISMATCH",
  "DECISION_REF_MISMATCH",
  "DECISION_IN_FUTURE",
  "DECISION_STALE",
  "AUTHORITY_UNKNOWN",
  "AUTHORITY_SUSPENDED",
  "AUTHORITY_REVOKED",
  "AUTHORITY_EXPIRED",
  "APPROVAL_NOT_FOUND",
  "APPROVAL_NOT_GRANTED",
  "APPROVAL_REVOKED",
  "APPROVAL_EXPIRED",
  "APPROVAL_MISMATCH",
  "IDEMPOTENCY_CONFLICT",
  "EXECUTION_IN_PROGRESS",
  "RECONCILIATION_PENDING",
  "DECISION_PREDATES_ATTEMPT",
  "DECISION_REPLAYED",
  "CONNECTOR_NOT_FOUND",
] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** Outcome reason codes recorded on executed attempts (docs/boundary.md, Outcomes). */
export const OUTCOME_CODES = ["CONNECTOR_ERROR", "EXECUTION_TIMEOUT", "OUTCOME_AMBIGUOUS", "CONNECTOR_FAILURE", "CONNECTOR_TRANSIENT_FAILURE"] as const;
export type OutcomeCode = (typeof OUTCOME_CODES)[number];

/** Codes of errors thrown to callers (bad input, bad options, store faults). */
export const ERROR_CODES = [
  "INVALID_ARGUMENT",
  "INVALID_OPTION",
  "CANONICAL_JSON",
  "VALIDATION_FAILED",
  "NOT_FOUND",
  "IDEMPOTENCY_CONFLICT",
  "LEASE_LOST",
  "SCOPE_VIOLATION",
  "CONFLICT",
  /** A conditional write lost a race: the row changed since the transition read it (docs/stores.md). */
  "STALE",
  /** A transaction took its locks out of the one global order (a programming error; docs/stores.md). */
  "LOCK_ORDER",
  "STORE_ERROR",
  "STORE_CLOSED",
  "KEY_ERROR",
  "INVALID_STATE",
  /** A vote or revocation on an approval closed because its invocation ended (docs/approvals.md). */
  "APPROVAL_CLOSED",
  "FORBIDDEN",
  "WEBHOOK_MALFORMED",
  "WEBHOOK_SIGNATURE_INVALID",
  "WEBHOOK_TIMESTAMP_STALE",
  "WEBHOOK_REPLAYED",
  "COMPLETION_UNKNOWN_REFERENCE",
  /** A cancel arrived after a step of the invocation started (docs/host.md, Cancellation). */
  "STEPS_STARTED",
  /** The caller's abort signal stopped an execution before its next step (docs/boundary.md). */
  "ABORTED",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export interface WritErrorOptions {
  details?: unknown;
  cause?: unknown;
}

/** Base error: every error Writ throws carries a stable `code`. */
export class WritError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  constructor(code: ErrorCode, message: string, options: WritErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "WritError";
    this.code = code;
    this.details = options.details;
  }
}

/** A fenced write was refused: the caller's lease on the record is gone. */
export class LeaseLostError extends WritError {
  constructor(message = "lease lost: the record is no longer held under this lease") {
    super("LEASE_LOST", message);
    this.name = "LeaseLostError";
  }
}

export function isWritError(e: unknown, code?: ErrorCode): e is WritError {
  return e instanceof WritError && (code === undefined || e.code === code);
}

/** The message of an unknown thrown value, never throwing itself. */
export function errorMessage(e: unknown): string {
  try {
    if (e instanceof Error) return String(e.message);
    return String(e);
  } catch {
    return "unprintable error";
  }
}
