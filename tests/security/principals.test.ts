/**
 * Principals bound to API keys (docs/security.md), on every store. Invariants:
 * - a key acts as its principal; another actor only when it is on the key's delegation list;
 * - delegation lists are set by an admin and journaled in the tenant journal (chain verifies);
 * - the invocation, its `invocation.submitted` entry and its approval record the submitting
 *   principal and key id;
 * - four eyes: the requesting actor, the submitting principal, the submitting key and a key that
 *   may act for the requester can never approve or deny; another approver can, and the vote
 *   records the approver's key id.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WritError } from "../../src/core/errors.js";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import { tenantJournalScope } from "../../src/core/reserved.js";
import type { Store } from "../../src/core/store.js";
import type { Actor } from "../../src/core/types.js";
import { systemRandom } from "../../src/node/clock.js";
import { createApiKey, verifyApiKey } from "../../src/runtime/api-keys.js";
import { keyPrincipal, resolveActor, setKeyDelegation, submitterOf } from "../../src/runtime/principals.js";
import { KEYS } from "../boundary/fixture.js";
import { allStoreFactories } from "../helpers/stores.js";
import { journalOf } from "./helpers.js";
import { crypto, grantAuthority, makeHostBench, type HostBench } from "../host/fixture.js";

const BOT: Actor = { type: "agent", id: "bot" };
const ALICE: Actor = { type: "user", id: "alice" };
const ADMIN: Actor = { type: "user", id: "root" };

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof WritError ? e.code : "not a WritError";
  }
  return undefined;
}

async function rejectsWith(p: Promise<unknown>, c: string): Promise<void> {
  await expect(p).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === c);
}

for (const factory of allStoreFactories()) {
  describe(`principals on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(): Promise<HostBench> {
      const b = makeHostBench(store);
      await grantAuthority(b);
      return b;
    }

    it("a key acts as its principal; another actor only through its delegation list, which is journaled", async () => {
      const b = await bench();
      const now = b.clock.now();
      const { key, record } = await createApiKey(store, crypto, systemRandom, { tenantId: b.scope.tenantId, roles: ["submit"], name: "bot key", principal: BOT }, now);
      const stored = await verifyApiKey(store, crypto, key);
      expect(stored?.principal).toEqual(BOT);
      expect(keyPrincipal(stored!)).toEqual(BOT);
      expect(resolveActor(stored!, undefined)).toEqual(BOT);
      expect(resolveActor(stored!, { ...BOT })).toEqual(BOT);
      expect(code(() => resolveActor(stored!, ALICE))).toBe("FORBIDDEN");
      expect(code(() => resolveActor(stored!, { type: "user", id: "bot" }))).toBe("FORBIDDEN");

      const other: Actor = { type: "agent", id: "helper" };
      const next = await setKeyDelegation(store, crypto, { tenantId: b.scope.tenantId, keyId: record.keyId, actsFor: [other, other], by: ADMIN }, now + 1);
      expect(next.actsFor).toEqual([other]);
      const reread = await verifyApiKey(store, crypto, key);
      expect(resolveActor(reread!, other)).toEqual(other);
      expect(code(() => resolveActor(reread!, ALICE))).toBe("FORBIDDEN");
      // Cleared again: the delegation is gone.
      await setKeyDelegation(store, crypto, { tenantId: b.scope.tenantId, keyId: record.keyId, actsFor: [], by: ADMIN }, now + 2);
      const cleared = (await verifyApiKey(store, crypto, key))!;
      expect(cleared.actsFor).toBeUndefined();
      expect(code(() => resolveActor(cleared, other))).toBe("FORBIDDEN");

      // Another tenant cannot change the key; a malformed list changes nothing.
      await rejectsWith(setKeyDelegation(store, crypto, { tenantId: "someone-else", keyId: record.keyId, actsFor: [other], by: ADMIN }, now + 3), "NOT_FOUND");
      await rejectsWith(setKeyDelegation(store, crypto, { tenantId: b.scope.tenantId, keyId: record.keyId, actsFor: [{ type: "robot", id: "x" } as unknown as Actor], by: ADMIN }, now + 3), "INVALID_ARGUMENT");

      const scope = tenantJournalScope(b.scope.tenantId);
      const entries = await journalOf(store, scope);
      expect(entries.map((e) => e.type)).toEqual(["api_key.created", "api_key.delegation_set", "api_key.delegation_set"]);
      expect(entries[1]!.data).toMatchObject({ principal: BOT, actsFor: [other], by: ADMIN });
      // The secret is everything after `writ_<keyId>_` (base64url, so it may itself hold "_").
      const secret = key.slice(`writ_${record.keyId}_`.length);
      expect(secret).toHaveLength(32);
      expect(JSON.stringify(entries)).not.toContain(secret);
      const v = await verifyStoredJournal(store, crypto, createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]), scope);
      expect(v.ok).toBe(true);
    });

    it("the invocation, its journal and its approval record the submitting principal and key id", async () => {
      const b = await bench();
      const { record } = await createApiKey(store, crypto, systemRandom, { tenantId: b.scope.tenantId, roles: ["submit"], name: "bot", principal: BOT }, b.clock.now());
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request(), { submittedBy: submitterOf(record) });
      expect(invocation.submittedBy).toEqual({ principal: BOT, keyId: record.keyId });
      expect((await b.host.get(b.scope, invocation.invocationId))?.submittedBy).toEqual({ principal: BOT, keyId: record.keyId });
      const submitted = (await journalOf(store, b.scope)).find((e) => e.type === "invocation.submitted");
      expect(submitted?.data).toMatchObject({ actor: BOT, submittedBy: { principal: BOT, keyId: record.keyId } });
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const inv = await b.host.get(b.scope, invocation.invocationId);
      const ap = await b.host.approvals.get(b.scope, inv!.approvalId!);
      expect(ap?.submittedBy).toEqual({ principal: BOT, keyId: record.keyId });
      // A malformed submitter is refused and nothing is stored.
      const before = (await b.host.list(b.scope)).length;
      await rejectsWith(b.host.submit(b.request(), { submittedBy: { principal: { type: "robot", id: "x" } as unknown as Actor } }), "INVALID_ARGUMENT");
      await rejectsWith(b.host.submit(b.request(), { submittedBy: { principal: BOT, keyId: "no spaces allowed" } }), "INVALID_ARGUMENT");
      expect((await b.host.list(b.scope)).length).toBe(before);
    });

    it("four eyes: neither the requester, the submitter, its key nor a key that may act for the requester approves or denies", async () => {
      const b = await bench();
      b.verdict.current = "REQUIRE_APPROVAL";
      // A user submits, through a key that acts for the agent.
      const submitter = { principal: ALICE, keyId: "submitkey1" };
      const { invocation } = await b.host.submit(b.request(), { submittedBy: submitter });
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const approvalId = (await b.host.get(b.scope, invocation.invocationId))!.approvalId!;
      const roles = ["approve"];
      const refused = [
        { actor: BOT, roles }, // the requesting actor
        { actor: ALICE, roles }, // the submitting principal
        { actor: { type: "user" as const, id: "carol" }, roles, keyId: "submitkey1" }, // the submitting key
        { actor: { type: "user" as const, id: "dave" }, roles, keyId: "otherkey", actsFor: [BOT] }, // may act for the requester
      ];
      for (const by of refused) {
        await rejectsWith(b.host.approvals.approve(b.scope, approvalId, by), "FORBIDDEN");
        await rejectsWith(b.host.approvals.deny(b.scope, approvalId, by), "FORBIDDEN");
      }
      const untouched = await b.host.approvals.get(b.scope, approvalId);
      expect(untouched?.status).toBe("pending");
      expect(untouched?.votes).toEqual([]);
      const ok = await b.host.approvals.approve(b.scope, approvalId, { actor: { type: "user", id: "erin" }, roles, keyId: "erinkey" });
      expect(ok.status).toBe("approved");
      expect(ok.votes).toEqual([expect.objectContaining({ approver: { type: "user", id: "erin" }, keyId: "erinkey", verdict: "approve" })]);
      const granted = (await journalOf(store, b.scope)).find((e) => e.type === "approval.granted");
      expect(granted?.data).toMatchObject({ by: { type: "user", id: "erin" }, keyId: "erinkey" });
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
    });
  });
}
