/**
 * Exit codes scripts can rely on, and the one place that maps an error to its code.
 * Documented in docs/cli.md.
 */
import { WritError, type ErrorCode } from "../core/errors.js";

export const EXIT = {
  /** The command did what was asked. */
  OK: 0,
  /** The operation failed or an invariant is broken (e.g. `journal verify` found tampering). */
  FAILED: 1,
  /** Usage error: unknown command or flag, missing or malformed argument, bad input file. */
  USAGE: 2,
  /** The config could not be found, loaded or used (or the keys it points at are unusable). */
  CONFIG: 3,
  /** The store could not be reached or opened. */
  STORE: 4,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error the CLI reports as it is (a message for people, no stack), with an exit code. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly code: string;
  constructor(exitCode: ExitCode, code: string, message: string) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
    this.code = code;
  }
}

/** A mistake in how the command was called (exit 2). */
export function usageError(message: string): CliError {
  return new CliError(EXIT.USAGE, "USAGE", message);
}

/** A config that cannot be used (exit 3). */
export function configError(message: string): CliError {
  return new CliError(EXIT.CONFIG, "CONFIG", message);
}

const BY_CODE: Partial<Record<ErrorCode, ExitCode>> = {
  INVALID_ARGUMENT: EXIT.USAGE,
  VALIDATION_FAILED: EXIT.USAGE,
  CANONICAL_JSON: EXIT.USAGE,
  INVALID_OPTION: EXIT.CONFIG,
  KEY_ERROR: EXIT.CONFIG,
  STORE_ERROR: EXIT.STORE,
  STORE_CLOSED: EXIT.STORE,
};

/** The exit code for an error: Writ's own codes map as documented; anything else is a failure. */
export function exitCodeFor(e: unknown): ExitCode {
  if (e instanceof CliError) return e.exitCode;
  if (e instanceof WritError) return BY_CODE[e.code] ?? EXIT.FAILED;
  return EXIT.FAILED;
}

/** True for errors that are expected outcomes (reported without a stack): Writ's, the CLI's, and the system's (EACCES, ENOSPC, ...); false for bugs. */
export function isExpectedError(e: unknown): boolean {
  return e instanceof CliError || e instanceof WritError || (e instanceof Error && typeof (e as { syscall?: unknown }).syscall === "string");
}

/** The stable code of an error for `--json` output. */
export function errorCodeOf(e: unknown): string {
  if (e instanceof CliError || e instanceof WritError) return e.code;
  return "INTERNAL";
}
