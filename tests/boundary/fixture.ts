/**
 * The boundary bench on Node (bench.ts with node:crypto, the system random pool and keys made once
 * per process). Shared by every boundary suite.
 */
import type { SigningKey } from "../../src/core/keyring.js";
import type { Store } from "../../src/core/store.js";
import { base64url } from "../../src/core/encoding.js";
import { systemRandom } from "../../src/node/clock.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { makeBenchIn, type Bench, type BenchEnv } from "./bench.js";

export { AUTH_REF, POLICY_REF, SCOPE, ghost, refund, twoStep, type Bench, type BenchEnv, type ConnectorMode } from "./bench.js";

export const crypto = defaultCrypto();

export function makeKey(kid: string): SigningKey {
  const { privateJwk, publicJwk } = crypto.generateEd25519();
  return { kid, privateJwk, publicJwk };
}

/** Keys made once per process (key generation is not what these tests measure). */
export const KEYS = { trusted: makeKey("k-trusted"), revoked: makeKey("k-revoked"), stranger: makeKey("k-stranger") };

let seq = 0;
export function uniqueKey(prefix = "k"): string {
  return `${prefix}-${process.pid}-${++seq}-${base64url(systemRandom.bytes(4))}`;
}

export const NODE_ENV: BenchEnv = { crypto, random: systemRandom, keys: KEYS, uniqueKey };

export function makeBench(store: Store, opts: { fromStore?: boolean } = {}): Bench {
  return makeBenchIn(NODE_ENV, store, opts);
}
