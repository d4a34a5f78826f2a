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
 *   prepared in that one call too;
 * - a completion whose result, error and evidence hold them is stored and read back exactly, found
 *   by the sweep of early completions, expired, and deleted by age;
 * - retention reads the journal entries, invocation and attempt documents that hold them: the
 *   journal's hold on such an invocation is seen, its approval's hold is seen, and once neither
 *   holds it the invocation is deleted whole.
 */
import assert from "node:assert/strict";
import type { Store } from "../../core/store.js";
import { transitionsOf, type ClaimedPrepared } from "../../core/transitions.js";
import type { CompletionRecord, Invocation, Scope } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { StoreConformanceCase } from "./case.js";
import { T0, approval, attempt, authority, invocation, newScope, step, uid } from "./fixtures.js";

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
          // A step of each (found by the invocation id in its document) and the scope's breaker.
          await tx.putStep(scope, step(scope, odd.invocationId, 0, { status: "failed" }));
          await tx.putStep(scope, step(scope, plain.invocationId, 0, { status: "failed" }));
          await tx.putBreaker(scope, { ...scope, connector: "c", operation: "a", state: "closed", failures: 2, openedAt: 0, openUntil: 0, updatedAt: T0 });
        });
        const batch = await claimAll(store);
        const mine = (id: string) => batch.find((c) => c.invocation.invocationId === id);
        const a = mine(odd.invocationId);
        const b = mine(plain.invocationId);
        assert.ok(a, "the invocation with awkward params was claimed");
        assert.ok(b, "the ordinary invocation was claimed in the same claim");
        assert.equal(a.prepared.authority?.authorityRef, "auth-1", "its authority was found by the key in its document");
        assert.equal(a.prepared.approval?.approvalId, appr.approvalId, "its approval was found by the key in its document");
        assert.deepStrictEqual(a.prepared.steps.map((x) => [x.invocationId, x.stepIndex]), [[odd.invocationId, 0]], "its steps were found by the invocation id in its document");
        assert.equal(a.prepared.breakers[0]?.failures, 2, "the breaker of its scope was found");
        assert.equal(b.prepared.authority?.authorityRef, "auth-1");
        assert.deepStrictEqual(b.prepared.steps.map((x) => x.invocationId), [plain.invocationId]);
        assert.equal(b.prepared.approval, null);
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
        const appr = approval(scope);
        await store.transact(async (tx) => {
          await tx.putAuthority(scope, authority(scope, { authorityRef: "auth-1" }));
          await tx.putApproval(scope, appr);
        });
        const odd = awkward(scope, { approvalId: appr.approvalId });
        const out = await t.admitClaimed(scope, { invocation: odd, entries: [] }, { owner: "w-local", tokens: [uid("tok")], now: T0, leaseMs: 30_000, limit: 1 }, BREAKERS);
        assert.equal(out.created, true);
        if (!out.created) return;
        assert.equal(out.claimed?.invocation.status, "running", "admitted already claimed");
        assert.equal(out.claimed?.prepared.authority?.authorityRef, "auth-1", "its authority was found by the key in its document");
        assert.equal(out.claimed?.prepared.approval?.approvalId, appr.approvalId, "its approval was found by the key in its document");
        assert.deepStrictEqual(out.claimed?.invocation.request.params, AWKWARD);
        const stored = await store.transact((tx) => tx.getInvocation(scope, odd.invocationId));
        assert.deepStrictEqual(stored?.request.params, AWKWARD, "the params read back exactly");
      });
    },
  },
  {
    name: "documents: a completion whose result holds NUL and unpaired surrogates is kept, swept as early, expired and deleted by age",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const base = T0 - 900 * 86_400_000;
        const c: CompletionRecord = {
          ...scope, completionId: uid("cpl"), connector: "payments", externalRef: uid("ref"), outcome: "failure",
          result: { ...AWKWARD }, error: "refused: a\u0000b \ud800", evidence: { raw: "\u0000" }, contentDigest: "sha256:x", disposition: "early", receivedAt: base,
        };
        await store.transact((tx) => tx.insertCompletion(scope, c));
        const [kept] = await store.transact((tx) => tx.listCompletions(scope, c.connector, c.externalRef));
        assert.ok(kept, "the completion was stored");
        assert.deepStrictEqual([kept.result, kept.error, kept.evidence], [AWKWARD, c.error, c.evidence], "read back exactly");
        const early = await store.transact((tx) => tx.listEarlyCompletions(base + 1, 1000, scope));
        assert.deepStrictEqual(early.map((e) => e.completionId), [c.completionId], "the sweep of early completions finds it");
        await store.transact((tx) => tx.updateCompletion(scope, { ...kept, disposition: "expired", expiredAt: base + 1 }));
        assert.ok((await store.transact((tx) => tx.countAgedRecords("expired_completions", base + 5))) >= 1, "counted as an expired completion");
        await store.transact((tx) => tx.deleteAgedRecords("expired_completions", base + 5, 1000));
        assert.deepStrictEqual(await store.transact((tx) => tx.listCompletions(scope, c.connector, c.externalRef)), [], "deleted by age");
      });
    },
  },
  {
    name: "documents: retention reads journal, invocation and attempt documents that hold NUL and unpaired surrogates",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const appr = approval(scope);
        const inv = awkward(scope, { status: "succeeded", approvalId: appr.approvalId, updatedAt: T0 });
        const att = { ...attempt(scope, { invocationId: inv.invocationId, decisionId: uid("dec"), state: "FAILED" as const }), reason: "connector said a\u0000b \ud800" };
        const ref = uid("ref");
        await store.transact(async (tx) => {
          await tx.putApproval(scope, appr);
          await tx.insertInvocation(scope, inv);
          await tx.insertAttempt(scope, att);
          // A step and the completion matched to it (found by the invocation id in its document).
          await tx.putStep(scope, step(scope, inv.invocationId, 0, { status: "succeeded", connector: "payments", externalRef: ref }));
          await tx.insertCompletion(scope, {
            ...scope, completionId: uid("cpl"), connector: "payments", externalRef: ref, outcome: "success", result: { ...AWKWARD },
            contentDigest: "sha256:x", disposition: "applied", invocationId: inv.invocationId, stepIndex: 0, receivedAt: T0,
          });
          await tx.insertUnsealed(scope, [{ ...scope, id: uid("entry"), at: T0, type: "invocation.submitted", refs: { invocationId: inv.invocationId }, data: { params: { ...AWKWARD } } }]);
        });
        const named = await store.transact((tx) => tx.journalNamesAbove(scope, 0, [inv.invocationId]));
        assert.deepStrictEqual([...named], [inv.invocationId], "the unarchived journal's hold is seen");
        const since = await store.transact((tx) => tx.journalNamedSince(scope, 0));
        assert.ok(since.named.has(inv.invocationId), "the journal read since a watermark names it");
        const holds = await store.transact((tx) => tx.invocationHolds(scope, [inv.invocationId]));
        assert.equal(holds.get(inv.invocationId), "pending_approval", "its pending approval, named in its document, holds it");
        await store.transact((tx) => tx.putApproval(scope, { ...appr, status: "approved" }));
        const pruned = await store.transact((tx) => tx.deleteEndedInvocations(scope, [inv.invocationId]));
        assert.deepStrictEqual(pruned.deleted, [inv.invocationId], "deleted whole once nothing holds it");
        assert.equal(pruned.rows.attempts, 1, "with its attempt");
        assert.equal(pruned.rows.completions, 1, "with the completion matched to its step");
        assert.deepStrictEqual(await store.transact((tx) => tx.listCompletions(scope, "payments", ref)), []);
        assert.equal(await store.transact((tx) => tx.getInvocation(scope, inv.invocationId)), null);
      });
    },
  },
];
