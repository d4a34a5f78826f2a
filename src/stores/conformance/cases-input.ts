/**
 * The shared input rules and the lock order (docs/stores.md), which every store applies through
 * one wrapper in core (`guardStore`): the same bad input is refused the same way everywhere
 * (INVALID_ARGUMENT, nothing written), and a transaction that takes a lock out of order is
 * refused (LOCK_ORDER, rolled back).
 */
import assert from "node:assert/strict";
import type { Store, StoreTx } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import { rejectsWithCode, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { attempt, invocation, newScope, reconciliation, uid } from "./fixtures.js";

const LONG = "x".repeat(513);

/** Scopes every store refuses. */
function badScopes(): Array<[string, unknown]> {
  return [
    ["empty tenantId", { tenantId: "", spaceId: "space-1" }],
    ["empty spaceId", { tenantId: uid("tenant"), spaceId: "" }],
    ["oversized tenantId", { tenantId: LONG, spaceId: "space-1" }],
    ["non-string spaceId", { tenantId: uid("tenant"), spaceId: 7 }],
    ["no scope", null],
  ];
}

async function refusedInput(store: Store, fn: (tx: StoreTx) => Promise<unknown>, what: string): Promise<void> {
  await rejectsWithCode(
    store.transact((tx) => fn(tx)),
    "INVALID_ARGUMENT",
    what,
  );
}

export const inputCases: StoreConformanceCase[] = [
  {
    name: "input: scopes need non-empty, bounded tenantId and spaceId, on reads and writes",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        for (const [label, raw] of badScopes()) {
          const scope = raw as Scope;
          await refusedInput(store, (tx) => tx.getInvocation(scope, uid("inv")), `getInvocation with ${label}`);
          await refusedInput(store, (tx) => tx.listInvocations(scope), `listInvocations with ${label}`);
          await refusedInput(store, (tx) => tx.lock(scope, ["k"]), `lock with ${label}`);
          if (raw !== null && typeof (raw as Scope).tenantId === "string" && typeof (raw as Scope).spaceId === "string") {
            const stamped = raw as Scope;
            await refusedInput(store, (tx) => tx.insertInvocation(stamped, invocation(stamped)), `insertInvocation with ${label}`);
            await refusedInput(store, (tx) => tx.insertAttempt(stamped, attempt(stamped)), `insertAttempt with ${label}`);
          }
        }
      });
    },
  },
  {
    name: "input: ids are non-empty and bounded; nothing is written when one is not",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        await refusedInput(store, (tx) => tx.getInvocation(scope, ""), "getInvocation with an empty id");
        await refusedInput(store, (tx) => tx.getApproval(scope, LONG), "getApproval with an oversized id");
        await refusedInput(store, (tx) => tx.insertInvocation(scope, invocation(scope, { invocationId: "" })), "insertInvocation with an empty id");
        await refusedInput(store, (tx) => tx.insertInvocation(scope, invocation(scope, { invocationId: LONG })), "insertInvocation with an oversized id");
        await refusedInput(store, (tx) => tx.insertInvocation(scope, invocation(scope, { idempotencyKey: "" })), "insertInvocation with an empty idempotency key");
        await refusedInput(store, (tx) => tx.insertReconciliation(scope, reconciliation(scope, { reconciliationId: "" })), "insertReconciliation with an empty id");
        await refusedInput(store, (tx) => tx.insertAttempt(scope, attempt(scope, { attemptId: LONG })), "insertAttempt with an oversized id");
        await refusedInput(store, (tx) => tx.listCompletions(scope, "", "ref"), "listCompletions with an empty connector");
        await refusedInput(store, (tx) => tx.rememberDelivery(scope, "conn", "", 1), "rememberDelivery with an empty delivery id");
        await refusedInput(store, (tx) => tx.getApiKey(""), "getApiKey with an empty key id");
        await refusedInput(store, (tx) => tx.listInvocations(scope, { limit: -1 }), "listInvocations with a negative limit");
        await refusedInput(store, (tx) => tx.claimInvocations({ owner: "", tokens: ["t"], now: 1, leaseMs: 1, limit: 1 }), "claimInvocations with an empty owner");
        const inv = invocation(scope);
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        await refusedInput(store, (tx) => tx.updateInvocation(scope, { ...inv, status: "cancelled" }, { invocationId: uid("inv"), owner: "o", token: "t" }), "a fence naming another invocation");
        await refusedInput(store, (tx) => tx.updateInvocation(scope, { ...inv, status: "cancelled", rev: -1 }), "an update with a negative rev");
        await store.transact(async (tx) => {
          assert.deepStrictEqual((await tx.listInvocations(scope)).map((i) => i.invocationId), [inv.invocationId], "only the valid invocation was stored");
          assert.equal((await tx.getInvocation(scope, inv.invocationId))?.status, "queued", "refused updates changed nothing");
          assert.deepStrictEqual(await tx.listAttempts(scope), [], "no attempt was stored");
        });
      });
    },
  },
  {
    name: "lock order: invocation rows, keys, attempt counter, journal; out of order is refused and rolled back",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const inv = invocation(scope);
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        await rejectsWithCode(
          store.transact(async (tx) => {
            await tx.lock(scope, ["journal"]);
            await tx.updateInvocation(scope, { ...inv, status: "cancelled" });
          }),
          "LOCK_ORDER",
          "an invocation row after the journal",
        );
        await rejectsWithCode(
          store.transact(async (tx) => {
            await tx.insertAttempt(scope, attempt(scope));
            await tx.lock(scope, ["idem:k"]);
          }),
          "LOCK_ORDER",
          "a key after the attempt counter",
        );
        await rejectsWithCode(
          store.transact(async (tx) => {
            await tx.lock(scope, ["idem:k"]);
            await tx.getInvocation(scope, inv.invocationId, { forUpdate: true });
          }),
          "LOCK_ORDER",
          "an invocation row after a key",
        );
        // In order: accepted. A row already held may be written after later classes.
        await store.transact(async (tx) => {
          const cur = await tx.getInvocation(scope, inv.invocationId, { forUpdate: true });
          await tx.lock(scope, ["idem:k"]);
          await tx.insertAttempt(scope, attempt(scope));
          await tx.lock(scope, ["journal"]);
          await tx.updateInvocation(scope, { ...cur!, status: "cancelled" });
        });
        await store.transact(async (tx) => {
          assert.equal((await tx.getInvocation(scope, inv.invocationId))?.status, "cancelled");
          assert.equal((await tx.listAttempts(scope)).length, 1, "the refused transactions left no attempt");
        });
      });
    },
  },
];
