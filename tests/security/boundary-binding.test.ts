/**
 * The boundary binds exactly what it verified, scope comes only from verified or well-formed input,
 * and hostile objects on either side are contained (docs/security.md). On every store. Invariants:
 * - a caller mutating its request (params, nested params, actor) after `execute` changes nothing:
 *   the connector, the digest, the attempt and the journal all see the request as it was checked;
 * - a request whose reads throw (getter, Proxy trap) is REFUSED REQUEST_MALFORMED and recorded; no
 *   getter is ever called; `execute` never throws for it;
 * - a garbage-signed token writes nothing into the scope it names (malformed request: the
 *   unscoped journal; well-formed request: the request's scope);
 * - a connector reply whose `then` or field getters throw, or that is a revoked Proxy, is UNKNOWN
 *   (OUTCOME_AMBIGUOUS), and the key then blocks a re-run (RECONCILIATION_PENDING); a connector
 *   that throws is FAILED CONNECTOR_ERROR.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineConnector, type ConnectorContext } from "../../src/core/action.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { UNSCOPED_JOURNAL } from "../../src/core/reserved.js";
import type { Store } from "../../src/core/store.js";
import type { ActionRequest, Scope } from "../../src/core/types.js";
import { allStoreFactories } from "../helpers/stores.js";
import { journalOf } from "./helpers.js";
import { crypto, makeBench, uniqueKey, type Bench } from "../boundary/fixture.js";

async function attempts(store: Store, scope: Scope) {
  return store.transact((tx) => tx.listAttempts(scope, { limit: 1000 }));
}

/** A connector whose `refund` returns `reply()` synchronously (no async wrapper reads `then`). */
function syncConnector(calls: ConnectorContext[], reply: () => unknown) {
  return defineConnector({
    id: "pay",
    operations: {
      refund: ((ctx: ConnectorContext) => {
        calls.push(ctx);
        return reply();
      }) as never,
    },
  });
}

for (const factory of allStoreFactories()) {
  describe(`the boundary binds what it verified on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    function bench(): Bench {
      return makeBench(store, { fromStore: true });
    }

    it("a params object mutated after execute changes nothing", async () => {
      const b = bench();
      await b.syncStanding();
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      b.mode.current = async () => {
        await gate;
        return { outcome: "success", externalRef: "re_1" };
      };
      const req = b.request({ params: { paymentId: "pay_1", amount: 10, meta: { note: "a" } } });
      const digest = computeRequestDigest(crypto, req);
      const token = b.decision(req);
      const running = b.execute(req, token);
      // Mutated at once (before any await inside execute) and again while the connector runs.
      const mutable = req as { params: Record<string, unknown>; actor: { id: string } };
      mutable.params.amount = 999_999;
      (mutable.params.meta as { note: string }).note = "changed";
      mutable.actor.id = "mallory";
      await new Promise((r) => setTimeout(r, 20));
      mutable.params.paymentId = "pay_other";
      release();
      const a = await running;
      expect(a.state).toBe("SUCCEEDED");
      expect(a.requestDigest).toBe(digest);
      expect(b.calls).toHaveLength(1);
      const seen = b.calls[0]!;
      expect(seen.input).toEqual({ paymentId: "pay_1", amount: 10, meta: { note: "a" } });
      expect(seen.request.params).toEqual({ paymentId: "pay_1", amount: 10, meta: { note: "a" } });
      expect(seen.request.actor).toEqual({ type: "agent", id: "bot-1" });
      expect(Object.isFrozen(seen.request.params)).toBe(true);
      const consumed = (await journalOf(store, b.scope)).find((e) => e.type === "decision.consumed");
      expect(consumed?.data).toMatchObject({ requestDigest: digest, actor: { type: "agent", id: "bot-1" }, params: { params: { amount: 10, paymentId: "pay_1" } } });
    });

    it("a request whose reads throw is refused and recorded; no getter runs; execute does not throw", async () => {
      const b = bench();
      await b.syncStanding();
      const good = b.request();
      const token = b.decision(good);
      let getterCalls = 0;
      const withGetter = { ...good, params: Object.defineProperty({ paymentId: "pay_1" }, "amount", { enumerable: true, get: () => (++getterCalls, 10) }) };
      const throwingProxy = new Proxy({ ...good }, { ownKeys: () => { throw new Error("trap"); } });
      const revoked = Proxy.revocable({ ...good }, {});
      revoked.revoke();
      const paramsProxy = { ...good, params: new Proxy({ paymentId: "pay_1", amount: 10 }, { getOwnPropertyDescriptor: () => { throw new Error("trap"); } }) };
      for (const hostile of [withGetter, throwingProxy, revoked.proxy, paramsProxy]) {
        const a = await b.execute(hostile, token);
        expect(a.state).toBe("REFUSED");
        expect(a.reasonCode).toBe("REQUEST_MALFORMED");
      }
      expect(getterCalls).toBe(0);
      expect(b.calls).toHaveLength(0);
      // Recorded in the scope the verified decision names (the requests could not name one).
      const refused = (await attempts(store, b.scope)).filter((x) => x.reasonCode === "REQUEST_MALFORMED");
      expect(refused).toHaveLength(4);
      // The decision was not consumed: the well-formed request still runs under it.
      expect((await b.execute(good, token)).state).toBe("SUCCEEDED");
    });

    it("a garbage-signed token writes nothing into the scope it names", async () => {
      const victim = bench();
      await victim.syncStanding();
      const attacker = bench();
      await attacker.syncStanding();
      const victimReq = victim.request();
      const [h, p] = victim.decision(victimReq).split(".");
      const garbage = `${h}.${p}.${"A".repeat(86)}`;
      const before = { journal: (await journalOf(store, victim.scope)).length, attempts: (await attempts(store, victim.scope)).length };
      const unscopedBefore = (await attempts(store, UNSCOPED_JOURNAL)).length;
      // Malformed requests (no request, a missing field, a getter) under the forged token.
      const { idempotencyKey: _k, ...missing } = victimReq;
      for (const req of [null, missing, { ...victimReq, idempotencyKey: 42 }]) {
        const a = await attacker.execute(req, garbage);
        expect(a.state).toBe("REFUSED");
        expect(a.reasonCode).toBe("REQUEST_MALFORMED");
        expect({ tenantId: a.tenantId, spaceId: a.spaceId }).toEqual(UNSCOPED_JOURNAL);
      }
      // A well-formed request of the attacker's own scope under the forged token: its own scope.
      const own = await attacker.execute(attacker.request(), garbage);
      expect(own.reasonCode).toBe("DECISION_SIGNATURE_INVALID");
      expect(own.tenantId).toBe(attacker.scope.tenantId);
      expect((await journalOf(store, victim.scope)).length).toBe(before.journal);
      expect((await attempts(store, victim.scope)).length).toBe(before.attempts);
      expect((await attempts(store, UNSCOPED_JOURNAL)).length).toBeGreaterThanOrEqual(unscopedBefore + 3);
      // A request naming the reserved scope is itself malformed (nobody writes there on purpose).
      const reserved = await attacker.execute({ ...attacker.request(), ...UNSCOPED_JOURNAL }, garbage);
      expect(reserved.reasonCode).toBe("REQUEST_MALFORMED");
    });

    const hostileReplies: Array<[string, () => unknown]> = [
      ["a then getter that throws", () => Object.defineProperty({ outcome: "success", externalRef: "x" }, "then", { get: () => { throw new Error("then getter"); } })],
      ["a thenable whose then throws", () => ({ then: () => { throw new Error("then threw"); } })],
      ["an outcome getter that throws", () => Object.defineProperty({ externalRef: "x" }, "outcome", { enumerable: true, get: () => { throw new Error("outcome getter"); } })],
      ["a revoked Proxy", () => { const r = Proxy.revocable({ outcome: "success", externalRef: "x" }, {}); r.revoke(); return r.proxy; }],
      ["a promise of a reply with a throwing output getter", () => Promise.resolve({ outcome: "success", externalRef: "x", output: Object.defineProperty({}, "v", { enumerable: true, get: () => { throw new Error("output getter"); } }) })],
    ];
    it.each(hostileReplies)("a connector reply with %s is UNKNOWN and blocks a blind re-run", async (_what, reply) => {
      const b = bench();
      await b.syncStanding();
      const calls: ConnectorContext[] = [];
      const overrides = { connectors: [syncConnector(calls, reply)] };
      const req: ActionRequest = b.request({ idempotencyKey: uniqueKey("hostile") });
      const a = await b.execute(req, b.decision(req), {}, overrides);
      expect(a.state).toBe("UNKNOWN");
      expect(a.reasonCode).toBe("OUTCOME_AMBIGUOUS");
      expect(calls).toHaveLength(1);
      const again = await b.execute(req, b.decision(req), {}, overrides);
      expect(again.reasonCode).toBe("RECONCILIATION_PENDING");
      expect(calls).toHaveLength(1);
    });

    it("a connector that throws synchronously is FAILED CONNECTOR_ERROR (a definite failure)", async () => {
      const b = bench();
      await b.syncStanding();
      const calls: ConnectorContext[] = [];
      const req = b.request();
      const a = await b.execute(req, b.decision(req), {}, { connectors: [syncConnector(calls, () => { throw new Error("boom"); })] });
      expect(a.state).toBe("FAILED");
      expect(a.reasonCode).toBe("CONNECTOR_ERROR");
    });
  });
}
