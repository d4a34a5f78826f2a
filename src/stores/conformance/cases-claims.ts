/**
 * Conformance cases: claims, expired leases, heartbeats, nextRunAt. Claims span every scope, so
 * these cases tolerate (and may claim) runnable invocations other cases left in shared storage:
 * they judge only their own invocations, and claim with room to spare.
 */
import assert from "node:assert/strict";
import type { Store } from "../../core/store.js";
import type { Invocation, Scope } from "../../core/types.js";
import { assertRecord, rejectsLeaseLost, withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, fenceOf, invocation, newScope, uid } from "./fixtures.js";

/** A time after every runAt the other cases use. */
const TC = T0 + 1_000_000_000;
/** Room for invocations other cases may have left runnable. */
const ROOM = 500;

function tokens(n: number): string[] {
  return Array.from({ length: n }, () => uid("tok"));
}

async function claim(store: Store, owner: string, now: number, leaseMs: number, limit = ROOM): Promise<{ claimed: Invocation[]; tokens: string[] }> {
  const toks = tokens(limit);
  const claimed = await store.transact((tx) => tx.claimInvocations({ owner, tokens: toks, now, leaseMs, limit }));
  return { claimed, tokens: toks };
}

async function insertAll(store: Store, invs: Invocation[]): Promise<void> {
  await store.transact(async (tx) => {
    for (const inv of invs) await tx.insertInvocation(scopeOf(inv), inv);
  });
}

async function read(store: Store, inv: Invocation): Promise<Invocation | null> {
  return store.transact((tx) => tx.getInvocation(scopeOf(inv), inv.invocationId));
}

function scopeOf(rec: Scope): Scope {
  return { tenantId: rec.tenantId, spaceId: rec.spaceId };
}

export const claimCases: StoreConformanceCase[] = [
  {
    // Invariant: a claim takes, across all scopes, queued invocations with runAt <= now in
    // (runAt, createdAt) order and stamps each with status running, the claimer as lease owner,
    // the i-th token for the i-th invocation, leaseExpiresAt = now + leaseMs, attemptCount + 1
    // and updatedAt = now; the stored row equals the returned one. Future runAt, settled,
    // parked and live-leased invocations are not claimed; limit is honoured.
    name: "claims: runnable invocations of every scope, in order, stamped with the lease",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const s1 = newScope();
        const s2 = newScope();
        const q1 = invocation(s1, { runAt: TC, createdAt: TC + 3 });
        const q2 = invocation(s2, { runAt: TC, createdAt: TC + 1, attemptCount: 2, retryCount: 1 });
        const q3 = invocation(s1, { runAt: TC - 10, createdAt: TC + 5 });
        const future = invocation(s2, { runAt: TC + 1 });
        const done = invocation(s1, { status: "succeeded", runAt: TC - 100 });
        const parked = invocation(s1, { status: "parked", runAt: TC - 100 });
        const leased = invocation(s2, { status: "running", runAt: TC - 50, leaseOwner: uid("other"), leaseToken: uid("tok"), leaseExpiresAt: TC + 1, attemptCount: 1 });
        await insertAll(store, [q1, q2, q3, future, done, parked, leased]);
        const owner = uid("worker");
        const { claimed, tokens: toks } = await claim(store, owner, TC, 5000);
        const mine = new Map([q1, q2, q3].map((i) => [i.invocationId, i]));
        const ours = claimed.filter((c) => mine.has(c.invocationId) || [future, done, parked, leased].some((o) => o.invocationId === c.invocationId));
        assert.deepStrictEqual(
          ours.map((c) => c.invocationId),
          [q3, q2, q1].map((i) => i.invocationId),
          "claims runnable invocations by runAt then createdAt, and only those",
        );
        for (const [i, c] of claimed.entries()) assert.equal(c.leaseToken, toks[i], "the i-th claimed invocation gets the i-th token");
        for (const c of ours) {
          const before = mine.get(c.invocationId)!;
          const expected: Invocation = { ...before, status: "running", leaseOwner: owner, leaseToken: c.leaseToken, leaseExpiresAt: TC + 5000, attemptCount: before.attemptCount + 1, updatedAt: TC, rev: (before.rev ?? 0) + 1 };
          assertRecord(c, expected, "claimed invocation");
          assertRecord(await read(store, c), expected, "stored claimed invocation");
        }
        for (const untouched of [future, done, parked, leased]) assertRecord(await read(store, untouched), untouched, `unclaimed ${untouched.status} invocation`);

        // limit is honoured.
        await insertAll(store, [invocation(s1, { runAt: TC }), invocation(s2, { runAt: TC })]);
        const one = await claim(store, owner, TC, 5000, 1);
        assert.equal(one.claimed.length, 1, "limit 1 claims one invocation");
      });
    },
  },
  {
    // Invariant: runAt is respected (nothing is claimed early), and a lease that expired (at or
    // before now) makes a running invocation claimable again, with attemptCount + 1 and a new
    // owner and token; the previous holder's fence is then refused.
    name: "claims: runAt respected; an expired lease is reclaimable and fences out the old holder",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const later = invocation(scope, { runAt: TC + 1000 });
        await insertAll(store, [later]);
        const a = uid("worker-a");
        const b = uid("worker-b");
        const has = (list: Invocation[]): Invocation | undefined => list.find((c) => c.invocationId === later.invocationId);
        assert.equal(has((await claim(store, a, TC + 999, 1000)).claimed), undefined, "not claimable before runAt");
        const first = has((await claim(store, a, TC + 1000, 1000)).claimed);
        assert.ok(first, "claimable at runAt");
        assert.equal(first.attemptCount, 1);
        assert.equal(has((await claim(store, b, TC + 1999, 1000)).claimed), undefined, "a live lease is not claimable");
        const second = has((await claim(store, b, TC + 2000, 1000)).claimed);
        assert.ok(second, "claimable once the lease expired");
        assert.equal(second.attemptCount, 2, "a reclaim counts as an attempt");
        assert.equal(second.leaseOwner, b);
        assert.notEqual(second.leaseToken, first.leaseToken);
        assert.equal(second.leaseExpiresAt, TC + 3000);
        await rejectsLeaseLost(
          store.transact((tx) => tx.assertLease(scope, fenceOf(first))),
          "the expired holder's fence",
        );
        await rejectsLeaseLost(
          store.transact((tx) => tx.updateInvocation(scope, { ...first, status: "succeeded" }, fenceOf(first))),
          "a write under the expired holder's fence",
        );
        await store.transact((tx) => tx.assertLease(scope, fenceOf(second)));
        assertRecord(await read(store, later), second, "invocation held by the new owner");
      });
    },
  },
  {
    // Invariant: concurrent claimers never receive the same invocation: each of 30 runnable
    // invocations is claimed exactly once (attemptCount 1) and stored under its claimer.
    name: "claims: concurrent claimers never receive the same invocation",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const invs = Array.from({ length: 30 }, (_, i) => invocation(scope, { runAt: TC + 5000, createdAt: TC + i }));
        await insertAll(store, invs);
        const owners = Array.from({ length: 5 }, () => uid("worker"));
        const results = await Promise.all(owners.map((owner) => claim(store, owner, TC + 5000, 60_000, 10)));
        const sweeper = uid("sweeper");
        const rest = await claim(store, sweeper, TC + 5000, 60_000);
        const seen = new Map<string, string>();
        for (const [i, r] of [...results, rest].entries()) {
          const owner = owners[i] ?? sweeper;
          for (const c of r.claimed) {
            assert.ok(!seen.has(c.invocationId), `invocation ${c.invocationId} claimed by ${seen.get(c.invocationId)} and ${owner}`);
            seen.set(c.invocationId, owner);
          }
        }
        for (const inv of invs) {
          const stored = await read(store, inv);
          assert.equal(stored?.status, "running");
          assert.equal(stored.attemptCount, 1, "claimed exactly once");
          assert.equal(stored.leaseOwner, seen.get(inv.invocationId), "stored under the claimer that received it");
        }
      });
    },
  },
  {
    // Invariant: heartbeat extends, for one owner, exactly its live leases (running and not
    // expired at now) to now + leaseMs, and returns how many; expired leases, other owners'
    // leases and non-running invocations are left alone. The token does not change.
    name: "heartbeat: extends only the owner's live leases",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const owner = uid("worker");
        const lease = { leaseOwner: owner, leaseToken: uid("tok"), attemptCount: 1 };
        const live = invocation(scope, { status: "running", ...lease, leaseExpiresAt: TC + 1000 });
        const expired = invocation(scope, { status: "running", ...lease, leaseToken: uid("tok"), leaseExpiresAt: TC + 100 });
        const others = invocation(newScope(), { status: "running", leaseOwner: uid("other"), leaseToken: uid("tok"), leaseExpiresAt: TC + 1000, attemptCount: 1 });
        const settled = invocation(scope, { status: "succeeded", ...lease, leaseToken: uid("tok"), leaseExpiresAt: TC + 1000 });
        await insertAll(store, [live, expired, others, settled]);
        assert.equal(await store.transact((tx) => tx.heartbeat(owner, TC + 500, 2000)), 1);
        assertRecord(await read(store, live), { ...live, leaseExpiresAt: TC + 2500 }, "extended lease");
        for (const untouched of [expired, others, settled]) assertRecord(await read(store, untouched), untouched, "lease left alone");
        await store.transact((tx) => tx.assertLease(scope, fenceOf(live)));
        assert.equal(await store.transact((tx) => tx.heartbeat(owner, TC + 2500, 2000)), 0, "a lease expiring at now is expired");
        assert.equal((await read(store, live))?.leaseExpiresAt, TC + 2500);
        assert.equal(await store.transact((tx) => tx.heartbeat(uid("nobody"), TC, 2000)), 0);
      });
    },
  },
  {
    // Invariant: nextRunAt is the earliest runAt among queued invocations of any scope (null when
    // there are none); running, settled and parked ones do not count.
    name: "nextRunAt: earliest runAt among queued invocations of every scope",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const before = await store.transact((tx) => tx.nextRunAt());
        const expect = (v: number | null): number | null => (before === null ? v : v === null ? before : Math.min(before, v));
        const s1 = newScope();
        const s2 = newScope();
        const q7 = invocation(s1, { runAt: 7 });
        const q5 = invocation(s2, { runAt: 5 });
        await insertAll(store, [
          q7,
          q5,
          invocation(s1, { status: "running", runAt: 1, leaseOwner: uid("w"), leaseToken: uid("tok"), leaseExpiresAt: TC, attemptCount: 1 }),
          invocation(s2, { status: "succeeded", runAt: 2 }),
          invocation(s1, { status: "parked", runAt: 3 }),
        ]);
        assert.equal(await store.transact((tx) => tx.nextRunAt()), expect(5));
        await store.transact((tx) => tx.updateInvocation(s2, { ...q5, status: "cancelled" }));
        assert.equal(await store.transact((tx) => tx.nextRunAt()), expect(7));
        await store.transact((tx) => tx.updateInvocation(s1, { ...q7, status: "cancelled" }));
        assert.equal(await store.transact((tx) => tx.nextRunAt()), expect(null));
      });
    },
  },
];
