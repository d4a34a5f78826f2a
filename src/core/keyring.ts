/** Trusted decision-verification keys (docs/runbooks.md, Rotating the decision signing key): active and retired keys verify, revoked never do. */
import { WritError } from "./errors.js";
import type { PrivateJwk, PublicJwk } from "./ports.js";

export const KEY_STATUSES = ["active", "retired", "revoked"] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export interface KeyringEntry {
  kid: string;
  publicJwk: PublicJwk;
  status: KeyStatus;
}

/** A signing key: the private half never leaves the host that holds it. */
export interface SigningKey {
  kid: string;
  privateJwk: PrivateJwk;
  publicJwk: PublicJwk;
}

export interface Keyring {
  get(kid: string): KeyringEntry | undefined;
  /** Adds a key (status `active` unless given). Re-adding a kid with another key is refused. */
  add(entry: { kid: string; publicJwk: PublicJwk; status?: KeyStatus }): void;
  retire(kid: string): void;
  /** Revocation is final: a revoked key never verifies again. */
  revoke(kid: string): void;
  list(): KeyringEntry[];
  /** JWKS of keys that still verify (active and retired). Revoked keys are left out. */
  jwks(): { keys: PublicJwk[] };
}

function checkJwk(jwk: PublicJwk, kid: string): PublicJwk {
  if (typeof jwk !== "object" || jwk === null || jwk.kty !== "OKP" || jwk.crv !== "Ed25519" || typeof jwk.x !== "string") {
    throw new WritError("KEY_ERROR", `key ${kid}: publicJwk must be an OKP Ed25519 JWK`);
  }
  if ("d" in jwk) throw new WritError("KEY_ERROR", `key ${kid}: publicJwk must not contain the private part`);
  return { kty: "OKP", crv: "Ed25519", x: jwk.x, kid, alg: "EdDSA", use: "sig" };
}

/** Creates a keyring from entries. */
export function createKeyring(entries: Array<{ kid: string; publicJwk: PublicJwk; status?: KeyStatus }> = []): Keyring {
  const keys = new Map<string, KeyringEntry>();
  const ring: Keyring = {
    get: (kid) => keys.get(kid),
    add({ kid, publicJwk, status = "active" }) {
      if (typeof kid !== "string" || kid.length === 0 || kid.length > 200) throw new WritError("KEY_ERROR", "kid must be a non-empty string");
      if (!(KEY_STATUSES as readonly string[]).includes(status)) throw new WritError("KEY_ERROR", `key ${kid}: unknown status ${String(status)}`);
      const jwk = checkJwk(publicJwk, kid);
      const prev = keys.get(kid);
      if (prev && prev.publicJwk.x !== jwk.x) throw new WritError("KEY_ERROR", `key ${kid} is already in the keyring with another public key`);
      if (prev?.status === "revoked") throw new WritError("KEY_ERROR", `key ${kid} was revoked and cannot be added again`);
      keys.set(kid, { kid, publicJwk: jwk, status });
    },
    retire(kid) {
      const k = keys.get(kid);
      if (!k) throw new WritError("NOT_FOUND", `no key ${kid} in the keyring`);
      if (k.status === "revoked") throw new WritError("KEY_ERROR", `key ${kid} is revoked`);
      k.status = "retired";
    },
    revoke(kid) {
      const k = keys.get(kid);
      if (!k) throw new WritError("NOT_FOUND", `no key ${kid} in the keyring`);
      k.status = "revoked";
    },
    list: () => [...keys.values()].map((k) => ({ ...k, publicJwk: { ...k.publicJwk } })),
    jwks: () => ({ keys: [...keys.values()].filter((k) => k.status !== "revoked").map((k) => ({ ...k.publicJwk })) }),
  };
  for (const e of entries) ring.add(e);
  return ring;
}
