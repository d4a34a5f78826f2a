/**
 * Decisions as JWS compact tokens (EdDSA / Ed25519), the keyring, and interoperability with `jose`
 * in both directions (SPEC 2, checks 1-3 of SPEC 3.1).
 */
import fc from "fast-check";
import { CompactSign, compactVerify, createLocalJWKSet, decodeProtectedHeader, importJWK } from "jose";
import { describe, expect, it } from "vitest";
import {
  DECISION_TYP,
  MAX_DECISION_LENGTH,
  WritError,
  base64url,
  createKeyring,
  generateSigningKey,
  nodeCryptoPort,
  requestDigest,
  signDecision,
  utf8,
  verifyDecision,
  type DecisionInput,
  type DecisionPayload,
  type Keyring,
  type PublicJwk,
  type SigningKey,
  type VerifyResult,
} from "../src/index.js";
import { parseDecision, verifyParsed, verifyParsedAsync, type ParsedDecision } from "../src/core/decision.js";
import { fcRun as fcRunFor } from "./helpers/seed.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("decision.test", name, numRuns);

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const T0 = 1_767_225_600_000; // fixed issuedAt: no clock involved
const crypto = nodeCryptoPort();

const request = {
  tenantId: "t1",
  spaceId: "s1",
  action: "payments.refund",
  actionVersion: "1",
  actor: { type: "agent", id: "agent-7" },
  authorityRef: "auth-1",
  params: { paymentId: "pay_123", amount: 1250, currency: "EUR" },
  idempotencyKey: "refund-pay_123",
};

const expectedPayload: DecisionPayload = {
  v: 1,
  decisionId: "dec-0001",
  result: "ALLOW",
  requestDigest: requestDigest(request),
  tenantId: "t1",
  spaceId: "s1",
  authorityRef: "auth-1",
  policyRef: "policy:v1",
  issuedAt: T0,
  reasons: ["refund.small-amount"],
};
/** What a caller passes to signDecision for that payload (`v` is Writ's). */
const { v: _v, ...input } = expectedPayload;

const keyA = generateSigningKey({ kid: "key-a" });
const keyB = generateSigningKey({ kid: "key-b" });

function ringOf(...keys: SigningKey[]): Keyring {
  return createKeyring(keys.map((k) => ({ kid: k.kid, publicJwk: k.publicJwk })));
}

const b64 = (text: string): string => base64url(utf8(text));
const json = (v: unknown): string => JSON.stringify(v);
const HEADER = (kid: string): string => json({ alg: "EdDSA", kid, typ: DECISION_TYP });

/** Signs arbitrary header and payload bytes with a real Ed25519 key: only the format can be wrong. */
function forge(key: SigningKey, header: string | Uint8Array, payload: string | Uint8Array): string {
  const seg = (x: string | Uint8Array): string => base64url(typeof x === "string" ? utf8(x) : x);
  const signingInput = `${seg(header)}.${seg(payload)}`;
  return `${signingInput}.${base64url(crypto.signEd25519(key.privateJwk, utf8(signingInput)))}`;
}

function expectRefused(r: VerifyResult, code: string): void {
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.code).toBe(code);
}

function payloadOf(token: string): unknown {
  return JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));
}

describe("sign and verify", () => {
  // Invariant: a signed decision verifies against a keyring holding its key and yields the signed payload.
  it("round-trips", () => {
    const token = signDecision(keyA, input);
    const r = verifyDecision(token, ringOf(keyA));
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.decision.payload).toEqual(expectedPayload);
      expect(r.decision.header).toEqual({ alg: "EdDSA", kid: "key-a", typ: "writ-decision+jws" });
    }
  });

  // Invariant: the protected header is exactly {alg: "EdDSA", kid, typ: "writ-decision+jws"}, nothing more.
  it("writes the header SPEC 2 prescribes", () => {
    const token = signDecision(keyA, input);
    const header: unknown = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8"));
    expect(header).toStrictEqual({ alg: "EdDSA", kid: "key-a", typ: "writ-decision+jws" });
    expect(decodeProtectedHeader(token)).toStrictEqual({ alg: "EdDSA", kid: "key-a", typ: "writ-decision+jws" });
  });

  // Invariant: approvalRef, when given, is signed and comes back; when absent it is not in the payload.
  it("carries an optional approvalRef", () => {
    const withRef = verifyDecision(signDecision(keyA, { ...input, approvalRef: "appr-9" }), ringOf(keyA));
    expect(withRef.ok && withRef.decision.payload.approvalRef).toBe("appr-9");
    expect(payloadOf(signDecision(keyA, input))).not.toHaveProperty("approvalRef");
  });

  // Invariant: a decision signed by one key does not verify under another key's kid.
  it("fails the signature check when the kid names a different key", () => {
    const token = signDecision(keyB, input);
    const [, p, s] = token.split(".") as [string, string, string];
    const relabelled = `${b64(HEADER("key-a"))}.${p}.${s}`;
    expectRefused(verifyDecision(relabelled, ringOf(keyA, keyB)), "DECISION_SIGNATURE_INVALID");
  });

  // Invariant: Writ refuses to sign a payload it would itself reject as malformed.
  it("refuses to sign an invalid payload", () => {
    for (const bad of [{ result: "MAYBE" }, { issuedAt: 1.5 }, { issuedAt: -1 }, { tenantId: "" }, { reasons: [7] }]) {
      const e = (() => {
        try {
          signDecision(keyA, { ...input, ...bad } as unknown as DecisionInput);
        } catch (err) {
          return err;
        }
        return undefined;
      })();
      expect(e).toBeInstanceOf(WritError);
      expect((e as WritError).code).toBe("INVALID_ARGUMENT");
    }
  });
});

describe("interoperability with jose", () => {
  // Invariant: jose verifies a Writ decision with the public JWK, and reads the same header and payload.
  it("jose compactVerify accepts a Writ decision (importJWK)", async () => {
    const token = signDecision(keyA, input);
    const { payload, protectedHeader } = await compactVerify(token, await importJWK(keyA.publicJwk, "EdDSA"));
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(expectedPayload);
    expect(protectedHeader).toEqual({ alg: "EdDSA", kid: "key-a", typ: DECISION_TYP });
  });

  // Invariant: the keyring's JWKS is a standard JWKS: jose picks the key by kid and verifies; revoked keys drop out of it.
  it("jose verifies through createLocalJWKSet(keyring.jwks()), and stops once the key is revoked", async () => {
    const ring = ringOf(keyA, keyB);
    const tokenA = signDecision(keyA, input);
    const tokenB = signDecision(keyB, input);
    const { payload } = await compactVerify(tokenA, createLocalJWKSet(ring.jwks()));
    expect(JSON.parse(new TextDecoder().decode(payload))).toEqual(expectedPayload);
    await expect(compactVerify(tokenB, createLocalJWKSet(ring.jwks()))).resolves.toHaveProperty("protectedHeader.kid", "key-b");
    ring.revoke("key-a");
    await expect(compactVerify(tokenA, createLocalJWKSet(ring.jwks()))).rejects.toHaveProperty("code", "ERR_JWKS_NO_MATCHING_KEY");
    await expect(compactVerify(tokenB, createLocalJWKSet(ring.jwks()))).resolves.toHaveProperty("protectedHeader.kid", "key-b");
  });

  // Invariant: jose rejects a Writ decision whose payload was altered (the signature covers it).
  it("jose rejects a tampered Writ decision", async () => {
    const [h, , s] = signDecision(keyA, input).split(".") as [string, string, string];
    const forged = `${h}.${b64(json({ ...expectedPayload, result: "DENY" }))}.${s}`;
    await expect(compactVerify(forged, await importJWK(keyA.publicJwk, "EdDSA"))).rejects.toHaveProperty("code", "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
  });

  // Invariant: a decision minted by jose (any JOSE library) with the same header verifies in Writ.
  // jose signs with a key it imports from a JWK: a key jose generates itself would have to be
  // exported as JWK for Writ's keyring, and exporting a freshly generated key can deadlock Node 20
  // (src/node/crypto.ts; it hung this suite once).
  it.each([
    ["importJWK(jwk, 'EdDSA')", (jwk: object) => importJWK(jwk, "EdDSA")],
    ["importJWK(jwk, 'Ed25519')", (jwk: object) => importJWK(jwk, "Ed25519")],
  ])("Writ verifies a token signed by jose CompactSign, key from %s", async (_name, load) => {
    const fresh = generateSigningKey({ kid: "jose-key" });
    const privateKey = await load({ ...fresh.privateJwk });
    const publicJwk = { kty: "OKP", crv: "Ed25519", x: fresh.publicJwk.x };
    const ring = createKeyring([{ kid: "jose-key", publicJwk: publicJwk as PublicJwk }]);
    const payload = { ...expectedPayload, decisionId: "dec-jose", approvalRef: "appr-1" };
    const token = await new CompactSign(utf8(json(payload))).setProtectedHeader({ alg: "EdDSA", kid: "jose-key", typ: DECISION_TYP }).sign(privateKey);
    const r = verifyDecision(token, ring);
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.decision.payload).toEqual(payload);
      expect(r.decision.header.kid).toBe("jose-key");
    }
    // header members in another order are just as valid
    const reordered = await new CompactSign(utf8(json(payload))).setProtectedHeader({ typ: DECISION_TYP, kid: "jose-key", alg: "EdDSA" }).sign(privateKey);
    expect(verifyDecision(reordered, ring).ok).toBe(true);
    // and the jose token is still bound to its key and payload
    expectRefused(verifyDecision(token, ringOf(keyA)), "DECISION_KEY_UNKNOWN");
    const [h, , s] = token.split(".") as [string, string, string];
    expectRefused(verifyDecision(`${h}.${b64(json({ ...payload, result: "DENY" }))}.${s}`, ring), "DECISION_SIGNATURE_INVALID");
  });
});

describe("keyring", () => {
  // Invariant: active and retired keys verify; revoked keys never do (DECISION_KEY_REVOKED), and revocation is final.
  it("verifies with active and retired keys, never with revoked ones", () => {
    const ring = ringOf(keyA);
    const token = signDecision(keyA, input);
    expect(ring.get("key-a")?.status).toBe("active");
    expect(verifyDecision(token, ring).ok).toBe(true);
    ring.retire("key-a");
    expect(ring.get("key-a")?.status).toBe("retired");
    expect(verifyDecision(token, ring).ok).toBe(true);
    ring.revoke("key-a");
    expectRefused(verifyDecision(token, ring), "DECISION_KEY_REVOKED");
    // revocation cannot be undone: not by retiring, not by re-adding the same key
    expect(() => ring.retire("key-a")).toThrow(WritError);
    expect(() => ring.add({ kid: "key-a", publicJwk: keyA.publicJwk })).toThrow(expect.objectContaining({ code: "KEY_ERROR" }));
    expectRefused(verifyDecision(token, ring), "DECISION_KEY_REVOKED");
    expectRefused(verifyDecision(token, createKeyring([{ kid: "key-a", publicJwk: keyA.publicJwk, status: "revoked" }])), "DECISION_KEY_REVOKED");
  });

  // Invariant: a kid not in the keyring is DECISION_KEY_UNKNOWN, even when the signature itself is good.
  it("reports an unknown kid", () => {
    expectRefused(verifyDecision(signDecision(keyB, input), ringOf(keyA)), "DECISION_KEY_UNKNOWN");
    expectRefused(verifyDecision(signDecision(keyA, input), createKeyring()), "DECISION_KEY_UNKNOWN");
  });

  // Invariant: jwks() lists only keys that still verify, public parts only.
  it("leaves revoked keys out of jwks()", () => {
    const keyC = generateSigningKey({ kid: "key-c" });
    const ring = ringOf(keyA, keyB, keyC);
    ring.retire("key-b");
    ring.revoke("key-c");
    const jwks = ring.jwks();
    expect(jwks.keys.map((k) => k.kid)).toEqual(["key-a", "key-b"]);
    for (const k of jwks.keys) {
      expect(k).not.toHaveProperty("d");
      expect(k).toMatchObject({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig" });
    }
    expect(ring.list().map((k) => [k.kid, k.status])).toEqual([
      ["key-a", "active"],
      ["key-b", "retired"],
      ["key-c", "revoked"],
    ]);
  });

  // Invariant: a kid is bound to one key: adding another key under it is refused and the original keeps verifying.
  it("refuses a different key under an existing kid", () => {
    const ring = ringOf(keyA);
    expect(() => ring.add({ kid: "key-a", publicJwk: keyB.publicJwk })).toThrow(expect.objectContaining({ code: "KEY_ERROR" }));
    expect(ring.get("key-a")?.publicJwk.x).toBe(keyA.publicJwk.x);
    expect(verifyDecision(signDecision(keyA, input), ring).ok).toBe(true);
    expectRefused(verifyDecision(signDecision({ ...keyB, kid: "key-a" }, input), ring), "DECISION_SIGNATURE_INVALID");
    expect(() => createKeyring([{ kid: "k", publicJwk: keyA.publicJwk }, { kid: "k", publicJwk: keyB.publicJwk }])).toThrow(WritError);
  });

  // Invariant: a private JWK (with "d") is never accepted as a verification key, nor is a non-Ed25519 key.
  it("refuses private and foreign JWKs", () => {
    const ring = createKeyring();
    expect(() => ring.add({ kid: "p", publicJwk: keyA.privateJwk })).toThrow(expect.objectContaining({ code: "KEY_ERROR" }));
    expect(() => ring.add({ kid: "ec", publicJwk: { kty: "EC", crv: "P-256", x: "a", y: "b" } as unknown as PublicJwk })).toThrow(expect.objectContaining({ code: "KEY_ERROR" }));
    expect(() => ring.add({ kid: "", publicJwk: keyA.publicJwk })).toThrow(expect.objectContaining({ code: "KEY_ERROR" }));
    expect(ring.list()).toEqual([]);
  });
});

describe("malformed decisions are DECISION_MALFORMED", () => {
  const ring = ringOf(keyA);
  const good = signDecision(keyA, input);
  const [gh, gp, gs] = good.split(".") as [string, string, string];
  const header = HEADER("key-a");
  const body = json(expectedPayload);
  const withPayload = (patch: Record<string, unknown>): string => forge(keyA, header, json({ ...expectedPayload, ...patch }));
  const withHeader = (h: unknown): string => forge(keyA, json(h), body);
  const { issuedAt: _omitIssued, ...noIssuedAt } = expectedPayload;

  // Invariant (control): the forging helper yields tokens that verify when nothing is wrong, so each case below fails for its stated reason.
  it("control: a forged but well-formed token verifies", () => {
    expect(verifyDecision(forge(keyA, header, body), ring).ok).toBe(true);
    expect(verifyDecision(withPayload({}), ring).ok).toBe(true);
  });

  const longReasons = Array.from({ length: 12 }, (_, i) => `${i}`.padEnd(1500, "x"));
  const cases: Array<[name: string, token: unknown]> = [
    ["a number", 42],
    ["null", null],
    ["undefined", undefined],
    ["an object", { token: good }],
    ["an array of parts", [gh, gp, gs]],
    ["bytes", utf8(good)],
    ["the empty string", ""],
    ["two parts", `${gh}.${gp}`],
    ["four parts", `${good}.${gs}`],
    ["an empty signature", `${gh}.${gp}.`],
    ["base64 padding on the signature", `${good}==`],
    ["base64 padding on the header", `${gh}=.${gp}.${gs}`],
    ["standard base64 '+' in a segment", `${gh}.${gp}.+${gs.slice(1)}`],
    ["standard base64 '/' in a segment", `/${gh.slice(1)}.${gp}.${gs}`],
    ["whitespace in a segment", `${gh}.${gp} .${gs}`],
    ["an extra character in the payload segment", `${gh}.${gp}A.${gs}`],
    ["a 63-byte signature", `${gh}.${gp}.${base64url(crypto.signEd25519(keyA.privateJwk, utf8(`${gh}.${gp}`)).slice(0, 63))}`],
    ["a 65-byte signature", `${gh}.${gp}.${base64url(new Uint8Array([...crypto.signEd25519(keyA.privateJwk, utf8(`${gh}.${gp}`)), 0]))}`],
    ["a non-JSON payload", forge(keyA, header, "not json")],
    ["a non-JSON header", forge(keyA, "{alg:EdDSA}", body)],
    ["a payload that is not UTF-8", forge(keyA, header, new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))],
    ["duplicate keys in the payload", forge(keyA, header, json({ ...expectedPayload, result: "DENY" }).slice(0, -1) + ',"result":"ALLOW"}')],
    ["duplicate keys in the header", forge(keyA, header.slice(0, -1) + ',"kid":"key-a"}', body)],
    ["a __proto__ key in the payload", forge(keyA, header, body.slice(0, -1) + ',"__proto__":{"result":"ALLOW"}}')],
    ["alg none, unsigned", `${b64(json({ alg: "none", kid: "key-a", typ: DECISION_TYP }))}.${gp}.`],
    ["alg none, with a signature", withHeader({ alg: "none", kid: "key-a", typ: DECISION_TYP })],
    ["alg HS256", withHeader({ alg: "HS256", kid: "key-a", typ: DECISION_TYP })],
    ["alg ES256", withHeader({ alg: "ES256", kid: "key-a", typ: DECISION_TYP })],
    ["alg missing", withHeader({ kid: "key-a", typ: DECISION_TYP })],
    ["typ JWT", withHeader({ alg: "EdDSA", kid: "key-a", typ: "JWT" })],
    ["typ in another case", withHeader({ alg: "EdDSA", kid: "key-a", typ: "WRIT-DECISION+JWS" })],
    ["typ missing", withHeader({ alg: "EdDSA", kid: "key-a" })],
    ["kid missing", withHeader({ alg: "EdDSA", typ: DECISION_TYP })],
    ["kid empty", withHeader({ alg: "EdDSA", kid: "", typ: DECISION_TYP })],
    ["kid not a string", withHeader({ alg: "EdDSA", kid: 1, typ: DECISION_TYP })],
    ["an extra header field (jku)", withHeader({ alg: "EdDSA", kid: "key-a", typ: DECISION_TYP, jku: "https://attacker.example/jwks" })],
    ["an extra header field (crit/b64)", withHeader({ alg: "EdDSA", kid: "key-a", typ: DECISION_TYP, crit: ["b64"], b64: false })],
    ["a header that is an array", withHeader(["EdDSA", "key-a", DECISION_TYP])],
    ["a header that is null", withHeader(null)],
    ["a payload that is an array", forge(keyA, header, json([expectedPayload]))],
    ["a payload that is a string", forge(keyA, header, json(body))],
    ["an unknown payload field", withPayload({ admin: true })],
    ["result MAYBE", withPayload({ result: "MAYBE" })],
    ["result in lower case", withPayload({ result: "allow" })],
    ["v 2", withPayload({ v: 2 })],
    ["issuedAt a float", withPayload({ issuedAt: T0 + 0.5 })],
    ["issuedAt negative", withPayload({ issuedAt: -1 })],
    ["issuedAt a string", withPayload({ issuedAt: String(T0) })],
    ["issuedAt beyond safe integers", withPayload({ issuedAt: 2 ** 53 })],
    ["issuedAt missing", forge(keyA, header, json(noIssuedAt))],
    ["decisionId empty", withPayload({ decisionId: "" })],
    ["tenantId not a string", withPayload({ tenantId: 1 })],
    ["approvalRef empty", withPayload({ approvalRef: "" })],
    ["reasons not an array", withPayload({ reasons: "because" })],
    ["reasons holding a number", withPayload({ reasons: [1] })],
    ["a token that is too long", withPayload({ reasons: longReasons })],
  ];

  // Invariant: each malformed token is refused at parse time with DECISION_MALFORMED, never reaching the key or signature checks.
  it.each(cases)("%s", (_name, token) => {
    expectRefused(verifyDecision(token, ring), "DECISION_MALFORMED");
  });

  // Invariant: the length bound is real: the "too long" token is over MAX_DECISION_LENGTH while each of its fields is within limits.
  it("bounds the token length", () => {
    const long = withPayload({ reasons: longReasons });
    expect(long.length).toBeGreaterThan(MAX_DECISION_LENGTH);
    expect(verifyDecision(withPayload({ reasons: longReasons.slice(0, 2) }), ring).ok).toBe(true);
  });

  // Invariant: arbitrary strings never verify and never make verifyDecision throw.
  it("never throws on arbitrary input", () => {
    const segment = fc.string({ unit: fc.constantFrom(...B64URL), maxLength: 120 });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.tuple(segment, segment, segment).map((p) => p.join("."))), (t) => {
        const r = verifyDecision(t, ring);
        expect(r.ok).toBe(false);
      }),
      fcRun("arbitrary strings never verify", 500),
    );
  });
});

describe("a valid token mutated in any single way never verifies", () => {
  const ring = ringOf(keyA, keyB);

  /** Every other base64url character (and the separator) at every position, exhaustively. */
  it("exhaustive: every single-character replacement and every deletion is refused", () => {
    const token = signDecision(keyA, input);
    expect(verifyDecision(token, ring).ok).toBe(true);
    const codes = new Map<string, number>();
    let tried = 0;
    const check = (m: string): void => {
      const r = verifyDecision(m, ring);
      tried++;
      // Invariant: no mutant verifies.
      expect(r.ok).toBe(false);
      if (!r.ok) codes.set(r.code, (codes.get(r.code) ?? 0) + 1);
    };
    for (let i = 0; i < token.length; i++) {
      for (const ch of B64URL + ".") if (ch !== token[i]) check(token.slice(0, i) + ch + token.slice(i + 1));
      check(token.slice(0, i) + token.slice(i + 1));
    }
    expect(tried).toBe(token.length * 65);
    // both the parser and the signature check did real work (the mutants are not all trivially malformed)
    expect(codes.get("DECISION_MALFORMED")).toBeGreaterThan(0);
    expect(codes.get("DECISION_SIGNATURE_INVALID")).toBeGreaterThan(0);
  });

  type Mutation = { kind: "replace" | "insert"; at: number; ch: string } | { kind: "delete"; at: number } | { kind: "swap"; a: number; b: number };
  const alphabet = [...B64URL, ".", "="];
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    fc.record({ kind: fc.constant("replace" as const), at: fc.nat(), ch: fc.constantFrom(...alphabet) }),
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), ch: fc.constantFrom(...alphabet) }),
    fc.record({ kind: fc.constant("delete" as const), at: fc.nat() }),
    fc.record({ kind: fc.constant("swap" as const), a: fc.integer({ min: 0, max: 2 }), b: fc.integer({ min: 1, max: 2 }) }),
  );

  function mutate(token: string, m: Mutation): string {
    switch (m.kind) {
      case "replace": {
        const i = m.at % token.length;
        const ch = m.ch === token[i] ? (alphabet[(alphabet.indexOf(m.ch) + 1) % alphabet.length] ?? "A") : m.ch;
        return token.slice(0, i) + ch + token.slice(i + 1);
      }
      case "insert": {
        const i = m.at % (token.length + 1);
        return token.slice(0, i) + m.ch + token.slice(i);
      }
      case "delete": {
        const i = m.at % token.length;
        return token.slice(0, i) + token.slice(i + 1);
      }
      case "swap": {
        const parts = token.split(".");
        const b = (m.a + m.b) % 3; // always a different segment
        [parts[m.a], parts[b]] = [parts[b]!, parts[m.a]!];
        return parts.join(".");
      }
    }
  }

  const decisionInput: fc.Arbitrary<DecisionInput> = fc.record({
    decisionId: fc.string({ minLength: 1, maxLength: 40 }),
    result: fc.constantFrom("ALLOW", "DENY", "REQUIRE_APPROVAL"),
    requestDigest: fc.string().map((s) => requestDigest({ s })),
    tenantId: fc.string({ minLength: 1, maxLength: 20 }),
    spaceId: fc.string({ minLength: 1, maxLength: 20 }),
    authorityRef: fc.string({ minLength: 1, maxLength: 20 }),
    policyRef: fc.string({ minLength: 1, maxLength: 20 }),
    issuedAt: fc.integer({ min: 0, max: 4_102_444_800_000 }),
    reasons: fc.array(fc.string({ unit: "grapheme", maxLength: 30 }), { maxLength: 4 }),
  });

  // Invariant: for random decisions and keys, any one replacement, insertion, deletion or segment swap yields a token that does not verify.
  it("property: random decisions, random single mutations", () => {
    fc.assert(
      fc.property(decisionInput, fc.boolean(), mutation, (di, useB, m) => {
        const token = signDecision(useB ? keyB : keyA, di);
        expect(verifyDecision(token, ring).ok).toBe(true);
        const mutant = mutate(token, m);
        expect(mutant).not.toBe(token);
        expect(verifyDecision(mutant, ring).ok).toBe(false);
      }),
      fcRun("single mutations never verify", 3000),
    );
  });
});

describe("the Node port's asynchronous verify (threadpool)", () => {
  const ring = ringOf(keyA, keyB);
  const asyncVerify = (jwk: PublicJwk, data: Uint8Array, sig: Uint8Array): Promise<boolean> => crypto.verifyEd25519Async!(jwk, data, sig);

  // Invariant: verifyEd25519Async gives verifyEd25519's answer for every input, and never rejects.
  it("agrees with the synchronous verify on a token and its mutants (two replacements at every position)", async () => {
    const token = signDecision(keyA, input);
    const parsedMutants: ParsedDecision[] = [];
    for (let i = 0; i < token.length; i++) {
      const at = B64URL.indexOf(token[i]!);
      if (at < 0) continue;
      for (const step of [1, 32]) {
        const p = parseDecision(token.slice(0, i) + B64URL[(at + step) % 64]! + token.slice(i + 1));
        if (p.ok) parsedMutants.push(p.value);
      }
    }
    const original = parseDecision(token);
    if (!original.ok) throw new Error(original.message);
    const all = [original.value, ...parsedMutants];
    expect(parsedMutants.length).toBeGreaterThan(100);
    const disagree: number[] = [];
    let accepted = 0;
    for (const [n, d] of all.entries()) {
      for (const key of [keyA, keyB]) {
        const sync = crypto.verifyEd25519(key.publicJwk, d.signingInput, d.signature);
        const viaPool = await asyncVerify(key.publicJwk, d.signingInput, d.signature);
        if (sync !== viaPool) disagree.push(n);
        if (viaPool) accepted++;
      }
    }
    expect(disagree).toEqual([]);
    // Only the original under its own key verifies (base64url decoding is canonical: no mutant decodes to the same bytes).
    expect(accepted).toBe(1);
    expect((await verifyParsedAsync(crypto, ring, original.value)).ok).toBe(true);
  });

  it("resolves false, never rejects, for malformed keys and signatures", async () => {
    const data = utf8("data");
    const sig = crypto.signEd25519(keyA.privateJwk, data);
    expect(await asyncVerify(keyA.publicJwk, data, sig)).toBe(true);
    expect(await asyncVerify({ ...keyA.publicJwk, x: "not-a-key" }, data, sig)).toBe(false);
    expect(await asyncVerify({ ...keyA.publicJwk, x: "" }, data, sig)).toBe(false);
    expect(await asyncVerify(keyA.publicJwk, data, sig.subarray(0, 63))).toBe(false);
    expect(await asyncVerify(keyA.publicJwk, data, new Uint8Array(64))).toBe(false);
    expect(await asyncVerify(keyA.publicJwk, utf8("other"), sig)).toBe(false);
  });

  it("verifyParsedAsync reports checks 2 and 3 with verifyParsed's codes", async () => {
    const token = signDecision(keyA, input);
    const p = parseDecision(token);
    if (!p.ok) throw new Error(p.message);
    const revoked = createKeyring([{ kid: keyA.kid, publicJwk: keyA.publicJwk, status: "revoked" }]);
    for (const ring2 of [ring, ringOf(keyB), revoked]) {
      const sync = verifyParsed(crypto, ring2, p.value);
      const viaPool = await verifyParsedAsync(crypto, ring2, p.value);
      expect(viaPool).toEqual(sync);
    }
    const forged = { ...p.value, signature: new Uint8Array(64) };
    expect(await verifyParsedAsync(crypto, ring, forged)).toEqual({ ok: false, code: "DECISION_SIGNATURE_INVALID", message: "signature does not verify" });
  });
});
