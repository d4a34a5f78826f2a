/**
 * Interrupted bare executions and retries under a later decision (docs/boundary.md, "Interrupted
 * executions" and "Retries need a later decision"), on every store. Each test states its invariant.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineConnector } from "../../src/core/action.js";
import { createBoundaryCore, type Boundary } from "../../src/core/boundary.js";
import { isWritError } from "../../src/core/errors.js";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import { manualClock } from "../../src/core/manual-clock.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import { MAX_TIMER_MS } from "../../src/core/validate.js";
import type { ActionRequest, IdempotencyRecord } from "../../src/core/types.js";
import { createHostCore } from "../../src/host/host.js";
import { sealJournalNow } from "../../src/index.js";
import { systemRandom } from "../../src/node/clock.js";
import { allStoreFactories } from "../helpers/stores.js";
import { tick } from "../helpers/wait.js";
import { KEYS } from "../boundary/fixture.js";
import { actions, crypto, decisionFor, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const BOUND = 60_000;
const keyring = createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]);
const OPERATOR = { type: "user" as const, id: "olga" };

/**
 * A process that dies mid-call: a boundary on the same store whose connector never answers and
 * whose clock never moves (so its timeout never fires). Resolves once the key is in progress.
 */
async function crashMidCall(b: HostBench, req: ActionRequest): Promise<IdempotencyRecord> {
  const dead: Boundary = createBoundaryCore({
    store: b.store,
    keyring,
    actions,
    connectors: [defineConnector({ id: "c", operations: { a: () => new Promise(() => undefined) } })],
    standingFromStore: true,
    acceptedPolicyRefs: ["test:v1"],
    clock: manualClock(b.clock.now()),
    crypto,
    random: systemRandom,
  });
  void dead.execute(req, decisionFor(req, b.clock.now()));
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    const rec = await idem(b, req);
    if (rec?.state === "in_progress") return rec;
    await tick();
  }
  throw new Error("the crashed execution never started");
}

const idem = (b: HostBench, req: ActionRequest): Promise<IdempotencyRecord | null> => readCommitted(b.store, (tx) => tx.getIdempotency(b.scope, req.action, req.idempotencyKey));

async function journalOk(b: HostBench): Promise<void> {
  const v = await verifyStoredJournal(b.store, crypto, keyring, b.scope);
  expect(v.problems).toEqual([]);
}

for (const factory of allStoreFactories()) {
  describe(`keys on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(): Promise<HostBench> {
      const b = makeHostBench(store, { inProgressTimeoutMs: BOUND });
      await grantAuthority(b);
      return b;
    }
    const execute = (b: HostBench, req: ActionRequest, token: string) => b.host.context.boundary.execute(req, token);

    // Invariant (item 7): an interrupted bare execution blocks its key only until the bound; then
    // one transition closes its attempt UNKNOWN (EXECUTION_INTERRUPTED), its step unknown, the key
    // unknown, refuses RECONCILIATION_PENDING, and journals both attempts. No connector is called.
    it("an interrupted execution reports reconciliation pending after inProgressTimeoutMs, then resolves succeeded", async () => {
      const b = await bench();
      const req = b.request();
      const held = await crashMidCall(b, req);
      b.clock.advance(BOUND);
      const early = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(early.reasonCode).toBe("EXECUTION_IN_PROGRESS");
      expect(await idem(b, req)).toEqual(held); // nothing changed within the bound

      b.clock.advance(1);
      const late = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(late.state).toBe("REFUSED");
      expect(late.reasonCode).toBe("RECONCILIATION_PENDING");
      const key = await idem(b, req);
      expect(key?.state).toBe("unknown");
      const old = await readCommitted(store, (tx) => tx.getAttempt(b.scope, held.attemptId));
      expect(old).toMatchObject({ state: "UNKNOWN", reasonCode: "EXECUTION_INTERRUPTED", stepIndex: 0, endedAt: b.clock.now() });
      const steps = await readCommitted(store, (tx) => tx.getSteps(b.scope, held.invocationId));
      expect(steps.map((s) => [s.stepIndex, s.status, s.reasonCode])).toEqual([[0, "unknown", "EXECUTION_INTERRUPTED"]]);
      const ids = await readCommitted(store, (tx) => tx.journalIdsPresent(b.scope, [`attempt.settled:${held.attemptId}`, `attempt.refused:${late.attemptId}`]));
      expect(ids.size).toBe(2);
      // Later executions are refused on the unknown key without rewriting it.
      const again = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(again.reasonCode).toBe("RECONCILIATION_PENDING");
      expect(await idem(b, req)).toEqual(key);
      expect(b.calls).toHaveLength(0);

      // The operator resolves it as succeeded; a replay answers the resolved result.
      const r = await b.host.reconcile.resolveKey(b.scope, { action: req.action, idempotencyKey: req.idempotencyKey }, { outcome: "succeeded", externalRef: "ext-by-hand", note: "seen at the provider", by: OPERATOR });
      expect(r.idempotency).toMatchObject({ state: "succeeded", resultAttemptId: held.attemptId });
      expect(r.attempt?.attemptId).toBe(held.attemptId);
      const replay = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(replay).toMatchObject({ state: "DUPLICATE", originalAttemptId: held.attemptId, externalRef: "ext-by-hand" });
      expect(b.calls).toHaveLength(0);
      await sealJournalNow(store, b.scope);
      const entries = await readCommitted(store, (tx) => tx.readJournal(b.scope, { limit: 1000 }));
      const resolved = entries.find((e) => e.type === "key.resolved");
      expect(resolved?.data).toMatchObject({ outcome: "succeeded", keyState: "succeeded", by: OPERATOR, externalRef: "ext-by-hand", note: "seen at the provider" });
      await journalOk(b);
    });

    // Invariant (items 7 and 8): after a `failed` resolution a fresh decision retries the key (the
    // connector is called with the same step key), and one issued before the failure is refused.
    it("resolved failed: a later decision retries the key; an older one is refused DECISION_PREDATES_ATTEMPT", async () => {
      const b = await bench();
      const req = b.request();
      const issuedEarly = b.clock.now();
      const held = await crashMidCall(b, req);
      b.clock.advance(BOUND + 1);
      expect((await execute(b, req, decisionFor(req, b.clock.now()))).reasonCode).toBe("RECONCILIATION_PENDING");
      await b.host.reconcile.resolveKey(b.scope, { action: req.action, idempotencyKey: req.idempotencyKey }, { outcome: "failed", note: "nothing at the provider", by: OPERATOR });
      expect((await idem(b, req))?.state).toBe("failed");
      const older = await execute(b, req, decisionFor(req, issuedEarly + 1));
      expect(older.reasonCode).toBe("DECISION_PREDATES_ATTEMPT");
      expect(b.calls).toHaveLength(0);
      b.clock.advance(10);
      const retry = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(retry.state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(1);
      expect(b.calls[0]!.idempotencyKey).toBe(b.host.context.boundary.stepKey(b.scope, req.action, req.idempotencyKey, 0));
      expect((await idem(b, req))?.state).toBe("succeeded");
      expect(held.attemptId).not.toBe(retry.attemptId);
      await journalOk(b);
    });

    // Invariant (item 7): a host invocation on a key a crashed bare execution holds is re-queued
    // only until the bound, then settles reconciliation_required; it never calls the connector.
    it("a host invocation on a stuck key settles reconciliation_required after the bound", async () => {
      const b = await bench();
      const req = b.request();
      await crashMidCall(b, req);
      const { invocation } = await b.host.submit(req);
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["queued"]);
      b.clock.advance(BOUND + 1);
      expect(await w.runOnce()).toEqual(["reconciliation_required"]);
      const recs = await b.host.reconcile.list(b.scope, { status: "open" });
      expect(recs.map((r) => [r.invocationId, r.reasonCode])).toEqual([[invocation.invocationId, "RECONCILIATION_PENDING"]]);
      expect(b.calls).toHaveLength(0);
      // Resolving the invocation leaves the key the bare execution holds to its own resolution.
      await b.host.reconcile.resolve(b.scope, recs[0]!.reconciliationId, { outcome: "failed", note: "key stuck", by: OPERATOR });
      expect((await idem(b, req))?.state).toBe("unknown");
      await journalOk(b);
    });

    // Invariant (item 7): a key a running host invocation holds is never expired by a bare
    // execution, however old: the host's lease and recovery own it.
    it("a key held by a running invocation stays in progress past the bound", async () => {
      // A store of its own: the dead worker's invocation must not be claimed by the other tests.
      const own = await factory.make();
      try {
        const b = makeHostBench(own.store, { inProgressTimeoutMs: BOUND });
        await grantAuthority(b);
        const store = own.store;
        const hang = defineConnector({ id: "c", operations: { a: () => new Promise(() => undefined) } });
        const dead = makeHostBench(store, { clock: manualClock(b.clock.now()), connectors: [hang], inProgressTimeoutMs: BOUND });
        const req = b.request();
        const { invocation } = await dead.host.submit(req);
        void dead.host.worker().runOnce(); // a worker that dies mid-call
        let held: IdempotencyRecord | null = null;
        for (let i = 0; i < 10_000 && held?.state !== "in_progress"; i++) {
          held = await idem(b, req);
          await tick();
        }
        expect(held).toMatchObject({ state: "in_progress", invocationId: invocation.invocationId });
        b.clock.advance(BOUND * 10);
        const a = await execute(b, req, decisionFor(req, b.clock.now()));
        expect(a.reasonCode).toBe("EXECUTION_IN_PROGRESS");
        expect(await idem(b, req)).toEqual(held);
        const holder = await readCommitted(store, (tx) => tx.getAttempt(b.scope, held!.attemptId));
        expect(holder?.state).toBe("EXECUTING");
      } finally {
        await own.cleanup();
      }
    });

    // Invariant (item 7): bad resolution input is refused with a clear code and changes nothing.
    it("resolveKey refuses bad input, unknown keys and keys that are not unknown, changing nothing", async () => {
      const b = await bench();
      const req = b.request();
      const key = { action: req.action, idempotencyKey: req.idempotencyKey };
      await crashMidCall(b, req);
      const codeOf = async (p: Promise<unknown>): Promise<string> => p.then(() => "resolved", (e: unknown) => (isWritError(e) ? e.code : String(e)));
      const ok = { outcome: "failed" as const, note: "n", by: OPERATOR };
      // Still in progress (within the bound): not resolvable.
      expect(await codeOf(b.host.reconcile.resolveKey(b.scope, key, ok))).toBe("INVALID_STATE");
      b.clock.advance(BOUND + 1);
      await execute(b, req, decisionFor(req, b.clock.now()));
      const before = await idem(b, req);
      const bad: Array<[unknown, unknown, string]> = [
        [key, { ...ok, outcome: "done" }, "INVALID_ARGUMENT"],
        [key, { ...ok, note: " " }, "INVALID_ARGUMENT"],
        [key, { ...ok, by: { type: "robot", id: "x" } }, "INVALID_ARGUMENT"],
        [key, { ...ok, externalRef: "" }, "INVALID_ARGUMENT"],
        [key, { ...ok, outcome: "succeeded" }, "INVALID_ARGUMENT"], // succeeded needs its externalRef
        [key, null, "INVALID_ARGUMENT"],
        [{ action: req.action }, ok, "INVALID_ARGUMENT"],
        [{ action: req.action, idempotencyKey: "never-used" }, ok, "NOT_FOUND"],
      ];
      for (const [k, input, code] of bad) {
        expect(await codeOf(b.host.reconcile.resolveKey(b.scope, k as never, input as never)), JSON.stringify([k, input])).toBe(code);
      }
      expect(await idem(b, req)).toEqual(before);
      // A key an invocation holds is resolved through its reconciliation.
      const owned = b.request();
      await b.host.submit(owned);
      b.replies.set("a", { outcome: "ambiguous", reason: "502" });
      expect(await b.host.worker().runOnce()).toEqual(["reconciliation_required"]);
      expect(await codeOf(b.host.reconcile.resolveKey(b.scope, { action: owned.action, idempotencyKey: owned.idempotencyKey }, ok))).toBe("INVALID_STATE");
    });

    // Invariant (item 8): a retry needs a decision issued at or after the failed attempt ended;
    // one from before is refused with its own code, calls nothing and changes nothing.
    it("a decision issued before the key's failed attempt ended does not authorise the retry; at or after does", async () => {
      const b = await bench();
      const req = b.request();
      const t0 = b.clock.now();
      b.replies.set("a", { outcome: "permanent_failure", reason: "declined" });
      b.clock.advance(5);
      const failed = await execute(b, req, decisionFor(req, b.clock.now()));
      expect(failed).toMatchObject({ state: "FAILED", endedAt: t0 + 5 });
      const key = await idem(b, req);
      b.clock.advance(100);
      const stale = await execute(b, req, decisionFor(req, t0 + 4));
      expect(stale).toMatchObject({ state: "REFUSED", reasonCode: "DECISION_PREDATES_ATTEMPT" });
      expect(await idem(b, req)).toEqual(key);
      expect(b.calls).toHaveLength(1);
      b.replies.delete("a");
      // Equal timestamps: issued in the millisecond the failure was recorded is accepted.
      const same = await execute(b, req, decisionFor(req, t0 + 5));
      expect(same.state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(2);
      await journalOk(b);
    });

    // Invariant (item 8): the host's own retries sign a fresh decision at claim time and pass.
    it("the host's transient retries still pass", async () => {
      const b = await bench();
      let n = 0;
      b.replies.set("a", () => (++n === 1 ? { outcome: "transient_failure", reason: "503" } : { outcome: "success", externalRef: "r-2" }));
      const { invocation } = await b.host.submit(b.request());
      const w = b.host.worker();
      expect(await w.runOnce()).toEqual(["queued"]);
      b.clock.advance(60_000);
      expect(await w.runOnce()).toEqual(["succeeded"]);
      expect((await b.host.get(b.scope, invocation.invocationId))?.status).toBe("succeeded");
      expect(b.calls).toHaveLength(2);
    });
  });
}

// Invariant (item 7): inProgressTimeoutMs is an integer from timeoutMs to what a timer holds; anything
// else is refused at construction with INVALID_OPTION naming the option.
describe("inProgressTimeoutMs option", () => {
  it("refuses bad values on the boundary and the host", () => {
    const store = {} as Store;
    for (const v of [0, -1, 1.5, Number.NaN, Infinity, "60000", 999, MAX_TIMER_MS + 1, null]) {
      const opts = { store, keyring, actions, connectors: [], standingFromStore: true, acceptedPolicyRefs: [], timeoutMs: 1000, inProgressTimeoutMs: v as number, clock: manualClock(0), crypto, random: systemRandom };
      expect(() => createBoundaryCore(opts), String(v)).toThrow(/inProgressTimeoutMs/);
      try {
        createHostCore({ store, actions, connectors: [], policy: { evaluate: async () => ({ result: "DENY", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => [] }, signingKey: KEYS.trusted, clock: manualClock(0), crypto, random: systemRandom, timeoutMs: 1000, inProgressTimeoutMs: v as number });
        expect.unreachable(String(v));
      } catch (e) {
        expect(isWritError(e, "INVALID_OPTION") && /createHost: inProgressTimeoutMs/.test((e as Error).message), String(e)).toBe(true);
      }
    }
  });
  it("accepts the bounds", () => {
    const store = {} as Store;
    for (const v of [1000, MAX_TIMER_MS, undefined]) {
      expect(() => createBoundaryCore({ store, keyring, actions, connectors: [], standingFromStore: true, acceptedPolicyRefs: [], timeoutMs: 1000, ...(v !== undefined ? { inProgressTimeoutMs: v } : {}), clock: manualClock(0), crypto, random: systemRandom })).not.toThrow();
    }
  });
});
