/** The CryptoPort on node:crypto. Imported key objects are cached (import costs more than verify). */
import nodeCrypto, { type KeyObject } from "node:crypto";
import { cachedIn } from "../core/bounded-cache.js";
import type { CryptoPort, PrivateJwk, PublicJwk } from "../core/ports.js";

const MAX_CACHED = 1024;

// crypto.hash (Node >= 20.12) skips the Hash object: measurably cheaper for small inputs.
const oneShotHash = (nodeCrypto as { hash?: (alg: string, data: Uint8Array | string, enc: "buffer") => Buffer }).hash;

const cached = <K, V>(map: Map<K, V>, k: K, make: () => V): V => cachedIn(map, MAX_CACHED, k, make);

/** Creates the Node implementation of the CryptoPort. */
export function nodeCryptoPort(): CryptoPort {
  const publicKeys = new Map<string, KeyObject | null>();
  const privateKeys = new Map<string, KeyObject>();
  const importPublic = (jwk: PublicJwk): KeyObject | null =>
    cached(publicKeys, jwk.x, () => {
      try {
        return nodeCrypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
      } catch {
        return null;
      }
    });
  return {
    sha256: oneShotHash ? (data) => oneShotHash("sha256", data, "buffer") : (data) => nodeCrypto.createHash("sha256").update(data).digest(),
    hmacSha256: (key, data) => nodeCrypto.createHmac("sha256", key).update(data).digest(),
    timingSafeEqual: (a, b) => a.length === b.length && nodeCrypto.timingSafeEqual(a, b),
    generateEd25519() {
      const { publicKey, privateKey } = nodeCrypto.generateKeyPairSync("ed25519");
      const pub = publicKey.export({ format: "jwk" }) as { x: string };
      const priv = privateKey.export({ format: "jwk" }) as { x: string; d: string };
      const publicJwk: PublicJwk = { kty: "OKP", crv: "Ed25519", x: pub.x };
      const privateJwk: PrivateJwk = { kty: "OKP", crv: "Ed25519", x: priv.x, d: priv.d };
      return { publicJwk, privateJwk };
    },
    signEd25519(privateJwk, data) {
      const key = cached(privateKeys, privateJwk.d, () => nodeCrypto.createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", x: privateJwk.x, d: privateJwk.d }, format: "jwk" }));
      return nodeCrypto.sign(null, data, key);
    },
    verifyEd25519(publicJwk, data, signature) {
      const key = importPublic(publicJwk);
      if (!key || signature.length !== 64) return false;
      try {
        return nodeCrypto.verify(null, data, key, signature);
      } catch {
        return false;
      }
    },
    // The callback form runs the check on libuv's threadpool: the boundary's other work overlaps it.
    verifyEd25519Async(publicJwk, data, signature) {
      const key = importPublic(publicJwk);
      if (!key || signature.length !== 64) return Promise.resolve(false);
      return new Promise<boolean>((resolve) => {
        try {
          nodeCrypto.verify(null, data, key, signature, (err, ok) => resolve(err === null && ok));
        } catch {
          resolve(false);
        }
      });
    },
  };
}
