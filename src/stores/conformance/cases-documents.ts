/**
 * Documents that hold NUL and unpaired surrogates (docs/stores.md, "Documents that hold NUL").
 * JSON carries both (`\u0000`, a lone `\ud800`), so a client may send them in an invocation's
 * params. Every store keeps them exactly and runs such an invocation like any other.
 *
 * Invariants:
 * - an invocation whose params hold NUL, an unpaired surrogate, and a backslash followed by the
 *   text `u0000` (which is not an escape) is claimed beside an ordinary invocation in one claim,
 *   with the prepare read finding its authority and its approval by the keys in its document;
 * - its params read back exactly as written;
 * - where a store admits with a claim (`admitClaimed`), such an invocation is admitted, claimed and
 *   prepared in that one call too.
 */
import assert from "node:assert/strict";
import type { Store } from "../../core/store.js";
import { transitionsOf, type ClaimedPrepared } from "../../core/transitions.js";
import type { Invocation, Scope } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, authority, invocation, newScope, uid } from "./fixtures.js";

/** Params no `text` column could hold, and a backslash that only looks like the start of an escape. */
const AWKWARD = { nul: "a\u0000b", lone: "x\ud800y", trail: "\udc00", slashU: "\\u0000", mixed: ["\u0000", { k: "\\\u0000\\" }], emoji: "\ud83d\ude00" };

function awkward(scope: Scope, over: Partial<Invocation> = {}): Invocation {
  const inv = invocation(scope, over);
  return { ...inv, request: { ...inv.request, params: { ...AWKWARD } } };
}

const BREAKERS = [{ connector: "c", operation: "a" }];

/** Claims with room for what other cases left runnable (claims span every scope). */
async function claimAll(store: Store): Promise<ClaimedPrepared[]> {
  const t = transitionsOf(store);
  const opts = { owner: uid("w"), tokens: Array.from({ length: 500 }, () => uid("tok")), now: T0, leaseMs: 60_000, limit: 500 };
  if (t.claimPrepared !== undefined) return (await t.claimPrepared(opts, BREAKERS)).claimed;
  const claimed = await t.claim(opts);
  return Promise.all(
    claimed.map(async (inv) => ({
      invocation: inv,
      prepared: await t.prepare({ tenantId: inv.tenantId, spaceId: inv.spaceId }, { invocationId: inv.invocationId, authorityRef: inv.request.authorityRef, ...(inv.approvalId !== undefined ? { approvalId: inv.approvalId } : {}), breakers: BREAKERS }),
    })),
  );
}

export const documentCases: StoreConformanceCase[] = [
  {
    name: "documents: params holding NUL and unpaired surrogates are claimed, prepared and read back exactly",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const auth = authority(scope, { authorityRef: "auth-1" });
        const appr = approval(scope);
        await store.transact(async (tx) => {
          await tx.putAuthority(scope, auth);
          await tx.putApproval(scope, appr);
        });
        const odd = awkward(scope, { approvalId: appr.approvalId });
        const plain = invocation(scope, { createdAt: T0 + 1 });
        await store.transact(async (tx) => {
          await tx.insertInvocation(scope, odd);
          await tx.insertInvocation(scope, plain);
        });
        const batch = await claimAll(store);
        const mine = (id: string) => batch.find((c) => c.invocation.invocationId === id);
        const a = mine(odd.invocationId);
        const b = mine(plain.invocationId);
        assert.ok(a, "the invocation with awkward params was claimed");
        assert.ok(b, "the ordinary invocation was claimed in the same claim");
        assert.equal(a.prepared.authority?.authorityRef, "auth-1", "its authority was found by the key in its document");
        assert.equal(a.prepared.approval?.approvalId, appr.approvalId, "its approval was found by the key in its document");
        assert.equal(b.prepared.authority?.authorityRef, "auth-1");
        assert.deepStrictEqual(a.invocation.request.params, AWKWARD, "the claim answered the params exactly");
        const stored = await store.transact((tx) => tx.getInvocation(scope, odd.invocationId));
        assert.deepStrictEqual(stored?.request.params, AWKWARD, "the params read back exactly");
        assert.equal(stored?.status, "running");
      });
    },
  },
  {
    name: "documents: an admission with a claim takes params holding NUL and unpaired surrogates",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const t = transitionsOf(store);
        if (t.admitClaimed === undefined) return;
        const scope = newScope();
        await store.transact((tx) => tx.putAuthority(scope, authority(scope, { authorityRef: "auth-1" })));
        const odd = awkward(scope);
        const out = await t.admitClaimed(scope, { invocation: odd, entries: [] }, { owner: "w-local", tokens: [uid("tok")], now: T0, leaseMs: 30_000, limit: 1 }, BREAKERS);
        assert.equal(out.created, true);
        if (!out.created) return;
        assert.equal(out.claimed?.invocation.status, "running", "admitted already claimed");
        assert.equal(out.claimed?.prepared.authority?.authorityRef, "auth-1", "its authority was found by the key in its document");
        assert.deepStrictEqual(out.claimed?.invocation.request.params, AWKWARD);
        const stored = await store.transact((tx) => tx.getInvocation(scope, odd.invocationId));
        assert.deepStrictEqual(stored?.request.params, AWKWARD, "the params read back exactly");
      });
    },
  },
];
