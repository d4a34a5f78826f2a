/**
 * The check table (src/core/checks.ts) and request admission written once (src/core/admission.ts),
 * whose digest over the checked snapshot (the trusted canonicaliser) equals the strict one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAction } from "../../src/core/action.js";
import { admitRequest } from "../../src/core/admission.js";
import { BOUNDARY_CHECKS, DECISION_CHECKS, checkConnectors } from "../../src/core/checks.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { REFUSAL_CODES } from "../../src/core/errors.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { fcRun as fcRunFor } from "../helpers/seed.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("check-table.test", name, numRuns);
const crypto = defaultCrypto();

const anyAction = defineAction({ id: "a.any", version: "1", params: z.record(z.string(), z.unknown()), idempotent: true, steps: [{ name: "s", connector: "c", operation: "run" }] });
const strictAction = defineAction({ id: "a.strict", version: "2", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "s", connector: "c", operation: "run" }] });
const actions = new Map([anyAction, strictAction].map((a) => [a.id, a as never]));

const base = { tenantId: "t1", spaceId: "s1", action: "a.any", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth-1", idempotencyKey: "k1", params: {} };

function outcome(fn: () => unknown): { value: unknown } | { error: string } {
  try {
    return { value: fn() };
  } catch (e) {
    return { error: String((e as Error).message) };
  }
}

describe("the check table", () => {
  it("numbers the twelve checks 1-12 and lists every refusal code once, in check order", () => {
    expect(BOUNDARY_CHECKS.map((c) => c.n)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(BOUNDARY_CHECKS.flatMap((c) => c.codes)).toEqual([...REFUSAL_CODES]);
    expect(BOUNDARY_CHECKS.map((c) => c.phase)).toEqual(["parse", "decision", "decision", "decision", "decision", "decision", "decision", "standing", "standing", "gate", "gate", "gate"]);
  });

  it("gives the precheck checks 2-7 in order", () => {
    expect(DECISION_CHECKS.map((c) => c.n)).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it("check 12 names the first step without a registered operation", () => {
    const connectors = new Map([["c", { id: "c", operations: { other: () => ({ outcome: "success", externalRef: "x" }) } }]]);
    expect(checkConnectors(anyAction as never, connectors as never)).toMatchObject({ code: "CONNECTOR_NOT_FOUND", message: "no connector c with operation run is registered" });
    const ok = new Map([["c", { id: "c", operations: { run: () => ({ outcome: "success", externalRef: "x" }) } }]]);
    expect(checkConnectors(anyAction as never, ok as never)).toBeNull();
  });
});

describe("admitRequest", () => {
  it("answers each problem with the boundary's message", async () => {
    expect(await admitRequest(crypto, "nope", actions)).toEqual({ ok: false, problem: "shape", message: "request must be a JSON object" });
    expect(await admitRequest(crypto, { ...base, action: "a.none" }, actions)).toMatchObject({ ok: false, problem: "action", message: "unknown action a.none" });
    expect(await admitRequest(crypto, { ...base, action: "a.strict" }, actions)).toMatchObject({ ok: false, problem: "version", message: "action a.strict is at version 2, not 1" });
    const p = await admitRequest(crypto, { ...base, action: "a.strict", actionVersion: "2", params: { n: "x" } }, actions);
    expect(p).toMatchObject({ ok: false, problem: "params", issues: [expect.stringContaining("n:")] });
    expect(p.ok === false && p.message.startsWith("invalid params: n:")).toBe(true);
    const threw = defineAction({ id: "a.throws", version: "1", params: { "~standard": { version: 1, vendor: "t", validate: () => { throw new Error("boom"); } } }, idempotent: true, steps: [{ name: "s", connector: "c", operation: "run" }] });
    expect(await admitRequest(crypto, { ...base, action: "a.throws" }, new Map([[threw.id, threw as never]]))).toMatchObject({ ok: false, problem: "params", issues: ["params schema threw: boom"] });
  });

  it("returns the frozen snapshot and the strict request digest over it", async () => {
    const input = { ...base, params: { b: [1, "x", null], a: { z: true } } };
    const a = await admitRequest(crypto, input, actions);
    if (!a.ok) throw new Error(a.message);
    expect(Object.isFrozen(a.req) && Object.isFrozen(a.req.params)).toBe(true);
    expect(a.req).not.toBe(input);
    expect(a.digest).toBe(computeRequestDigest(crypto, input));
  });

  it("digests every admitted request as computeRequestDigest does", async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 4 }), { maxKeys: 6 }), async (params) => {
        const a = await admitRequest(crypto, { ...base, params }, actions);
        const strict = outcome(() => computeRequestDigest(crypto, { ...base, params }));
        if (a.ok) expect(strict).toEqual({ value: a.digest });
        // What the snapshot refuses (lone surrogates, __proto__ keys) never reaches the digest.
        else expect(a.problem).toBe("shape");
      }),
      fcRun("admission digest", 300),
    );
  });
});
