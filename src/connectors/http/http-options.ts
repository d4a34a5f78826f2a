/**
 * Options of `httpConnector`, their defaults (in one place) and their validation.
 */
import type { Clock } from "../../core/ports.js";
import type { Json } from "../../core/types.js";
import { systemClock } from "../../node/clock.js";
import { checkConnectorBasics, clockOption, invalidOption, operationEntries, optionalMs } from "../connector-options.js";

const ENTRY = "httpConnector";

/** Methods an operation may use. */
export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** What a response status can be read as (the connector reply outcomes an HTTP answer can carry). */
export const HTTP_STATUS_OUTCOMES = ["success", "accepted", "permanent_failure", "transient_failure", "ambiguous"] as const;
export type HttpStatusOutcome = (typeof HTTP_STATUS_OUTCOMES)[number];

/** Overrides of the default status mapping, by status code (`{ 409: "transient_failure" }`). */
export type HttpStatusOutcomes = { [status: number]: HttpStatusOutcome };

/** Static headers (names are case-insensitive). */
export type HttpHeaders = { [name: string]: string };

/**
 * Where the provider names the effect in its answer. `header` is tried first, then `field`. A 2xx
 * (or 202) without it is `ambiguous`: the effect happened but cannot be named.
 */
export interface HttpExternalRef {
  /** A response header, e.g. `Location` or `X-Request-Id`. */
  header?: string;
  /**
   * A field of the JSON response body: a JSON pointer (`/data/id`) or a dotted path (`data.id`;
   * numeric segments index arrays). A string or a finite number is accepted.
   */
  field?: string;
}

/** One operation: a REST call. */
export interface HttpOperation {
  method: HttpMethod;
  /**
   * Path below `baseUrl`, starting with `/`. `{name}` placeholders are filled from the input's
   * top-level field `name` (a string, number or boolean), URI-encoded. May carry a query string.
   */
  path: string;
  /** Static headers of this operation (added to the connector's). */
  headers?: HttpHeaders;
  /**
   * The JSON body built from the step input; `undefined` sends no body.
   * @defaultValue the input for POST, PUT and PATCH; no body for GET, HEAD and DELETE
   */
  body?: (input: Json) => Json | undefined;
  externalRef: HttpExternalRef;
  /**
   * Longest wait for the whole answer (ms). The step deadline (`ctx.deadline`) always applies too;
   * the smaller wins.
   * @defaultValue the step deadline only
   */
  timeoutMs?: number;
  /** Overrides of the status mapping for this operation (over the connector's). */
  statusOutcomes?: HttpStatusOutcomes;
}

/** Options of {@link httpConnector}. */
export interface HttpConnectorOptions {
  /** Registered connector id (actions name it in their steps). */
  id: string;
  /** `http://` or `https://` URL the operation paths are appended to; no credentials in it. */
  baseUrl: string;
  operations: { [operation: string]: HttpOperation };
  /**
   * Headers sent with every call, typically credentials (`Authorization`). Values are treated as
   * secrets: masked out of every reason. A function is called once per call (token rotation); if
   * it throws, nothing is sent (`transient_failure`).
   * @defaultValue none
   */
  headers?: HttpHeaders | (() => HttpHeaders | Promise<HttpHeaders>);
  /**
   * A `fetch` to send with instead of node:http (instrumentation, other runtimes). With `fetch`
   * the connector cannot see whether a connection was made, so an abort or timeout is always
   * `ambiguous`; only errors that prove nothing was sent (DNS failure, connection refused) are
   * `transient_failure`.
   * @defaultValue node:http / node:https, one connection per call
   */
  fetch?: typeof fetch;
  /**
   * Header carrying the step idempotency key (`ctx.idempotencyKey`).
   * @defaultValue "Idempotency-Key"
   */
  idempotencyHeader?: string;
  /** Overrides of the default status mapping for every operation. @defaultValue none */
  statusOutcomes?: HttpStatusOutcomes;
  /** Largest response body read (bytes); a larger one counts as unreadable. @defaultValue 1048576 */
  maxResponseBytes?: number;
  /**
   * Quote the start of the response body (300 characters, secrets masked) in failure reasons, so
   * an operator sees the provider's error.
   * @defaultValue true
   */
  errorBodyInReason?: boolean;
  /** Clock of the step deadline and of `timeoutMs` (the host's clock). @defaultValue the system clock */
  clock?: Clock;
}

/** The defaults, in one place. */
export const HTTP_DEFAULTS = {
  idempotencyHeader: "Idempotency-Key",
  maxResponseBytes: 1_048_576,
  errorBodyInReason: true,
} as const;

/** An operation after validation. */
export interface ResolvedHttpOperation {
  name: string;
  method: HttpMethod;
  /** The path template as configured (used in reasons: it carries no input values). */
  path: string;
  headers: HttpHeaders;
  body: ((input: Json) => Json | undefined) | undefined;
  ref: { header: string | undefined; field: string | undefined; fieldPath: string[] | undefined };
  timeoutMs: number | undefined;
  outcomes: Map<number, HttpStatusOutcome>;
}

/** Options after defaults and validation. */
export interface ResolvedHttpOptions {
  id: string;
  /** Without a trailing slash. */
  baseUrl: string;
  operations: ResolvedHttpOperation[];
  headers: HttpHeaders | (() => HttpHeaders | Promise<HttpHeaders>);
  fetch: typeof fetch | undefined;
  idempotencyHeader: string;
  maxResponseBytes: number;
  errorBodyInReason: boolean;
  clock: Clock;
}

const TOKEN_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PLACEHOLDER_RE = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** True when `name` is a valid header name. */
export function isHeaderName(name: string): boolean {
  return TOKEN_RE.test(name);
}

/** True when `value` may be sent as a header value (no CR, LF or NUL). */
export function isHeaderValue(value: unknown): value is string {
  return typeof value === "string" && !/[\r\n\0]/.test(value);
}

function checkHeaders(option: string, v: unknown, idempotencyHeader: string): HttpHeaders {
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalidOption(ENTRY, option, "must be an object of header names to string values");
  const out: HttpHeaders = {};
  for (const [name, value] of Object.entries(v as Record<string, unknown>)) {
    if (!isHeaderName(name)) throw invalidOption(ENTRY, option, `has an invalid header name ${JSON.stringify(name.slice(0, 60))}`);
    // The value is never echoed: it may be a credential.
    if (!isHeaderValue(value)) throw invalidOption(ENTRY, `${option}.${name}`, "must be a string without CR, LF or NUL");
    if (name.toLowerCase() === idempotencyHeader.toLowerCase()) throw invalidOption(ENTRY, `${option}.${name}`, "is set by the connector (the step idempotency key)");
    out[name.toLowerCase()] = value;
  }
  return out;
}

function checkOutcomes(option: string, v: unknown): Map<number, HttpStatusOutcome> {
  const out = new Map<number, HttpStatusOutcome>();
  if (v === undefined) return out;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalidOption(ENTRY, option, "must be an object of status codes to outcomes");
  for (const [k, outcome] of Object.entries(v as Record<string, unknown>)) {
    if (!/^[1-5][0-9][0-9]$/.test(k)) throw invalidOption(ENTRY, `${option}.${k}`, "must be a status code from 100 to 599");
    if (!(HTTP_STATUS_OUTCOMES as readonly unknown[]).includes(outcome)) throw invalidOption(ENTRY, `${option}.${k}`, `must be one of ${HTTP_STATUS_OUTCOMES.join(", ")}`);
    const status = Number(k);
    if ((outcome === "success" || outcome === "accepted") && (status < 200 || status > 299)) throw invalidOption(ENTRY, `${option}.${k}`, `can be ${String(outcome)} only for a 2xx status`);
    out.set(status, outcome as HttpStatusOutcome);
  }
  return out;
}

/** Splits a JSON pointer (`/a/b`) or dotted path (`a.b`) into tokens. */
export function fieldTokens(field: string): string[] {
  if (field.startsWith("/")) return field.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
  return field.split(".");
}

function checkRef(option: string, v: unknown): ResolvedHttpOperation["ref"] {
  if (typeof v !== "object" || v === null) throw invalidOption(ENTRY, option, "must be { header?, field? } naming where the response carries the external reference");
  const { header, field } = v as { header?: unknown; field?: unknown };
  if (header === undefined && field === undefined) throw invalidOption(ENTRY, option, "must name a response `header` or a body `field`");
  if (header !== undefined && (typeof header !== "string" || !isHeaderName(header))) throw invalidOption(ENTRY, `${option}.header`, "must be a header name");
  if (field !== undefined && (typeof field !== "string" || field.length === 0 || (!field.startsWith("/") && field.split(".").some((s) => s.length === 0)))) {
    throw invalidOption(ENTRY, `${option}.field`, "must be a JSON pointer (/data/id) or a dotted path (data.id)");
  }
  return { header: header?.toLowerCase(), field, fieldPath: field === undefined ? undefined : fieldTokens(field) };
}

function checkOperation(name: string, op: Record<string, unknown>, idempotencyHeader: string): ResolvedHttpOperation {
  const at = `operations.${name}`;
  const method = op.method;
  if (!(HTTP_METHODS as readonly unknown[]).includes(method)) throw invalidOption(ENTRY, `${at}.method`, `must be one of ${HTTP_METHODS.join(", ")}`);
  const path = op.path;
  if (typeof path !== "string" || !path.startsWith("/") || /[\s#]/.test(path)) throw invalidOption(ENTRY, `${at}.path`, "must start with / and contain no whitespace or #");
  const leftover = path.replace(PLACEHOLDER_RE, "");
  if (/[{}]/.test(leftover)) throw invalidOption(ENTRY, `${at}.path`, "has a malformed {placeholder} (names are letters, digits and _)");
  if (op.body !== undefined && typeof op.body !== "function") throw invalidOption(ENTRY, `${at}.body`, "must be a function (input) => JSON body");
  if ((method === "GET" || method === "HEAD") && op.body !== undefined) throw invalidOption(ENTRY, `${at}.body`, `cannot be sent with ${method}`);
  const m = method as HttpMethod;
  const defaultBody = m === "POST" || m === "PUT" || m === "PATCH" ? (input: Json): Json => input : undefined;
  return {
    name,
    method: m,
    path,
    headers: checkHeaders(`${at}.headers`, op.headers, idempotencyHeader),
    body: (op.body as ResolvedHttpOperation["body"]) ?? defaultBody,
    ref: checkRef(`${at}.externalRef`, op.externalRef),
    timeoutMs: optionalMs(ENTRY, `${at}.timeoutMs`, op.timeoutMs),
    outcomes: checkOutcomes(`${at}.statusOutcomes`, op.statusOutcomes),
  };
}

function checkBaseUrl(v: unknown): string {
  if (typeof v !== "string") throw invalidOption(ENTRY, "baseUrl", "must be an http:// or https:// URL");
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalidOption(ENTRY, "baseUrl", "is not a valid URL");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw invalidOption(ENTRY, "baseUrl", "must be an http:// or https:// URL");
  if (u.username !== "" || u.password !== "") throw invalidOption(ENTRY, "baseUrl", "must not carry credentials (send them in `headers`)");
  if (u.search !== "" || u.hash !== "") throw invalidOption(ENTRY, "baseUrl", "must not have a query or fragment (put them in the operation path)");
  return u.toString().replace(/\/+$/, "");
}

/** Applies defaults and validates; throws `INVALID_OPTION` naming the bad option (never its secret value). */
export function resolveHttpOptions(options: HttpConnectorOptions): ResolvedHttpOptions {
  const { id } = checkConnectorBasics(ENTRY, options);
  const idempotencyHeader = options.idempotencyHeader ?? HTTP_DEFAULTS.idempotencyHeader;
  if (typeof idempotencyHeader !== "string" || !isHeaderName(idempotencyHeader)) throw invalidOption(ENTRY, "idempotencyHeader", "must be a header name");
  const headers = typeof options.headers === "function" ? options.headers : checkHeaders("headers", options.headers, idempotencyHeader);
  if (options.fetch !== undefined && typeof options.fetch !== "function") throw invalidOption(ENTRY, "fetch", "must be a fetch function");
  const maxResponseBytes = options.maxResponseBytes ?? HTTP_DEFAULTS.maxResponseBytes;
  if (typeof maxResponseBytes !== "number" || !Number.isSafeInteger(maxResponseBytes) || maxResponseBytes < 1) throw invalidOption(ENTRY, "maxResponseBytes", "must be a positive integer");
  const errorBodyInReason = options.errorBodyInReason ?? HTTP_DEFAULTS.errorBodyInReason;
  if (typeof errorBodyInReason !== "boolean") throw invalidOption(ENTRY, "errorBodyInReason", "must be a boolean");
  const shared = checkOutcomes("statusOutcomes", options.statusOutcomes);
  const operations = operationEntries(ENTRY, options.operations).map(([name, op]) => {
    const r = checkOperation(name, op, idempotencyHeader);
    // The operation's overrides win over the connector's.
    r.outcomes = new Map([...shared, ...r.outcomes]);
    return r;
  });
  return {
    id,
    baseUrl: checkBaseUrl(options.baseUrl),
    operations,
    headers,
    fetch: options.fetch,
    idempotencyHeader,
    maxResponseBytes,
    errorBodyInReason,
    clock: clockOption(ENTRY, options.clock, systemClock),
  };
}
