/** The CryptoPort on node:crypto. Imported key objects are cached (import costs more than verify). */
import nodeCrypto, { type KeyObject } from "node:crypto";
import { performance } from "node:perf_hooks";
import { cachedIn } from "../core/bounded-cache.js";
import { WritError } from "../core/errors.js";
import type { CryptoPort, PrivateJwk, PublicJwk } from "../core/ports.js";

const MAX_CACHED = 1024;

// crypto.hash (Node >= 20.12) skips the Hash object: measurably cheaper for small inputs.
const oneShotHash = (nodeCrypto as { hash?: (alg: string, data: Uint8Array | string, enc: "buffer") => Buffer }).hash;

const cached = <K, V>(map: Map<K, V>, k: K, make: () => V): V => cachedIn(map, MAX_CACHED, k, make);

/**
 * Where `verifyEd25519Async` checks a signature (docs/boundary.md, "Signature checks off the main
 * thread"): `"auto"` (the default) on libuv's threadpool while the JavaScript thread has been busy
 * lately and on the JavaScript thread otherwise; `"threadpool"` always there; `"inline"` always on
 * the JavaScript thread. The answer is the same wherever it is computed.
 */
export type VerifyPlacement = "auto" | "threadpool" | "inline";

export interface NodeCryptoOptions {
  /** @defaultValue "auto" */
  verify?: VerifyPlacement;
}

/**
 * The JavaScript thread's recent load, for `"auto"`: the share of the time since the last reading
 * (taken when a check asks, at most once per WINDOW_MS) that the event loop spent running rather
 * than waiting; the verdict holds until the next reading. A hop to the threadpool costs two thread
 * wake-ups and a callback, which on a small or shared machine cost more than the check itself: it
 * pays only when the thread has other work to overlap. Without the gauge (a runtime whose
 * `performance` lacks `eventLoopUtilization`), every check goes to the threadpool, as before.
 */
const WINDOW_MS = 100;
const BUSY = 0.75;

function loadGauge(): () => boolean {
  if (typeof performance.eventLoopUtilization !== "function") return () => true;
  let mark = performance.eventLoopUtilization();
  let markAt = performance.now();
  let busy = false;
  return () => {
    const now = performance.now();
    if (now - markAt >= WINDOW_MS) {
      const next = performance.eventLoopUtilization();
      busy = performance.eventLoopUtilization(next, mark).utilization >= BUSY;
      mark = next;
      markAt = now;
    }
    return busy;
  };
}

/** Creates the Node implementation of the CryptoPort. */
export function nodeCryptoPort(options: NodeCryptoOptions = {}): CryptoPort {
  if (typeof options !== "object" || options === null) throw new WritError("INVALID_OPTION", "nodeCryptoPort: options must be an object");
  const unknown = Object.keys(options).filter((k) => k !== "verify");
  if (unknown.length > 0) throw new WritError("INVALID_OPTION", `nodeCryptoPort: unknown option ${JSON.stringify(unknown[0]!.slice(0, 40))} (the option is verify)`);
  const placement: unknown = options.verify === undefined ? "auto" : options.verify;
  if (placement !== "auto" && placement !== "threadpool" && placement !== "inline") {
    const got = typeof placement === "string" ? JSON.stringify(placement.slice(0, 40)) : typeof placement;
    throw new WritError("INVALID_OPTION", `nodeCryptoPort: verify must be "auto", "threadpool" or "inline" (got ${got})`);
  }
  const offload: () => boolean = placement === "auto" ? loadGauge() : placement === "threadpool" ? () => true : () => false;
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
  /** The synchronous check on the JavaScript thread; false for anything that does not verify. */
  const verifyHere = (key: KeyObject, data: Uint8Array, signature: Uint8Array): boolean => {
    try {
      return nodeCrypto.verify(null, data, key, signature);
    } catch {
      return false;
    }
  };
  return {
    sha256: oneShotHash ? (data) => oneShotHash("sha256", data, "buffer") : (data) => nodeCrypto.createHash("sha256").update(data).digest(),
    hmacSha256: (key, data) => nodeCrypto.createHmac("sha256", key).update(data).digest(),
    timingSafeEqual: (a, b) => a.length === b.length && nodeCrypto.timingSafeEqual(a, b),
    generateEd25519() {
      // The key pair comes out as JWK from the generation itself. Exporting a fresh KeyObject
      // instead (`key.export({ format: "jwk" })`) can deadlock Node 20 for good: the export holds
      // the key's mutex while it allocates, a garbage collection then runs the finished key
      // generation job's destructor, which takes the same mutex (seen as a hung test worker; a
      // loop of generate-and-export hangs within a few thousand keys; docs/security.md, "Key generation never hangs").
      const { publicKey: pub, privateKey: priv } = nodeCrypto.generateKeyPairSync("ed25519", { publicKeyEncoding: { format: "jwk" }, privateKeyEncoding: { format: "jwk" } }) as unknown as {
        publicKey: { x: string };
        privateKey: { x: string; d: string };
      };
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
      return verifyHere(key, data, signature);
    },
    // The callback form runs the check on libuv's threadpool, where the boundary's other work
    // overlaps it; on an idle thread the synchronous form answers sooner and costs less.
    verifyEd25519Async(publicJwk, data, signature) {
      const key = importPublic(publicJwk);
      if (!key || signature.length !== 64) return Promise.resolve(false);
      if (!offload()) return Promise.resolve(verifyHere(key, data, signature));
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
