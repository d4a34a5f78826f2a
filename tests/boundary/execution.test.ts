/**
 * SPEC 3.2-3.4: execution outcomes, at-most-once under concurrency, timeouts, duplicates, retries,
 * multi-step attempts and ordered attempt records. Runs against every store.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { SCOPE, makeBench, type Bench, type ConnectorMode } from "./fixture.js";
import { tick, until } from "../helpers/wait.js";

/** Makes the connector wait until the returned function is called, then succeed once. */
function holdSuccess(b: Bench): () => void {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  b.mode.current = async () => {
    await gate;
    return { outcome: "success", externalRef: "once" };
  };
  return release;
}


for (const factory of allStoreFactories()) {
  describe(`boundary execution on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    // Invariant: each reply shape maps to exactly one recorded state and reason code (SPEC 3.2).
    const cases: Array<[string, ConnectorMode, string, string | undefined]> = [
      ["success", { outcome: "success", externalRef: "re_1" }, "SUCCEEDED", undefined],
      ["permanent failure", { outcome: "permanent_failure", reason: "card declined" }, "FAILED", "CONNECTOR_FAILURE"],
      ["transient failure", { outcome: "transient_failure", reason: "503" }, "FAILED", "CONNECTOR_TRANSIENT_FAILURE"],
      ["thrown error", "throw", "FAILED", "CONNECTOR_ERROR"],
      ["reported timeout", { outcome: "timeout" }, "TIMED_OUT", "EXECUTION_TIMEOUT"],
      ["ambiguous", { outcome: "ambiguous", reason: "502 after send" }, "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["accepted", { outcome: "accepted", externalRef: "op_9" }, "HANDED_OFF", undefined],
      ["null reply", () => null, "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["number reply", () => 42, "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["string reply", () => "ok", "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["array reply", () => [{ outcome: "success", externalRef: "x" }], "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["unrecognised outcome", () => ({ outcome: "done", externalRef: "x" }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["success without externalRef", () => ({ outcome: "success" }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      // A ref no store can keep faithfully (a PostgreSQL text column refuses NUL) names nothing:
      // the same answer on every store, never a settlement the store refuses.
      ["success with an externalRef holding NUL", () => ({ outcome: "success", externalRef: "re\u0000x" }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["success with an externalRef holding an unpaired surrogate", () => ({ outcome: "success", externalRef: "re\ud800" }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["accepted with an externalRef holding NUL", () => ({ outcome: "accepted", externalRef: "\u0000" }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["success with an oversized externalRef", () => ({ outcome: "success", externalRef: "r".repeat(513) }), "UNKNOWN", "OUTCOME_AMBIGUOUS"],
      ["success with an emoji externalRef", () => ({ outcome: "success", externalRef: "re_\ud83d\ude00" }), "SUCCEEDED", undefined],
      [
        "getter that throws",
        () =>
          Object.defineProperty({}, "outcome", {
            get() {
              throw new Error("boom");
            },
            enumerable: true,
          }),
        "UNKNOWN",
        "OUTCOME_AMBIGUOUS",
      ],
    ];
    for (const [name, mode, state, code] of cases) {
      it(`reply: ${name} -> ${state}`, async () => {
        const b = makeBench(store);
        b.mode.current = mode;
        const req = b.request();
        const a = await b.execute(req, b.decision(req));
        expect(a.state).toBe(state);
        expect(a.reasonCode).toBe(code);
        expect(b.calls).toHaveLength(1);
        const stored = await store.transact((tx) => tx.getAttempt(SCOPE, a.attemptId));
        expect(stored?.state).toBe(state);
      });
    }

    it("a getter is read once: a reply that changes its mind is judged on the first read", async () => {
      const b = makeBench(store);
      let reads = 0;
      b.mode.current = () => ({
        get outcome() {
          reads++;
          return reads === 1 ? "ambiguous" : "success";
        },
        externalRef: "x",
      });
      const req = b.request();
      const a = await b.execute(req, b.decision(req));
      expect(a.state).toBe("UNKNOWN");
      expect(reads).toBe(1);
    });

    it("the connector gets the step idempotency key, an AbortSignal and a deadline", async () => {
      const b = makeBench(store);
      const req = b.request();
      await b.execute(req, b.decision(req));
      const ctx = b.calls[0]!;
      expect(ctx.idempotencyKey).toBe(b.boundary().stepKey(SCOPE, req.action, req.idempotencyKey, 0));
      expect(ctx.signal).toBeInstanceOf(AbortSignal);
      expect(ctx.deadline).toBe(b.clock.now() + 1000);
      expect(ctx.request).toEqual(req);
    });

    // Invariant: one decision authorizes at most one execution, whatever the concurrency.
    it("50 concurrent executes with one decision make exactly one connector call", async () => {
      const b = makeBench(store);
      const release = holdSuccess(b);
      const req = b.request();
      const token = b.decision(req);
      const all = Promise.all(Array.from({ length: 50 }, () => b.execute(req, token)));
      await until(() => b.calls.length === 1, "the first call");
      release();
      const results = await all;
      expect(b.calls).toHaveLength(1);
      expect(results.filter((r) => r.state === "SUCCEEDED")).toHaveLength(1);
      for (const r of results.filter((x) => x.state !== "SUCCEEDED")) {
        expect(["EXECUTION_IN_PROGRESS", "DUPLICATE", "DECISION_REPLAYED"]).toContain(r.reasonCode ?? r.state);
      }
    });

    // Invariant: one idempotency key yields at most one effect even under 50 distinct valid decisions.
    it("50 distinct decisions under one idempotency key make exactly one call", async () => {
      const b = makeBench(store);
      const release = holdSuccess(b);
      const req = b.request();
      const tokens = Array.from({ length: 50 }, () => b.decision(req));
      const all = Promise.all(tokens.map((t) => b.execute(req, t)));
      await until(() => b.calls.length === 1, "the first call");
      release();
      const results = await all;
      expect(b.calls).toHaveLength(1);
      expect(results.filter((r) => r.state === "SUCCEEDED")).toHaveLength(1);
      for (const r of results.filter((x) => x.state !== "SUCCEEDED")) {
        expect(r.state === "DUPLICATE" || r.reasonCode === "EXECUTION_IN_PROGRESS").toBe(true);
      }
    });

    // Invariant: an unanswered call is TIMED_OUT (never success/failure), its signal fires, a late
    // answer changes nothing, and the key is blocked until reconciled.
    it("a connector that never answers: TIMED_OUT, aborted, late resolution ignored, then RECONCILIATION_PENDING", async () => {
      const b = makeBench(store);
      let resolveLate!: (v: unknown) => void;
      b.mode.current = () => new Promise((r) => (resolveLate = r));
      const req = b.request();
      const pending = b.execute(req, b.decision(req));
      await until(() => b.calls.length === 1, "the call");
      const signal = b.calls[0]!.signal;
      expect(signal.aborted).toBe(false);
      b.clock.advance(1000);
      const a = await pending;
      expect(a.state).toBe("TIMED_OUT");
      expect(a.reasonCode).toBe("EXECUTION_TIMEOUT");
      expect(signal.aborted).toBe(true);
      resolveLate({ outcome: "success", externalRef: "too-late" });
      await tick();
      const stored = await store.transact((tx) => tx.getAttempt(SCOPE, a.attemptId));
      expect(stored?.state).toBe("TIMED_OUT");
      expect(stored?.externalRef).toBeUndefined();
      const steps = await store.transact((tx) => tx.getSteps(SCOPE, a.invocationId!));
      expect(steps[0]?.status).toBe("unknown");
      b.mode.current = { outcome: "success", externalRef: "again" };
      const retry = await b.execute(req, b.decision(req));
      expect(retry.reasonCode).toBe("RECONCILIATION_PENDING");
      expect(b.calls).toHaveLength(1);
    });

    // Invariant: a succeeded key returns the original result as DUPLICATE without calling anything.
    it("DUPLICATE returns the original result", async () => {
      const b = makeBench(store);
      b.mode.current = { outcome: "success", externalRef: "re_orig", output: { amount: 10 } };
      const req = b.request();
      const first = await b.execute(req, b.decision(req));
      const dup = await b.execute(req, b.decision(req));
      expect(dup.state).toBe("DUPLICATE");
      expect(dup.externalRef).toBe("re_orig");
      expect(dup.output).toEqual(first.output);
      expect(dup.originalAttemptId).toBe(first.attemptId);
      expect(b.calls).toHaveLength(1);
    });

    // Invariant: a definite failure does not block; the retry needs a new decision and reuses the key.
    it("after a definite failure a fresh decision retries under the same key; the old decision is replayed", async () => {
      const b = makeBench(store);
      b.mode.current = { outcome: "transient_failure", reason: "503" };
      const req = b.request();
      const d1 = b.decision(req);
      const first = await b.execute(req, d1);
      expect(first.state).toBe("FAILED");
      expect(first.transient).toBe(true);
      b.mode.current = { outcome: "success", externalRef: "ok" };
      const replay = await b.execute(req, d1);
      expect(replay.reasonCode).toBe("DECISION_REPLAYED");
      const second = await b.execute(req, b.decision(req));
      expect(second.state).toBe("SUCCEEDED");
      expect(b.calls.map((c) => c.idempotencyKey)).toEqual([b.calls[0]!.idempotencyKey, b.calls[0]!.idempotencyKey]);
    });

    it("a multi-step attempt runs steps in order, feeds outputs forward and ends in the last step's state", async () => {
      const b = makeBench(store);
      b.mode.current = (ctx) => ({ outcome: "success", externalRef: `ref-${ctx.step.name}`, output: { step: ctx.step.name } });
      const req = b.request({ action: "orders.fulfil", params: { orderId: "o1" } });
      const a = await b.execute(req, b.decision(req));
      expect(a.state).toBe("SUCCEEDED");
      expect(a.stepIndex).toBe(1);
      expect(a.externalRef).toBe("ref-ship");
      expect(b.calls.map((c) => c.step.name)).toEqual(["reserve", "ship"]);
      expect(b.calls[1]!.input).toEqual({ orderId: "o1", reserved: { step: "reserve" } });
      const steps = await store.transact((tx) => tx.getSteps(SCOPE, a.invocationId!));
      expect(steps.map((s) => s.status)).toEqual(["succeeded", "succeeded"]);
      expect(new Set(steps.map((s) => s.stepKey)).size).toBe(2);
    });

    it("a failed second step is retried alone under a new decision; the first is not repeated", async () => {
      const b = makeBench(store);
      b.mode.current = (ctx) => (ctx.step.index === 1 ? { outcome: "permanent_failure", reason: "out of stock" } : { outcome: "success", externalRef: "r1" });
      const req = b.request({ action: "orders.fulfil", params: { orderId: "o2" } });
      const a = await b.execute(req, b.decision(req));
      expect(a.state).toBe("FAILED");
      expect(a.stepIndex).toBe(1);
      b.mode.current = { outcome: "success", externalRef: "r2" };
      const again = await b.execute(req, b.decision(req));
      expect(again.state).toBe("SUCCEEDED");
      expect(b.calls.map((c) => c.step.index)).toEqual([0, 1, 1]);
    });

    // Invariant: attempts are recorded in order, refusals included.
    it("attempt records are ordered, refusals included", async () => {
      const b = makeBench(store);
      const scope = { tenantId: `t-order-${Math.random().toString(36).slice(2)}`, spaceId: "s" };
      b.authorities.set("auth-1", { ...b.authorities.get("auth-1")!, ...scope });
      const req = b.request({ ...scope });
      const d = b.decision(req);
      const states: string[] = [];
      states.push((await b.execute(req, d)).state);
      states.push((await b.execute(req, d)).state);
      states.push((await b.execute(req, "garbage")).state);
      states.push((await b.execute(req, b.decision(req))).state);
      const list = await store.transact((tx) => tx.listAttempts(scope));
      expect(list.map((x) => x.state)).toEqual(states);
      expect(states).toEqual(["SUCCEEDED", "DUPLICATE", "REFUSED", "DUPLICATE"]);
      expect(list.map((x) => x.seq)).toEqual([...list.map((x) => x.seq)].sort((x, y) => x - y));
    });
  });
}
