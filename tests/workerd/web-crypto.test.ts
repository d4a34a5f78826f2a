/**
 * The web CryptoPort (src/web/crypto.ts) against node:crypto. Invariants: hashes, MACs and
 * signatures are byte-identical; the synchronous (noble) and asynchronous (WebCrypto) verifies
 * agree with node:crypto on valid, tampered and truncated signatures, other messages and
 * malformed keys, and never throw; generated keys sign and verify across both ports; the web
 * Random fills beyond WebCrypto's 64 KiB per-call limit.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64url } from "../../src/core/encoding.js";
import type { PublicJwk } from "../../src/core/ports.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { webRandom } from "../../src/web/clock.js";
import { webCryptoPort } from "../../src/web/crypto.js";
import { fcRun as fcRunFor } from "../helpers/seed.js";
import { FIXED_KEYS } from "./vectors.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("web-crypto.test", name, numRuns);
const node = defaultCrypto();
const web = webCryptoPort();

describe("the web CryptoPort", () => {
  it("hashes and MACs as node:crypto does", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.string({ maxLength: 80 }), fc.uint8Array({ minLength: 1, maxLength: 100 }), (bytes, text, key) => {
        expect(web.sha256(bytes)).toEqual(new Uint8Array(node.sha256(bytes)));
        expect(web.sha256(text)).toEqual(new Uint8Array(node.sha256(text)));
        expect(web.hmacSha256(key, bytes)).toEqual(new Uint8Array(node.hmacSha256(key, bytes)));
        expect(web.timingSafeEqual(bytes, bytes.slice())).toBe(true);
        if (bytes.length > 0) expect(web.timingSafeEqual(bytes, bytes.map((b, i) => (i === 0 ? b ^ 1 : b)))).toBe(false);
        expect(web.timingSafeEqual(bytes, new Uint8Array(bytes.length + 1))).toBe(false);
      }),
      fcRun("hashes", 60),
    );
  });

  it("signs byte-identically and both verifies agree with node:crypto on every kind of input", async () => {
    const k = FIXED_KEYS.trusted;
    const other = FIXED_KEYS.stranger.publicJwk;
    const badKeys: PublicJwk[] = [{ ...k.publicJwk, x: "" }, { ...k.publicJwk, x: "not base64!" }, { ...k.publicJwk, x: base64url(new Uint8Array(31)) }, { ...k.publicJwk, x: base64url(new Uint8Array(32).fill(0xff)) }];
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.nat({ max: 63 }), fc.nat({ max: 7 }), async (msg, at, bit) => {
        const sig = web.signEd25519(k.privateJwk, msg);
        expect(sig).toEqual(new Uint8Array(node.signEd25519(k.privateJwk, msg)));
        const tampered = sig.slice();
        tampered[at] = tampered[at]! ^ (1 << bit);
        const otherMsg = Uint8Array.from([...msg, 1]);
        const cases: Array<[PublicJwk, Uint8Array, Uint8Array]> = [
          [k.publicJwk, msg, sig],
          [k.publicJwk, msg, tampered],
          [k.publicJwk, otherMsg, sig],
          [k.publicJwk, msg, sig.slice(0, 63)],
          [other, msg, sig],
          ...badKeys.map((b): [PublicJwk, Uint8Array, Uint8Array] => [b, msg, sig]),
        ];
        for (const [pub, m, s] of cases) {
          const expected = node.verifyEd25519(pub, m, s);
          expect(web.verifyEd25519(pub, m, s)).toBe(expected);
          expect(await web.verifyEd25519Async!(pub, m, s)).toBe(expected);
        }
        expect(node.verifyEd25519(k.publicJwk, msg, sig)).toBe(true);
      }),
      fcRun("signatures", 15),
    );
  });

  it("generates keys that sign and verify across both ports", async () => {
    const w = web.generateEd25519();
    const n = node.generateEd25519();
    const msg = new TextEncoder().encode("portable");
    expect(node.verifyEd25519(w.publicJwk, msg, web.signEd25519(w.privateJwk, msg))).toBe(true);
    expect(await web.verifyEd25519Async!(n.publicJwk, msg, node.signEd25519(n.privateJwk, msg))).toBe(true);
    expect(w.privateJwk.x).toBe(w.publicJwk.x);
    expect(() => web.signEd25519({ ...w.privateJwk, d: "short" }, msg)).toThrow(/d is not 32 base64url bytes/);
  });

  it("the web Random fills more than one getRandomValues call holds", () => {
    const big = webRandom.bytes(200_000);
    expect(big.length).toBe(200_000);
    // The last chunk was filled too: 64 KiB of zeros from a strong source does not happen.
    expect(big.subarray(196_608).some((b) => b !== 0)).toBe(true);
    expect(webRandom.bytes(0)).toEqual(new Uint8Array(0));
  });
});
