/**
 * Ports: everything the pure core needs from the outside world comes in through these interfaces.
 * Node implementations live outside `src/core` (see `src/node/`).
 */

/** Wall-clock time and timers. Tests inject a frozen or manual clock. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` after `ms`; returns a cancel function. */
  setTimer(ms: number, fn: () => void): () => void;
  /**
   * Optional, for a clock read from elsewhere (a PostgreSQL store's: the database server's,
   * sampled): resolves once it is set; rejects when setting it failed (a later call tries again).
   * A worker waits for it before it claims.
   */
  ready?(): Promise<void>;
}

/** Entropy. */
export interface Random {
  /** `n` cryptographically strong random bytes. */
  bytes(n: number): Uint8Array;
}

/** A public key in JWK form (OKP / Ed25519). */
export interface PublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid?: string;
  alg?: "EdDSA";
  use?: "sig";
}

/** A private key in JWK form (OKP / Ed25519); `d` is secret. */
export interface PrivateJwk extends PublicJwk {
  d: string;
}

/**
 * Cryptography. Synchronous by design, with one optional asynchronous slot: Node's hashes and
 * signatures are synchronous and the boundary's hot path avoids needless promise hops, but a
 * signature check costs more than everything else the boundary does before it reaches the store.
 * `verifyEd25519Async` lets that one check run off the JavaScript thread (Node: libuv's threadpool,
 * while the thread is busy; a WebCrypto port: `crypto.subtle.verify`, async by nature), so the
 * boundary's other work overlaps it (docs/boundary.md, "Signature checks off the main thread").
 */
export interface CryptoPort {
  /** SHA-256; a string is hashed as its UTF-8 bytes. */
  sha256(data: Uint8Array | string): Uint8Array;
  hmacSha256(key: Uint8Array, data: Uint8Array): Uint8Array;
  /** Constant-time comparison of equal-length byte arrays (false when lengths differ). */
  timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
  generateEd25519(): { privateJwk: PrivateJwk; publicJwk: PublicJwk };
  /** Signs with a private JWK. Implementations may cache imported keys. */
  signEd25519(privateJwk: PrivateJwk, data: Uint8Array): Uint8Array;
  /** Verifies; never throws for bad signatures or malformed keys (returns false). */
  verifyEd25519(publicJwk: PublicJwk, data: Uint8Array, signature: Uint8Array): boolean;
  /**
   * Optional: the same verification as `verifyEd25519`, asynchronously (it must give the same
   * answer for every input, and resolve false, never reject, for bad signatures or malformed
   * keys). The boundary's decision check uses it when present; everything else, and the boundary
   * without it, uses `verifyEd25519`.
   */
  verifyEd25519Async?(publicJwk: PublicJwk, data: Uint8Array, signature: Uint8Array): Promise<boolean>;
}
