/** Request digests: `sha256:<base64url>` over the RFC 8785 canonical form. */
import { canonicalize, canonicalizeData } from "./canonical.js";
import { base64url } from "./encoding.js";
import type { CryptoPort } from "./ports.js";

/** `sha256:<base64url>` of the canonical form of any plain JSON value. */
export function digestOf(crypto: CryptoPort, value: unknown): string {
  return "sha256:" + base64url(crypto.sha256(canonicalize(value)));
}

/**
 * The digest that binds a decision to a request. Computed over the original (unredacted) request.
 * Throws `CANONICAL_JSON` for values that are not plain JSON.
 */
export function computeRequestDigest(crypto: CryptoPort, request: unknown): string {
  return digestOf(crypto, request);
}

/** A short stable identifier derived from parts (not secret; for ids and step keys). */
export function stableId(crypto: CryptoPort, prefix: string, parts: unknown[]): string {
  return prefix + base64url(crypto.sha256(canonicalizeData(parts))).slice(0, 32);
}
