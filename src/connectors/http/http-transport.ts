/**
 * The transport port of the HTTP connector: send one request, and say whether it may have reached
 * the provider when it fails. That one bit decides `transient_failure` (nothing sent, safe to
 * retry) versus `ambiguous` (the provider may have acted).
 */
import { errorMessage } from "../../core/errors.js";

/** One request, fully built. */
export interface HttpCall {
  url: URL;
  method: string;
  /** Lower-case names. */
  headers: { [name: string]: string };
  body: string | undefined;
}

/** The response body, or why it could not be read (cut off, too large, aborted). */
export type HttpBody = { ok: true; text: string } | { ok: false; problem: string };

export interface HttpResponse {
  status: number;
  statusText: string;
  /** A response header by (case-insensitive) name. */
  header(name: string): string | undefined;
  body: HttpBody;
}

/**
 * What a send produced. `failed.sent` is false only when the request provably never left (no
 * connection was made); when in doubt it is true.
 */
export type HttpExchange = { kind: "response"; response: HttpResponse } | { kind: "failed"; sent: boolean; problem: string };

/** Sends `call`; stops (and reports) when `signal` aborts; never rejects. */
export type HttpTransport = (call: HttpCall, signal: AbortSignal, maxBytes: number) => Promise<HttpExchange>;

function codeOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.length > 0 ? code : undefined;
}

/** Error codes found in `e`, its `cause` chain and, for an AggregateError, its `errors`. */
export function errorCodes(e: unknown, depth = 0): string[] {
  if (e === null || typeof e !== "object" || depth > 4) return [];
  const out: string[] = [];
  const own = codeOf(e);
  if (own !== undefined) out.push(own);
  const inner = (e as { errors?: unknown }).errors;
  if (Array.isArray(inner)) for (const x of inner) out.push(...errorCodes(x, depth + 1));
  out.push(...errorCodes((e as { cause?: unknown }).cause, depth + 1));
  return out;
}

/** A short description of a network error: its code and message (and its cause's). Never throws. */
export function describeError(e: unknown): string {
  const codes = [...new Set(errorCodes(e))];
  let msg = errorMessage(e);
  const cause = (e as { cause?: unknown } | null)?.cause;
  if (cause !== undefined) msg = `${msg} (${errorMessage(cause)})`;
  if (msg.trim().length === 0) msg = (e as { name?: unknown } | null)?.name === "AggregateError" ? "connection failed" : "network error";
  return codes.length > 0 ? `${codes.join("/")}: ${msg}` : msg;
}
