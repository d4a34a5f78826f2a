/** Conformance cases: invocations, fenced writes and step checkpoints. */
import assert from "node:assert/strict";
import type { Fence, Invocation, StepStatus } from "../../core/types.js";
import { assertRecord, rejectsLeaseLost, rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, invocation, newScope, step, uid } from "./fixtures.js";

const ids = (list: Invocation[]): string[] => list.map((i) => i.invocationId);

export const invocationCases: StoreConformanceCase[] = [
  {
    // Invariant: invocations are unique by id and by (action, idempotencyKey) within a scope;
    // they are found by either; administrative (unfenced) updates replace them.
    name: "invocations: insert, unique id and key, get, find by key, update",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = invocation(scope, { reasons: ["policy:p1"] });
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        await rejectsWithCode(
          store.transact((tx) => tx.insertInvocation(scope, { ...inv, idempotencyKey: uid("key") })),
          "CONFLICT",
          "duplicate invocation id",
        );
        await rejectsWithCode(
          store.transact((tx) => tx.insertInvocation(scope, invocation(scope, { idempotencyKey: inv.idempotencyKey }))),
          "CONFLICT",
          "duplicate (action, idempotencyKey)",
        );
        const otherAction = invocation(scope, { action: "payments.capture", idempotencyKey: inv.idempotencyKey });
        await store.transact((tx) => tx.insertInvocation(scope, otherAction));
        await store.transact(async (tx) => {
          assertRecord(await tx.getInvocation(scope, inv.invocationId), inv, "invocation by id");
          assertRecord(await tx.findInvocationByKey(scope, inv.action, inv.idempotencyKey), inv, "invocation by key");
          assertRecord(await tx.findInvocationByKey(scope, otherAction.action, inv.idempotencyKey), otherAction, "same key, other action");
          assert.equal(await tx.findInvocationByKey(scope, inv.action, uid("key")), null);
          assert.equal(await tx.getInvocation(scope, uid("inv")), null);
        });
        const parked = { ...inv, status: "awaiting_approval" as const, approvalId: uid("appr"), result: { partial: [1] }, updatedAt: T0 + 5 };
        await store.transact((tx) => tx.updateInvocation(scope, parked));
        assertRecord(await store.transact((tx) => tx.getInvocation(scope, inv.invocationId)), parked, "updated invocation");
        await rejectsWithCode(
          store.transact((tx) => tx.updateInvocation(scope, invocation(scope))),
          "NOT_FOUND",
          "update of an unknown invocation",
        );
      });
    },
  },
  {
    // Invariant: listInvocations is newest first by (createdAt, invocationId), filters by
    // status, honours limit, and `after` (an invocation id) continues the listing after that
    // invocation: the next, older page.
    name: "invocations: list newest first with status filter, limit and after-cursor pages",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const p = uid("inv");
        const i1 = invocation(scope, { invocationId: `${p}-1`, createdAt: T0 });
        const i2 = invocation(scope, { invocationId: `${p}-2`, createdAt: T0 + 1 });
        const i3 = invocation(scope, { invocationId: `${p}-3a`, createdAt: T0 + 2, status: "succeeded" });
        const i4 = invocation(scope, { invocationId: `${p}-3b`, createdAt: T0 + 2 });
        await store.transact(async (tx) => {
          for (const inv of [i3, i1, i4, i2]) await tx.insertInvocation(scope, inv);
        });
        await store.transact(async (tx) => {
          const all = await tx.listInvocations(scope);
          assert.deepStrictEqual(ids(all), ids([i4, i3, i2, i1]));
          assertRecord(all[1], i3, "listed invocation");
          assert.deepStrictEqual(ids(await tx.listInvocations(scope, { status: "queued" })), ids([i4, i2, i1]));
          assert.deepStrictEqual(ids(await tx.listInvocations(scope, { status: "succeeded" })), ids([i3]));
          assert.deepStrictEqual(await tx.listInvocations(scope, { status: "failed" }), []);
          const page1 = await tx.listInvocations(scope, { limit: 2 });
          assert.deepStrictEqual(ids(page1), ids([i4, i3]));
          const page2 = await tx.listInvocations(scope, { limit: 2, after: page1[1]!.invocationId });
          assert.deepStrictEqual(ids(page2), ids([i2, i1]));
          assert.deepStrictEqual(await tx.listInvocations(scope, { limit: 2, after: i1.invocationId }), []);
          assert.deepStrictEqual(ids(await tx.listInvocations(scope, { after: i4.invocationId, status: "queued" })), ids([i2, i1]));
        });
      });
    },
  },
  {
    // Invariant: a fenced write (updateInvocation, putStep, assertLease) succeeds only while the
    // invocation is `running` under the fence's exact owner and token. A stale token, another
    // owner, an unknown invocation or a non-running status is refused with LeaseLostError and
    // nothing is written.
    name: "leases: fenced writes are refused with LeaseLostError unless running under owner and token",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const owner = uid("worker");
        const token = uid("tok");
        const inv = invocation(scope, { status: "running", leaseOwner: owner, leaseToken: token, leaseExpiresAt: T0 + 30_000, attemptCount: 1 });
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        const fence: Fence = { invocationId: inv.invocationId, owner, token };
        const stale: Fence = { ...fence, token: uid("tok") };
        const otherOwner: Fence = { ...fence, owner: uid("worker") };
        const unknown: Fence = { ...fence, invocationId: uid("inv") };
        const changed = { ...inv, nextStep: 1, updatedAt: T0 + 1 };
        for (const [label, f] of [
          ["stale token", stale],
          ["other owner", otherOwner],
        ] as const) {
          await rejectsLeaseLost(
            store.transact((tx) => tx.updateInvocation(scope, changed, f)),
            `updateInvocation with ${label}`,
          );
          await rejectsLeaseLost(
            store.transact((tx) => tx.putStep(scope, step(scope, inv.invocationId, 0), f)),
            `putStep with ${label}`,
          );
          await rejectsLeaseLost(
            store.transact((tx) => tx.assertLease(scope, f)),
            `assertLease with ${label}`,
          );
        }
        await rejectsLeaseLost(
          store.transact((tx) => tx.assertLease(scope, unknown)),
          "assertLease on an unknown invocation",
        );
        await store.transact(async (tx) => {
          assertRecord(await tx.getInvocation(scope, inv.invocationId), inv, "invocation after refused writes");
          assert.deepStrictEqual(await tx.getSteps(scope, inv.invocationId), [], "steps after refused writes");
        });

        // The lease holder writes.
        const st = step(scope, inv.invocationId, 0);
        await store.transact(async (tx) => {
          await tx.assertLease(scope, fence);
          await tx.updateInvocation(scope, changed, fence);
          await tx.putStep(scope, st, fence);
        });
        // It settles the invocation (keeping the lease fields): the status is no longer running.
        const settled = { ...changed, status: "succeeded" as const, updatedAt: T0 + 2 };
        await store.transact((tx) => tx.updateInvocation(scope, settled, fence));
        await rejectsLeaseLost(
          store.transact((tx) => tx.updateInvocation(scope, { ...settled, status: "running" }, fence)),
          "updateInvocation once not running",
        );
        await rejectsLeaseLost(
          store.transact((tx) => tx.putStep(scope, { ...st, status: "succeeded" }, fence)),
          "putStep once not running",
        );
        await rejectsLeaseLost(
          store.transact((tx) => tx.assertLease(scope, fence)),
          "assertLease once not running",
        );
        await store.transact(async (tx) => {
          assertRecord(await tx.getInvocation(scope, inv.invocationId), settled, "settled invocation");
          assertRecord((await tx.getSteps(scope, inv.invocationId))[0], st, "step written under the lease");
        });
      });
    },
  },
  {
    // Invariant: step status is monotonic: a succeeded, failed or unknown step never returns to
    // `started` within its attempt (CONFLICT, nothing written); succeeded and unknown never do at
    // all; a failed step may be restarted only by a NEW attempt (a retry under a new decision);
    // `started` may be rewritten (recovery) and `handed_off` may settle. getSteps returns an
    // invocation's steps in stepIndex order.
    name: "steps: settled steps never return to started; getSteps is ordered by stepIndex",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const invocationId = uid("inv");
        await store.transact(async (tx) => {
          for (const i of [2, 0, 1]) await tx.putStep(scope, step(scope, invocationId, i));
        });
        assert.deepStrictEqual(
          (await store.transact((tx) => tx.getSteps(scope, invocationId))).map((s) => s.stepIndex),
          [0, 1, 2],
        );
        const settled: StepStatus[] = ["succeeded", "failed", "unknown"];
        for (const [i, status] of settled.entries()) {
          const started = step(scope, invocationId, i, { attemptId: uid("att") });
          await store.transact((tx) => tx.putStep(scope, started));
          const outcome = { ...started, status, endedAt: T0 + 10, reasonCode: status === "succeeded" ? undefined : ("OUTCOME_AMBIGUOUS" as const), output: { i } };
          await store.transact((tx) => tx.putStep(scope, outcome));
          await rejectsWithCode(store.transact((tx) => tx.putStep(scope, started)), "CONFLICT", `${status} step back to started in its own attempt`);
          if (status !== "failed") {
            await rejectsWithCode(
              store.transact((tx) => tx.putStep(scope, { ...started, attemptId: uid("att") })),
              "CONFLICT",
              `${status} step back to started by another attempt`,
            );
          }
          assertRecord((await store.transact((tx) => tx.getSteps(scope, invocationId)))[i], outcome, `${status} step after the refused write`);
          if (status === "failed") {
            const retry = { ...started, attemptId: uid("att") };
            await store.transact((tx) => tx.putStep(scope, retry));
            assertRecord((await store.transact((tx) => tx.getSteps(scope, invocationId)))[i], retry, "failed step restarted by a new attempt");
          }
        }
        for (const [k, status] of settled.entries()) {
          const i = 3 + k;
          const handedOff = step(scope, invocationId, i, { status: "handed_off", externalRef: uid("ext"), deadlineAt: T0 + 60_000 });
          await store.transact((tx) => tx.putStep(scope, handedOff));
          const outcome = { ...handedOff, status, endedAt: T0 + 20 };
          await store.transact((tx) => tx.putStep(scope, outcome));
          assertRecord((await store.transact((tx) => tx.getSteps(scope, invocationId)))[i], outcome, `handed_off step settled ${status}`);
        }
        assert.deepStrictEqual(await store.transact((tx) => tx.getSteps(scope, uid("inv"))), []);
      });
    },
  },
];
