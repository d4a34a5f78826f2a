/**
 * Decisions as JWS compact tokens, EdDSA / Ed25519 (docs/concepts.md). Any JOSE library verifies one with the
 * key from the host's JWKS; Writ verifies tokens minted by any JOSE library with the same header.
 */
import { parseJsonStrict } from "./canonical.js";
import { WritError, errorMessage } from "./errors.js";
import { base64url, fromBase64url, fromUtf8, utf8 } from "./encoding.js";
import type { Keyring, SigningKey } from "./keyring.js";
import type { CryptoPort, PublicJwk } from "./ports.js";
import { DECISION_RESULTS, type DecisionPayload } from "./types.js";

export const DECISION_TYP = "writ-decision+jws";
/** Tokens longer than this are malformed (no legitimate decision comes close). */
export const MAX_DECISION_LENGTH = 16 * 1024;

export interface DecisionHeader {
  alg: "EdDSA";
  kid: string;
  typ: typeof DECISION_TYP;
}

export interface ParsedDecision {
  header: DecisionHeader;
  payload: DecisionPayload;
  signingInput: Uint8Array;
  signature: Uint8Array;
}

export type ParseResult = { ok: true; value: ParsedDecision } | { ok: false; message: string };

const PAYLOAD_FIELDS = new Set(["v", "decisionId", "result", "requestDigest", "tenantId", "spaceId", "authorityRef", "policyRef", "approvalRef", "issuedAt", "reasons"]);
const HEADER_FIELDS = new Set(["alg", "kid", "typ"]);

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function nonEmpty(v: unknown, max = 512): v is string {
  return typeof v === "string" && v.length > 0 && v.length <= max;
}

const REQUIRED_STRINGS = ["decisionId", "requestDigest", "tenantId", "spaceId", "authorityRef", "policyRef"] as const;

function checkPayload(p: unknown): string | DecisionPayload {
  if (!isObj(p)) return "payload is not a JSON object";
  for (const k of Object.keys(p)) if (!PAYLOAD_FIELDS.has(k)) return `payload has an unknown field ${k}`;
  if (p.v !== 1) return "payload v must be 1";
  for (const k of REQUIRED_STRINGS) {
    if (!nonEmpty(p[k])) return `payload ${k} must be a non-empty string`;
  }
  if (typeof p.result !== "string" || !(DECISION_RESULTS as readonly string[]).includes(p.result)) return "payload result must be ALLOW, DENY or REQUIRE_APPROVAL";
  if (p.approvalRef !== undefined && !nonEmpty(p.approvalRef)) return "payload approvalRef must be a non-empty string when present";
  if (typeof p.issuedAt !== "number" || !Number.isSafeInteger(p.issuedAt) || p.issuedAt < 0) return "payload issuedAt must be epoch milliseconds";
  if (!Array.isArray(p.reasons) || p.reasons.length > 100 || !p.reasons.every((r) => typeof r === "string" && r.length <= 2000)) {
    return "payload reasons must be an array of strings";
  }
  return p as unknown as DecisionPayload;
}

// Headers repeat (one per signing key): parse each distinct one once.
const HEADERS = new Map<string, { ok: true; header: Record<string, unknown> } | { ok: false; message: string }>();

function parseHeader(h: string): { ok: true; header: Record<string, unknown> } | { ok: false; message: string } {
  const hit = HEADERS.get(h);
  if (hit) return hit;
  const hb = fromBase64url(h);
  let out: { ok: true; header: Record<string, unknown> } | { ok: false; message: string };
  if (!hb) out = { ok: false, message: "decision parts must be unpadded base64url" };
  else {
    try {
      const header = parseJsonStrict(fromUtf8(hb), 8);
      out = isObj(header) ? { ok: true, header } : { ok: false, message: "header is not a JSON object" };
    } catch (e) {
      out = { ok: false, message: `decision is not valid JSON: ${errorMessage(e)}` };
    }
  }
  if (out.ok && h.length <= 512) {
    if (HEADERS.size >= 256) HEADERS.delete(HEADERS.keys().next().value as string);
    HEADERS.set(h, out);
  }
  return out;
}

/** Parses a token without verifying it (check 1 in docs/boundary.md, Checks, in order). */
export function parseDecision(token: unknown): ParseResult {
  if (typeof token !== "string") return { ok: false, message: "decision must be a string (JWS compact)" };
  if (token.length > MAX_DECISION_LENGTH) return { ok: false, message: `decision is longer than ${MAX_DECISION_LENGTH} characters` };
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false, message: "decision must have three dot-separated parts" };
  const [h, p, s] = parts as [string, string, string];
  const parsedHeader = parseHeader(h);
  const pb = fromBase64url(p);
  const sig = fromBase64url(s);
  if (!parsedHeader.ok) return parsedHeader;
  if (!pb || !sig) return { ok: false, message: "decision parts must be unpadded base64url" };
  const header = parsedHeader.header;
  let payload: unknown;
  try {
    payload = parseJsonStrict(fromUtf8(pb), 8);
  } catch (e) {
    return { ok: false, message: `decision is not valid JSON: ${errorMessage(e)}` };
  }
  for (const k of Object.keys(header)) if (!HEADER_FIELDS.has(k)) return { ok: false, message: `header has an unsupported field ${k}` };
  if (header.alg !== "EdDSA") return { ok: false, message: "header alg must be EdDSA" };
  if (header.typ !== DECISION_TYP) return { ok: false, message: `header typ must be ${DECISION_TYP}` };
  if (!nonEmpty(header.kid, 200)) return { ok: false, message: "header kid must be a non-empty string" };
  if (sig.length !== 64) return { ok: false, message: "signature must be 64 bytes" };
  const checked = checkPayload(payload);
  if (typeof checked === "string") return { ok: false, message: checked };
  return {
    ok: true,
    value: { header: header as unknown as DecisionHeader, payload: checked, signingInput: utf8(token.slice(0, h.length + 1 + p.length)), signature: sig },
  };
}

/** Signs a decision payload as a JWS compact token. */
export function signDecisionWith(crypto: CryptoPort, key: SigningKey, payload: DecisionPayload): string {
  const checked = checkPayload(payload);
  if (typeof checked === "string") throw new WritError("INVALID_ARGUMENT", `cannot sign decision: ${checked}`);
  const header: DecisionHeader = { alg: "EdDSA", kid: key.kid, typ: DECISION_TYP };
  const input = `${base64url(utf8(JSON.stringify(header)))}.${base64url(utf8(JSON.stringify(payload)))}`;
  return `${input}.${base64url(crypto.signEd25519(key.privateJwk, utf8(input)))}`;
}

export type VerifyCode = "DECISION_MALFORMED" | "DECISION_KEY_UNKNOWN" | "DECISION_KEY_REVOKED" | "DECISION_SIGNATURE_INVALID";
export type VerifyResult = { ok: true; decision: ParsedDecision } | { ok: false; code: VerifyCode; message: string };

/** Checks 1-3 (docs/boundary.md, Checks, in order) for the decision: parses, key trusted and not revoked, signature valid. */
export function verifyDecisionWith(crypto: CryptoPort, keyring: Keyring, token: unknown): VerifyResult {
  const parsed = parseDecision(token);
  if (!parsed.ok) return { ok: false, code: "DECISION_MALFORMED", message: parsed.message };
  return verifyParsed(crypto, keyring, parsed.value);
}

/**
 * The signature check of a parsed decision under a trusted key: the port's asynchronous verify when
 * it has one (which may run off the JavaScript thread), its synchronous one otherwise
 * (docs/boundary.md).
 */
export function verifySignature(crypto: CryptoPort, publicJwk: PublicJwk, d: ParsedDecision): boolean | Promise<boolean> {
  return crypto.verifyEd25519Async ? crypto.verifyEd25519Async(publicJwk, d.signingInput, d.signature) : crypto.verifyEd25519(publicJwk, d.signingInput, d.signature);
}

/** Check 2: the key that signed `d`, or why it is not trusted. */
function trustedKey(keyring: Keyring, d: ParsedDecision): { ok: true; publicJwk: PublicJwk } | { ok: false; code: VerifyCode; message: string } {
  const key = keyring.get(d.header.kid);
  if (!key) return { ok: false, code: "DECISION_KEY_UNKNOWN", message: `no key ${d.header.kid} in the keyring` };
  if (key.status === "revoked") return { ok: false, code: "DECISION_KEY_REVOKED", message: `key ${d.header.kid} is revoked` };
  return { ok: true, publicJwk: key.publicJwk };
}

const BAD_SIGNATURE = { ok: false, code: "DECISION_SIGNATURE_INVALID", message: "signature does not verify" } as const;

/** Checks 2 and 3 of a parsed decision, with the port's synchronous verify. */
export function verifyParsed(crypto: CryptoPort, keyring: Keyring, d: ParsedDecision): VerifyResult {
  const key = trustedKey(keyring, d);
  if (!key.ok) return key;
  return crypto.verifyEd25519(key.publicJwk, d.signingInput, d.signature) ? { ok: true, decision: d } : { ...BAD_SIGNATURE };
}

/** Checks 2 and 3 of a parsed decision, through `verifySignature` (the same answers as `verifyParsed`). */
export async function verifyParsedAsync(crypto: CryptoPort, keyring: Keyring, d: ParsedDecision): Promise<VerifyResult> {
  const key = trustedKey(keyring, d);
  if (!key.ok) return key;
  return (await verifySignature(crypto, key.publicJwk, d)) ? { ok: true, decision: d } : { ...BAD_SIGNATURE };
}
