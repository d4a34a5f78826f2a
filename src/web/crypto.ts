/**
 * The CryptoPort on web-standard APIs, for runtimes without node:crypto (workerd, browsers, Deno):
 * docs/portable-core.md, "The web crypto port".
 *
 * - `verifyEd25519Async`, the boundary's signature check, is WebCrypto's `crypto.subtle.verify`
 *   (native, asynchronous by nature).
 * - The port's synchronous operations (SHA-256, HMAC-SHA-256, Ed25519 sign and verify, key
 *   generation) cannot be WebCrypto, whose every operation returns a promise, and the core hashes
 *   synchronously throughout (request digests, journal chaining, ids). They run on the audited,
 *   dependency-free `@noble/hashes` and `@noble/ed25519`, pinned to exact versions.
 *
 * Both verifiers apply the same rule set as node:crypto for the inputs the boundary sees: a 64-byte
 * signature over a canonical 32-byte public key; noble runs its strict RFC 8032 branch
 * (`zip215: false`), not its ZIP-215 default.
 */
import * as ed from "@noble/ed25519";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256, sha512 } from "@noble/hashes/sha2.js";
import { base64url, fromBase64url, utf8 } from "../core/encoding.js";
import { cachedIn } from "../core/bounded-cache.js";
import type { CryptoPort, PrivateJwk, PublicJwk } from "../core/ports.js";

// noble's synchronous Ed25519 needs a synchronous SHA-512; the same pinned package provides it.
ed.hashes.sha512 = sha512;

const MAX_CACHED = 1024;
const STRICT = { zip215: false } as const;

const cached = <K, V>(map: Map<K, V>, k: K, make: () => V): V => cachedIn(map, MAX_CACHED, k, make);

/** The 32 key bytes of a base64url JWK member, or null when it is not exactly that. */
function keyBytes(v: unknown): Uint8Array | null {
  if (typeof v !== "string") return null;
  const b = fromBase64url(v);
  return b !== null && b.length === 32 ? b : null;
}

/** The subset of WebCrypto this port calls (workerd, browsers, Deno and Node >= 20 all have it). */
interface SubtleEd25519 {
  importKey(format: "raw", key: Uint8Array, algorithm: { name: "Ed25519" }, extractable: false, usages: ["verify"]): Promise<unknown>;
  verify(algorithm: { name: "Ed25519" }, key: unknown, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

function subtle(): SubtleEd25519 {
  const s = (globalThis as { crypto?: { subtle?: SubtleEd25519 } }).crypto?.subtle;
  if (s === undefined) throw new Error("webCryptoPort: this runtime has no crypto.subtle");
  return s;
}

/**
 * Creates the web implementation of the CryptoPort. Imported WebCrypto keys are cached per public
 * key (an import costs about as much as a verify).
 */
export function webCryptoPort(): CryptoPort {
  const imported = new Map<string, Promise<unknown>>();
  const importPublic = (x: string, raw: Uint8Array): Promise<unknown> =>
    cached(imported, x, () => {
      const p = subtle()
        .importKey("raw", raw, { name: "Ed25519" }, false, ["verify"])
        .catch(() => null);
      return p;
    });
  const sha = (data: Uint8Array | string): Uint8Array => sha256(typeof data === "string" ? utf8(data) : data);
  return {
    sha256: sha,
    hmacSha256: (key, data) => hmac(sha256, key, data),
    timingSafeEqual(a, b) {
      if (a.length !== b.length) return false;
      let diff = 0;
      for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
      return diff === 0;
    },
    generateEd25519() {
      const { secretKey, publicKey } = ed.keygen();
      const x = base64url(publicKey);
      const publicJwk: PublicJwk = { kty: "OKP", crv: "Ed25519", x };
      const privateJwk: PrivateJwk = { kty: "OKP", crv: "Ed25519", x, d: base64url(secretKey) };
      return { publicJwk, privateJwk };
    },
    signEd25519(privateJwk, data) {
      const d = keyBytes(privateJwk.d);
      if (d === null) throw new Error("signEd25519: the private key's d is not 32 base64url bytes");
      return ed.sign(data, d);
    },
    verifyEd25519(publicJwk, data, signature) {
      const x = keyBytes(publicJwk?.x);
      if (x === null || signature.length !== 64) return false;
      try {
        return ed.verify(signature, data, x, STRICT);
      } catch {
        return false;
      }
    },
    async verifyEd25519Async(publicJwk, data, signature) {
      const x = keyBytes(publicJwk?.x);
      if (x === null || signature.length !== 64) return false;
      const key = await importPublic(publicJwk.x, x);
      if (key === null) return false;
      try {
        return await subtle().verify({ name: "Ed25519" }, key, signature, data);
      } catch {
        return false;
      }
    },
  };
}
