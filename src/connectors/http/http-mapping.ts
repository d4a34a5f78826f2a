/**
 * How an HTTP answer becomes a connector reply (docs/connectors.md has the table);
 * every status not clearly "the provider did not act" or "the provider acted" is ambiguous.
 */
import type { Json } from "../../core/types.js";
import type { HttpStatusOutcome } from "./http-options.js";

/**
 * The default reading of a status:
 * - 202 → `accepted` (long-running, completes by callback); other 2xx → `success`;
 * - 303 → `ambiguous` (the provider may have acted and points elsewhere); other 3xx →
 *   `permanent_failure` (redirects are not followed: fix `baseUrl`);
 * - 408, 429 → `transient_failure` (the provider says it did not process the request);
 *   other 4xx (409 included) → `permanent_failure`;
 * - 502, 503 → `transient_failure` (safe only because the provider dedupes on the Idempotency-Key
 *   and the host retries idempotent actions only; see docs/connectors.md);
 * - 501, 505 → `permanent_failure` (the server cannot process such a request at all);
 * - 500, 504 and every other status → `ambiguous` (the request was sent; the outcome is unknown).
 */
export function defaultStatusOutcome(status: number): HttpStatusOutcome {
  if (status === 202) return "accepted";
  if (status >= 200 && status <= 299) return "success";
  if (status === 303) return "ambiguous";
  if (status >= 300 && status <= 399) return "permanent_failure";
  if (status === 408 || status === 429) return "transient_failure";
  if (status >= 400 && status <= 499) return "permanent_failure";
  if (status === 502 || status === 503) return "transient_failure";
  if (status === 501 || status === 505) return "permanent_failure";
  return "ambiguous";
}

/** Longest external reference accepted (the boundary's limit). */
const MAX_REF = 512;

/** A usable external reference: a non-empty string or a finite number, at most 512 characters. */
export function refText(v: unknown): string | undefined {
  const s = typeof v === "string" ? v.trim() : typeof v === "number" && Number.isFinite(v) ? String(v) : undefined;
  return s !== undefined && s.length > 0 && s.length <= MAX_REF ? s : undefined;
}

/** The value at `tokens` inside `root`, or undefined. */
export function valueAt(root: Json | undefined, tokens: readonly string[]): Json | undefined {
  let cur: Json | undefined = root;
  for (const t of tokens) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(t)) return undefined;
      cur = cur[Number(t)];
    } else {
      cur = Object.prototype.hasOwnProperty.call(cur, t) ? cur[t] : undefined;
    }
  }
  return cur;
}

/** True when a Content-Type names JSON (`application/json`, `application/problem+json`, …). */
export function isJsonType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const mime = contentType.split(";")[0]!.trim().toLowerCase();
  return mime === "application/json" || /^[a-z]+\/[a-z0-9.+-]*\+json$/.test(mime);
}

/** A JSON body: `undefined` when empty or not JSON by its type; `malformed` when it claims JSON but does not parse. */
export function parseJsonBody(contentType: string | undefined, text: string): { ok: true; value: Json | undefined } | { ok: false } {
  if (!isJsonType(contentType) || text.trim().length === 0) return { ok: true, value: undefined };
  try {
    return { ok: true, value: JSON.parse(text) as Json };
  } catch {
    return { ok: false };
  }
}

/** Printable one-line text, at most `max` characters. */
export function oneLine(text: string, max: number): string {
  // eslint-disable-next-line no-control-regex
  const flat = text.replace(/[\u0000-\u001f\u007f]+/g, " ").replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** Shortest secret masked, and shortest part of one (`Bearer` is not a secret); shorter values are too common to be credentials. */
const MIN_SECRET = 6;
const MIN_SECRET_PART = 8;

/**
 * Masks secret header values in text. Each value is masked whole and, for values such as
 * `Bearer <token>`, each of its space-separated parts, longest first.
 */
export function secretMasker(values: readonly string[]): (text: string) => string {
  const parts = new Set<string>();
  for (const v of values) {
    if (v.length >= MIN_SECRET) parts.add(v);
    for (const p of v.split(/\s+/)) if (p.length >= MIN_SECRET_PART) parts.add(p);
  }
  const sorted = [...parts].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const s of sorted) out = out.split(s).join("[redacted]");
    return out;
  };
}
