/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
 * `${webhook-id}.${webhook-timestamp}.${body}` with a `whsec_<base64>` secret, sent as
 * `webhook-signature: v1,<base64> v1,<base64>` (several signatures allow key rotation).
 */
import { base64, fromBase64, utf8 } from "./encoding.js";
import { WritError } from "./errors.js";
import type { CryptoPort } from "./ports.js";

export interface WebhookHeaders {
  id: string | undefined;
  timestamp: string | undefined;
  signature: string | undefined;
}

/** @defaultValue 300 seconds either way */
export const WEBHOOK_TOLERANCE_SECONDS = 300;
const MAX_ID = 256;

/** Decodes a `whsec_` secret; throws INVALID_OPTION (never echoing the secret). */
export function webhookSecretBytes(secret: string): Uint8Array {
  const raw = typeof secret === "string" && secret.startsWith("whsec_") ? secret.slice(6) : secret;
  const bytes = typeof raw === "string" ? fromBase64(raw) : null;
  if (!bytes || bytes.length < 16) throw new WritError("INVALID_OPTION", "a webhook secret must be whsec_ followed by base64 of at least 16 bytes");
  return bytes;
}

/** Signs like a sender does (tests, examples, and connectors that call back). */
export function signWebhook(crypto: CryptoPort, secret: string, id: string, timestampSeconds: number, body: string): string {
  const mac = crypto.hmacSha256(webhookSecretBytes(secret), utf8(`${id}.${timestampSeconds}.${body}`));
  return `v1,${base64(mac)}`;
}

/**
 * Verifies a delivery against any of `secrets`. Returns the index of the secret that verified.
 * Throws WEBHOOK_MALFORMED, WEBHOOK_TIMESTAMP_STALE or WEBHOOK_SIGNATURE_INVALID; nothing secret in messages.
 */
export function verifyWebhook(crypto: CryptoPort, secrets: readonly Uint8Array[], headers: WebhookHeaders, body: string, nowMs: number, toleranceSeconds = WEBHOOK_TOLERANCE_SECONDS): number {
  const { id, timestamp, signature } = headers;
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_ID) throw new WritError("WEBHOOK_MALFORMED", "webhook-id header is missing or too long");
  if (typeof timestamp !== "string" || !/^\d{1,12}$/.test(timestamp)) throw new WritError("WEBHOOK_MALFORMED", "webhook-timestamp header must be integer seconds");
  if (typeof signature !== "string" || signature.length === 0 || signature.length > 4096) throw new WritError("WEBHOOK_MALFORMED", "webhook-signature header is missing");
  const ts = Number(timestamp);
  if (Math.abs(nowMs / 1000 - ts) > toleranceSeconds) throw new WritError("WEBHOOK_TIMESTAMP_STALE", `webhook-timestamp is more than ${toleranceSeconds}s away from now`);
  const given: Uint8Array[] = [];
  for (const part of signature.split(" ")) {
    const [version, sig] = part.split(",", 2);
    if (version !== "v1" || !sig) continue;
    const bytes = fromBase64(sig);
    if (bytes && bytes.length === 32) given.push(bytes);
  }
  if (given.length === 0) throw new WritError("WEBHOOK_MALFORMED", "webhook-signature has no v1 signature");
  const signed = utf8(`${id}.${timestamp}.${body}`);
  for (let i = 0; i < secrets.length; i++) {
    const expected = crypto.hmacSha256(secrets[i]!, signed);
    for (const g of given) if (crypto.timingSafeEqual(expected, g)) return i;
  }
  throw new WritError("WEBHOOK_SIGNATURE_INVALID", "no webhook signature verifies with this connector's secret");
}
