/** Strict base64url decoding (src/core/encoding.ts): a string decodes iff it is the canonical encoding of its bytes. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { base64url, fromBase64url } from "../src/core/encoding.js";
import { fcRun as fcRunFor } from "./helpers/seed.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("encoding.test", name, numRuns);
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

describe("fromBase64url", () => {
  it("decodes every encoding back to its bytes (as Buffer does)", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const s = base64url(bytes);
        expect(s).toBe(Buffer.from(bytes).toString("base64url"));
        expect(fromBase64url(s)).toEqual(new Uint8Array(bytes));
      }),
      fcRun("round trip", 500),
    );
  });

  it("accepts a string exactly when it is the canonical encoding of the bytes it names", () => {
    const ch = fc.oneof(fc.constantFrom(...ALPHABET), fc.constantFrom("=", "+", "/", ".", " ", "é", "\u0000"));
    fc.assert(
      fc.property(fc.array(ch, { maxLength: 40 }).map((a) => a.join("")), (s) => {
        const d = fromBase64url(s);
        const canonical = [...s].every((c) => ALPHABET.includes(c)) && s.length % 4 !== 1 && Buffer.from(Buffer.from(s, "base64url")).toString("base64url") === s;
        expect(d !== null).toBe(canonical);
        if (d) expect(base64url(d)).toBe(s);
      }),
      fcRun("canonical only", 2000),
    );
  });

  it("refuses foreign characters, a lone trailing character and non-zero trailing bits", () => {
    for (const s of ["A", "AAAAA", "AB", "AAF", "AA=", "AA+A", "A/AA", "AAA.", "é", "AAAAAR"]) expect(fromBase64url(s), s).toBeNull();
    expect(fromBase64url("")).toEqual(new Uint8Array(0));
    expect(fromBase64url("AQ")).toEqual(new Uint8Array([1]));
    expect(fromBase64url("AQI")).toEqual(new Uint8Array([1, 2]));
  });
});
