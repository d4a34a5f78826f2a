/**
 * Cancellation rechecked at every asynchronous preparation boundary, the refusal of a cancel once a
 * step started, and a stopping worker aborting in-flight connector calls (docs/host.md,
 * Cancellation), on every store. Each interleaving is real: the test holds a promise the worker
 * awaits (the prepare read, the policy evaluation, the boundary's policy-ref lookup, a connector
 * call) and acts while the worker waits on it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import type { PolicyEngine } from "../../src/core/policy.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import { sealJournalNow } from "../../src/index.js";
import { allStoreFactories, withTransitions } from "../helpers/stores.js";
import { until } from "../helpers/wait.js";
import { KEYS } from "../boundary/fixture.js";
import { crypto, decisionFor, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const BY = { type: "user", id: "op" } as const;

interface Gate {
  /** Resolves when the worker reached the gate. */
  reached: Promise<void>;
  open(): void;
  wait(): Promise<void>;
}
function gate(): Gate {
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  const opened = new Promise<void>((r) => (release = r));
  return {
    reached,
    open: () => release(),
    wait: () => {
      arrive();
      return opened;
    },
  };
}

/** The store, except that the host's prepare read waits on `g` after reading (a cancel lands meanwhile). */
function gatedPrepare(store: Store, g: { current: Gate | null }): Store {
  return withTransitions(
    store,
    (own) =>
      new Proxy(own, {
        get(t, k) {
          // The prepare read on its own (a store that makes it with the claim has no gap to gate).
          if (k === "claimPrepared") return undefined;
          if (k === "prepare") {
            return async (...args: Parameters<typeof own.prepare>) => {
              await g.current?.wait();
              return own.prepare(...args);
            };
          }
          const v = Reflect.get(t, k) as unknown;
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      }),
  );
}

async function entryTypes(b: HostBench, invocationId: string): Promise<string[]> {
  await sealJournalNow(b.store, b.scope);
  const entries = await readCommitted(b.store, (tx) => tx.readJournal(b.scope, {}));
  return entries.filter((e) => Object.values(e.refs ?? {}).includes(invocationId)).map((e) => e.type);
}

async function journalOk(b: HostBench): Promise<void> {
  await sealJournalNow(b.store, b.scope);
  const v = await verifyStoredJournal(b.store, crypto, createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]), b.scope);
  expect(v.problems).toEqual([]);
}

/** Nothing ran and nothing was consumed: no connector call, no attempt, no decision.consumed. */
async function untouched(b: HostBench, invocationId: string): Promise<void> {
  expect(b.calls).toHaveLength(0);
  const attempts = await readCommitted(b.store, (tx) => tx.listAttempts(b.scope, { invocationId }));
  expect(attempts).toEqual([]);
  const types = await entryTypes(b, invocationId);
  expect(types).not.toContain("decision.consumed");
  expect(types).toContain("invocation.cancelled");
  expect((await b.host.get(b.scope, invocationId))?.status).toBe("cancelled");
  expect(await readCommitted(b.store, (tx) => tx.getSteps(b.scope, invocationId))).toEqual([]);
}

for (const factory of allStoreFactories()) {
  describe(`cancellation on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(overrides = {}, s: Store = store): Promise<HostBench> {
      const b = makeHostBench(s, overrides);
      await grantAuthority(b);
      return b;
    }

    // Recheck 1: a cancel accepted between the claim and the worker's prepare read (which reads
    // the invocation's status with the steps, authority and approval) stops the worker before the
    // policy is even asked.
    it("a cancel before the prepare read stops the worker before evaluation", async () => {
      const g: { current: Gate | null } = { current: gate() };
      const b = await bench({}, gatedPrepare(store, g));
      let evaluated = 0;
      b.duringEvaluate.current = async () => void evaluated++;
      const { invocation } = await b.host.submit(b.request());
      const run = b.host.worker().runOnce();
      await g.current!.reached;
      expect((await b.host.cancel(b.scope, invocation.invocationId, BY)).status).toBe("cancelled");
      g.current!.open();
      expect(await run).toEqual(["cancelled"]);
      expect(evaluated).toBe(0);
      await untouched(b, invocation.invocationId);
      await journalOk(b);
    });

    // Invariant: cancelling an invocation that awaits approval closes its approval in the same
    // transition (journaled), so it leaves the pending list; a later vote or revocation is refused
    // with APPROVAL_CLOSED and changes nothing; the invocation stays cancelled and nothing runs.
    it("a cancel while awaiting approval closes the approval; votes on it are refused", async () => {
      const b = await bench();
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request());
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const parked = await b.host.get(b.scope, invocation.invocationId);
      expect(parked?.status).toBe("awaiting_approval");
      const approvalId = parked!.approvalId!;
      expect((await b.host.approvals.list(b.scope, { status: "pending" })).map((a) => a.approvalId)).toContain(approvalId);

      await b.host.cancel(b.scope, invocation.invocationId, BY);
      const closed = await b.host.approvals.get(b.scope, approvalId);
      expect(closed?.status).toBe("closed");
      expect(closed?.closed).toMatchObject({ invocationStatus: "cancelled", by: BY });
      expect((await b.host.approvals.list(b.scope, { status: "pending" })).map((a) => a.approvalId)).not.toContain(approvalId);

      const approver = { actor: { type: "user" as const, id: "approver-1" }, roles: ["approve"] };
      for (const verb of ["approve", "deny", "revoke"] as const) {
        await expect(b.host.approvals[verb](b.scope, approvalId, approver)).rejects.toMatchObject({ code: "APPROVAL_CLOSED", message: expect.stringContaining("cancelled by user:op") });
      }
      expect(await b.host.approvals.get(b.scope, approvalId)).toEqual(closed);
      b.verdict.current = "ALLOW";
      expect(await b.host.worker().runOnce()).toEqual([]);
      await untouched(b, invocation.invocationId);
      const types = await entryTypes(b, invocation.invocationId);
      expect(types.filter((t) => t === "approval.closed")).toHaveLength(1);
      await journalOk(b);
    });

    // A cancel accepted while the policy evaluates: the fenced begin refuses, no decision is
    // consumed, and the worker, reading why it lost the lease, reports the cancel.
    it("a cancel during policy evaluation stops the worker before the boundary", async () => {
      const b = await bench();
      const g = gate();
      b.duringEvaluate.current = () => g.wait();
      const { invocation } = await b.host.submit(b.request());
      const run = b.host.worker().runOnce();
      await g.reached;
      await b.host.cancel(b.scope, invocation.invocationId, BY);
      g.open();
      expect(await run).toEqual(["cancelled"]);
      await untouched(b, invocation.invocationId);
      await journalOk(b);
    });

    // Immediately before dispatch: a cancel that lands after the worker's prepare read (here
    // while the boundary looks up the accepted policy refs, just before it records the first
    // step's intent) is caught by the fenced begin: nothing is consumed, nothing called.
    it("a cancel just before dispatch: the fenced begin refuses, no decision consumed, no call", async () => {
      const g: { current: Gate | null } = { current: null };
      const policy: PolicyEngine = {
        evaluate: async () => ({ result: "ALLOW", reasons: ["ok"], policyRef: "test:v1" }),
        acceptedPolicyRefs: async () => {
          await g.current?.wait();
          return ["test:v1"];
        },
      };
      const b = await bench({ policy });
      const { invocation } = await b.host.submit(b.request());
      g.current = gate();
      const run = b.host.worker().runOnce();
      await g.current.reached;
      await b.host.cancel(b.scope, invocation.invocationId, BY);
      g.current.open();
      expect(await run).toEqual(["cancelled"]);
      await untouched(b, invocation.invocationId);
      await journalOk(b);
    });

    // SPEC 4.1: once a step started (the provider may have acted) a cancel is refused with its
    // own code and changes nothing; the invocation runs to its end.
    it("a cancel after a step started is refused with STEPS_STARTED, also between steps and while parked", async () => {
      const b = await bench();
      const g = gate();
      b.replies.set("b", async () => {
        await g.wait();
        return { outcome: "success", externalRef: "ref-b" };
      });
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      const run = b.host.worker().runOnce();
      await g.reached; // step a succeeded, step b in flight
      await expect(b.host.cancel(b.scope, invocation.invocationId, BY)).rejects.toMatchObject({ code: "STEPS_STARTED" });
      g.open();
      expect(await run).toEqual(["succeeded"]);
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b", "c"]);
      // Ended: refused as INVALID_STATE (nothing to cancel), nothing changes.
      await expect(b.host.cancel(b.scope, invocation.invocationId, BY)).rejects.toMatchObject({ code: "INVALID_STATE" });
      expect((await b.host.get(b.scope, invocation.invocationId))?.status).toBe("succeeded");

      b.replies.set("a", { outcome: "accepted", externalRef: "op-1" });
      const parked = (await b.host.submit(b.request({ action: "long.one" }))).invocation;
      expect(await b.host.worker().runOnce()).toEqual(["parked"]);
      await expect(b.host.cancel(b.scope, parked.invocationId, BY)).rejects.toMatchObject({ code: "STEPS_STARTED" });
      expect((await b.host.get(b.scope, parked.invocationId))?.status).toBe("parked");
      // Bad input changes nothing either.
      await expect(b.host.cancel(b.scope, parked.invocationId, { type: "nobody", id: "" } as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await journalOk(b);
    });

    // docs/host.md: stop({ drain: false }) aborts the signal of an in-flight connector call; the
    // call that may have acted ends unknown and goes to reconciliation, never called again.
    it("stop({ drain: false }) aborts a hanging connector's signal; the outcome is unknown -> reconciliation", async () => {
      const b = await bench();
      let seen: AbortSignal | null = null;
      b.replies.set("a", (ctx) => {
        seen = ctx.signal;
        return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(new Error("aborted by the host"))));
      });
      const { invocation } = await b.host.submit(b.request({ action: "one.once" }));
      const w = b.host.worker({ pollMs: 10 });
      w.start();
      await until(() => b.calls.length === 1, "the connector call");
      await w.stop({ drain: false });
      expect(seen!.aborted).toBe(true);
      expect((seen!.reason as { code?: string }).code).toBe("ABORTED");
      const got = await b.host.get(b.scope, invocation.invocationId);
      expect(got?.status).toBe("reconciliation_required");
      const steps = await readCommitted(b.store, (tx) => tx.getSteps(b.scope, invocation.invocationId));
      expect(steps.map((s) => [s.status, s.reasonCode])).toEqual([["unknown", "OUTCOME_AMBIGUOUS"]]);
      expect(b.calls).toHaveLength(1);
      await journalOk(b);
    });

    // Between steps: a worker stopped during step a records a's outcome and never starts b (no
    // intent row for b); recovery resumes at b under a new decision without calling a again.
    it("aborted between steps: the finished step is recorded, the next never starts, recovery resumes", async () => {
      const b = await bench();
      const g = gate();
      b.replies.set("a", async () => {
        await g.wait(); // ignores the signal: the connector decides, and it succeeded
        return { outcome: "success", externalRef: "ref-a", output: { a: 1 } };
      });
      const { invocation } = await b.host.submit(b.request({ action: "three.idem" }));
      const w = b.host.worker({ pollMs: 10, leaseMs: 1000 });
      w.start();
      await g.reached;
      const stopping = w.stop({ drain: false });
      g.open();
      await stopping;
      const steps = await readCommitted(b.store, (tx) => tx.getSteps(b.scope, invocation.invocationId));
      expect(steps.map((s) => [s.stepIndex, s.status])).toEqual([[0, "succeeded"]]);
      expect(b.calls.map((c) => c.operation)).toEqual(["a"]);
      b.clock.advance(1001);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls.map((c) => c.operation)).toEqual(["a", "b", "c"]);
      await journalOk(b);
    });

    // The boundary option itself: aborted before dispatch, nothing is written and ABORTED is thrown.
    it("boundary: an aborted signal before the first step writes nothing and throws ABORTED", async () => {
      const b = await bench();
      const ac = new AbortController();
      ac.abort();
      const req = b.request({ idempotencyKey: "bare-1" });
      const token = decisionFor(req, b.clock.now(), { decisionId: "dec_abort_1", reasons: [] });
      await expect(b.host.context.boundary.execute(req, token, { signal: ac.signal })).rejects.toMatchObject({ code: "ABORTED" });
      expect(b.calls).toHaveLength(0);
      expect(await readCommitted(b.store, (tx) => tx.listAttempts(b.scope, {}))).toEqual([]);
      // The decision was not consumed: the same decision still runs once the caller is not stopping.
      const a = await b.host.context.boundary.execute(req, token);
      expect(a.state).toBe("SUCCEEDED");
      expect(b.calls).toHaveLength(1);
    });
  });
}
