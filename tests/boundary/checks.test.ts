/**
 * SPEC 3.1: the twelve checks, in order, with every reason code.
 * Invariants: (a) each breaker alone yields exactly its code; (b) for every pair of breakers of
 * different checks i < j, the refusal reports check i's code; (c) a refusal calls no connector and
 * is recorded as an attempt REFUSED with that code, and journaled.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { BREAKERS, baseSpec, build } from "./checks.js";
import { makeBench } from "./fixture.js";

const MODES = [
  { name: "lookups", fromStore: false },
  { name: "standing read in the consumption transaction", fromStore: true },
] as const;

for (const factory of allStoreFactories()) for (const mode of MODES) {
  describe(`boundary checks on ${factory.name} (${mode.name})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    it("a valid request and decision pass every check and execute once", async () => {
      const b = makeBench(store, { fromStore: mode.fromStore });
      const { request, token } = await build(baseSpec(b), b);
      const a = await b.execute(request, token);
      expect(a.state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(1);
    });

    for (const br of BREAKERS) {
      it(`check ${br.check} alone: ${br.code}`, async () => {
        const b = makeBench(store, { fromStore: mode.fromStore });
        const spec = baseSpec(b);
        br.apply(spec, b);
        const { request, token } = await build(spec, b);
        const a = await b.execute(request, token);
        expect(a.state).toBe("REFUSED");
        expect(a.reasonCode).toBe(br.code);
        expect(b.calls).toHaveLength(0);
        const stored = await store.transact((tx) => tx.getAttempt({ tenantId: a.tenantId, spaceId: a.spaceId }, a.attemptId));
        expect(stored?.state).toBe("REFUSED");
        expect(stored?.reasonCode).toBe(br.code);
        const journal = await store.transact((tx) => tx.journalIdsPresent({ tenantId: a.tenantId, spaceId: a.spaceId }, [`attempt.refused:${a.attemptId}`]));
        expect(journal.size).toBe(1);
      });
    }

    it("within check 1 a malformed request is reported before a malformed decision", async () => {
      const b = makeBench(store, { fromStore: mode.fromStore });
      const spec = baseSpec(b);
      spec.requestMalformed = true;
      spec.decisionMalformed = true;
      const { request, token } = await build(spec, b);
      expect((await b.execute(request, token)).reasonCode).toBe("REQUEST_MALFORMED");
    });

    const pairs = BREAKERS.flatMap((i) => BREAKERS.filter((j) => j.check > i.check).map((j) => [i, j] as const));
    it(`every pair of failing checks reports the earlier one (${pairs.length} pairs)`, async () => {
      const wrong: string[] = [];
      for (const [i, j] of pairs) {
        const b = makeBench(store, { fromStore: mode.fromStore });
        const spec = baseSpec(b);
        i.apply(spec, b);
        j.apply(spec, b);
        const { request, token } = await build(spec, b);
        const a = await b.execute(request, token);
        if (a.state !== "REFUSED" || a.reasonCode !== i.code || b.calls.length > 0) {
          wrong.push(`${i.code} + ${j.code} -> ${a.state} ${a.reasonCode ?? ""} (calls ${b.calls.length})`);
        }
      }
      expect(wrong).toEqual([]);
    });
  });
}
