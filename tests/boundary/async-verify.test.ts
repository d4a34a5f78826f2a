/**
 * Check 3 through the crypto port's optional asynchronous verify (docs/boundary.md, "Signature
 * checks off the main thread"). Invariants: (a) with and without `verifyEd25519Async` every
 * breaker yields the same code, and every pair the earlier one; (b) when the port has the slot, the
 * boundary's signature checks go through it and its answer is the one that counts; (c) many
 * executions with verifies in flight together all succeed in one scope and the journal chains.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { CryptoPort } from "../../src/core/ports.js";
import type { Store } from "../../src/core/store.js";
import { verifyJournalIn } from "../../src/index.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { BREAKERS, baseSpec, build } from "./checks.js";
import { crypto, makeBench } from "./fixture.js";

/** The fixture's port without the asynchronous slot: the synchronous fallback. */
const syncOnly: CryptoPort = { ...crypto, verifyEd25519Async: undefined };

/** The fixture's port, counting which verify the boundary called. */
function counting(answer?: boolean): { port: CryptoPort; calls: { sync: number; async: number } } {
  const calls = { sync: 0, async: 0 };
  const port: CryptoPort = {
    ...crypto,
    verifyEd25519: (...a) => {
      calls.sync++;
      return crypto.verifyEd25519(...a);
    },
    verifyEd25519Async: async (...a) => {
      calls.async++;
      const ok = await crypto.verifyEd25519Async!(...a);
      return answer ?? ok;
    },
  };
  return { port, calls };
}

describe("check 3 with an asynchronous verify", () => {
  let store: Store;
  beforeEach(async () => {
    store = memoryStore();
    await store.migrate();
  });
  afterEach(async () => store.close());

  it("the Node port has the asynchronous slot (the fixture exercises it everywhere)", () => {
    expect(typeof crypto.verifyEd25519Async).toBe("function");
  });

  it("each breaker alone yields the same code with the synchronous fallback as with the async verify", async () => {
    let runs = 0;
    for (const br of BREAKERS) {
      for (const port of [crypto, syncOnly]) {
        const b = makeBench(store);
        const spec = baseSpec(b);
        br.apply(spec, b);
        const { request, token } = await build(spec, b);
        const a = await b.execute(request, token, undefined, { crypto: port });
        runs++;
        expect(a.state).toBe("REFUSED");
        expect(a.reasonCode).toBe(br.code);
      }
    }
    expect(runs).toBe(BREAKERS.length * 2);
  });

  it("every pair of failing checks reports the earlier one with the synchronous fallback", async () => {
    const pairs = BREAKERS.flatMap((i) => BREAKERS.filter((j) => j.check > i.check).map((j) => [i, j] as const));
    const wrong: string[] = [];
    for (const [i, j] of pairs) {
      const b = makeBench(store);
      const spec = baseSpec(b);
      i.apply(spec, b);
      j.apply(spec, b);
      const { request, token } = await build(spec, b);
      const a = await b.execute(request, token, undefined, { crypto: syncOnly });
      if (a.state !== "REFUSED" || a.reasonCode !== i.code || b.calls.length > 0) wrong.push(`${i.code} + ${j.code} -> ${a.state} ${a.reasonCode ?? ""}`);
    }
    expect(pairs.length).toBeGreaterThan(200);
    expect(wrong).toEqual([]);
  });

  it("goes through verifyEd25519Async when the port has it, and through verifyEd25519 when not", async () => {
    const b = makeBench(store);
    const viaAsync = counting();
    const { request, token } = await build(baseSpec(b), b);
    expect((await b.execute(request, token, undefined, { crypto: viaAsync.port })).state).toBe("SUCCEEDED");
    expect(viaAsync.calls).toEqual({ sync: 0, async: 1 });

    const viaSync = counting();
    const port: CryptoPort = { ...viaSync.port, verifyEd25519Async: undefined };
    const second = await build(baseSpec(b), b);
    expect((await b.execute(second.request, second.token, undefined, { crypto: port })).state).toBe("SUCCEEDED");
    expect(viaSync.calls).toEqual({ sync: 1, async: 0 });
  });

  it("the asynchronous answer is the one that counts: false refuses a signature the sync verify accepts", async () => {
    const b = makeBench(store);
    const { port, calls } = counting(false);
    const { request, token } = await build(baseSpec(b), b);
    const a = await b.execute(request, token, undefined, { crypto: port });
    expect(a.reasonCode).toBe("DECISION_SIGNATURE_INVALID");
    expect(calls).toEqual({ sync: 0, async: 1 });
    expect(b.calls).toHaveLength(0);
  });

  it("a malformed request under a decision that verifies asynchronously is refused in the decision's scope", async () => {
    const b = makeBench(store);
    const { port, calls } = counting();
    const req = b.request();
    const token = b.decision(req);
    const a = await b.execute({ ...req, actor: "not an actor" }, token, undefined, { crypto: port });
    expect(a.reasonCode).toBe("REQUEST_MALFORMED");
    expect({ tenantId: a.tenantId, spaceId: a.spaceId }).toEqual(b.scope);
    expect(calls).toEqual({ sync: 0, async: 1 });
    // The same with the asynchronous verify answering false: the refusal is not scoped by the decision.
    const denied = counting(false);
    const r = await b.execute({ ...req, actor: "not an actor" }, b.decision(req), undefined, { crypto: denied.port });
    expect(r.reasonCode).toBe("REQUEST_MALFORMED");
    expect({ tenantId: r.tenantId, spaceId: r.spaceId }).not.toEqual(b.scope);
  });

  it("64 executions with their verifies in flight together all succeed in one scope, and the journal chains", async () => {
    const b = makeBench(store);
    const work = Array.from({ length: 64 }, () => {
      const req = b.request();
      return [req, b.decision(req)] as const;
    });
    const attempts = await Promise.all(work.map(([req, token]) => b.execute(req, token)));
    expect(attempts.map((a) => a.state)).toEqual(work.map(() => "SUCCEEDED"));
    expect(b.calls).toHaveLength(64);
    const report = await verifyJournalIn(store, b.keyring, b.scope);
    expect(report.ok).toBe(true);
    expect(report.unsealed).toBe(0);
    expect(report.entries).toBe(128);
  });
});
