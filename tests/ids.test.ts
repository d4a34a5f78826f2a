/**
 * Ids that follow time (src/core/ids.ts, docs/stores.md "Ids that follow time").
 *
 * Invariants checked:
 * - shape: the prefix, then 22 characters of the base64url set (as the random ids before them);
 * - order: an id made at a later millisecond sorts after one made earlier, in byte order
 *   (PostgreSQL's COLLATE "C", SQLite's BINARY), whatever the random bytes;
 * - the time part reads back as the (clamped, whole) millisecond it was made at;
 * - different random bytes give different ids; the same inputs give the same id;
 * - the host and the boundary name invocations, attempts and decisions this way.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { memoryStore } from "../src/index.js";
import { ID_RANDOM_BYTES, idTime, timeOrderedId, timePart } from "../src/core/ids.js";
import { fcRun as fcRunFor } from "./helpers/seed.js";
import { grantAuthority, makeHostBench } from "./host/fixture.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("ids.test", name, numRuns);
const MAX = 2 ** 48 - 1;
const ms = fc.integer({ min: 0, max: MAX });
const rnd = fc.uint8Array({ minLength: ID_RANDOM_BYTES, maxLength: ID_RANDOM_BYTES });
/** Byte-order comparison (what COLLATE "C" does for these ASCII ids). */
const byteLess = (a: string, b: string): boolean => Buffer.compare(Buffer.from(a), Buffer.from(b)) < 0;

describe("time-ordered ids", () => {
  it("are the prefix and 22 base64url characters", () => {
    fc.assert(
      fc.property(ms, rnd, (t, r) => {
        const id = timeOrderedId("inv_", t, r);
        expect(id).toMatch(/^inv_[A-Za-z0-9_-]{22}$/);
        expect(idTime(id.slice(4))).toBe(t);
      }),
      fcRun("shape and time", 500),
    );
  });

  it("sort by the millisecond they were made at, whatever the random bytes", () => {
    fc.assert(
      fc.property(ms, ms, rnd, rnd, (t1, t2, r1, r2) => {
        fc.pre(t1 !== t2);
        const [a, b] = t1 < t2 ? [t1, t2] : [t2, t1];
        expect(byteLess(timeOrderedId("x_", a, r1), timeOrderedId("x_", b, r2))).toBe(true);
      }),
      fcRun("order", 2000),
    );
    // Neighbouring milliseconds across every carry of the time part's digits.
    for (let d = 0; d < 8; d++) {
      const t = 64 ** d - 1;
      expect(byteLess(timePart(t), timePart(t + 1)), `${t} -> ${t + 1}`).toBe(true);
    }
  });

  it("differ when their random bytes differ; the same inputs give the same id", () => {
    fc.assert(
      fc.property(ms, rnd, rnd, (t, r1, r2) => {
        fc.pre(Buffer.compare(Buffer.from(r1), Buffer.from(r2)) !== 0);
        expect(timeOrderedId("a_", t, r1)).not.toBe(timeOrderedId("a_", t, r2));
        expect(timeOrderedId("a_", t, r1)).toBe(timeOrderedId("a_", t, Uint8Array.from(r1)));
      }),
      fcRun("distinct", 500),
    );
  });

  it("clamp a time outside 48 bits and refuse too few random bytes", () => {
    expect(idTime(timePart(-5) + "A".repeat(14))).toBe(0);
    expect(idTime(timePart(Number.NaN) + "A".repeat(14))).toBe(0);
    expect(idTime(timePart(2 ** 60) + "A".repeat(14))).toBe(MAX);
    expect(idTime(timePart(1.9) + "A".repeat(14))).toBe(1);
    expect(() => timeOrderedId("a_", 0, new Uint8Array(9))).toThrow(/10 random bytes/);
    expect(idTime("short")).toBeNull();
    expect(idTime("!".repeat(22))).toBeNull();
  });

  it("name the host's invocations, and their attempts and decisions, in the order they were made", async () => {
    const b = makeHostBench(memoryStore());
    await grantAuthority(b);
    const made: Array<{ at: number; id: string }> = [];
    for (let i = 0; i < 5; i++) {
      b.clock.advance(7);
      const { invocation } = await b.host.submit(b.request());
      made.push({ at: b.clock.now(), id: invocation.invocationId });
    }
    for (const [i, { at, id }] of made.entries()) {
      expect(id).toMatch(/^inv_[A-Za-z0-9_-]{22}$/);
      expect(idTime(id.slice(4)), id).toBe(at);
      if (i > 0) expect(byteLess(made[i - 1]!.id, id)).toBe(true);
    }
    b.clock.advance(7);
    const ran = b.clock.now();
    await b.host.worker().runOnce();
    const attempts = await b.store.transact((tx) => tx.listAttempts(b.scope));
    expect(attempts.length).toBeGreaterThan(0);
    for (const a of attempts) {
      expect(idTime(a.attemptId.slice(4)), a.attemptId).toBe(ran);
      expect(a.decisionId).toMatch(/^dec_/);
      expect(idTime(a.decisionId!.slice(4)), a.decisionId).toBe(ran);
    }
  });
});
