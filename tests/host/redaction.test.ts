/**
 * Redaction (SPEC 4.9) on every store. Invariants: values at an action's `sensitive` pointers
 * (params and step outputs, completion results included) never appear in the journal, in events
 * or in what `host.get` answers, while the connector receives the originals and the digest covers
 * them; `redactErrorText` filters connector error text before it is stored anywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { computeRequestDigest } from "../../src/core/digest.js";
import type { Store } from "../../src/core/store.js";
import { allStoreFactories } from "../helpers/stores.js";
import { crypto, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";

const CARD = "4242424242424242";
const TOKEN = "tok_live_s3cr3t";

async function everythingStored(b: HostBench, invocationId: string): Promise<string> {
  const s = b.store;
  const [journal, attempts, recs, inv] = await s.transact(async (tx) => [
    await tx.readJournal(b.scope, {}),
    await tx.listAttempts(b.scope, { invocationId }),
    await tx.listReconciliations(b.scope, { invocationId }),
    await tx.getInvocation(b.scope, invocationId),
  ]);
  return JSON.stringify({ journal, attempts, recs, result: (inv as { result?: unknown } | null)?.result, events: b.events });
}

for (const factory of allStoreFactories()) {
  describe(`redaction on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    async function bench(overrides = {}): Promise<HostBench> {
      const b = makeHostBench(store, overrides);
      await grantAuthority(b);
      return b;
    }

    it("sensitive params and outputs are redacted in the journal, events, attempts and answers; the connector sees the originals", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "success", externalRef: "ch_1", output: { token: TOKEN, ok: 1 } });
      const req = b.request({ action: "secret.pay", params: { n: 1, card: CARD } });
      const { invocation } = await b.host.submit(req);
      expect(invocation.requestDigest).toBe(computeRequestDigest(crypto, req));
      expect(invocation.request.params.card).toBe("[REDACTED]");
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls[0]!.input).toEqual({ n: 1, card: CARD });
      const got = await b.host.get(b.scope, invocation.invocationId);
      expect(got?.request.params).toEqual({ n: 1, card: "[REDACTED]" });
      expect(got?.result).toEqual({ a: { token: "[REDACTED]", ok: 1 } });
      const stored = await everythingStored(b, invocation.invocationId);
      expect(stored).not.toContain(CARD);
      expect(stored).not.toContain(TOKEN);
      expect(stored).toContain("[REDACTED]");
    });

    it("completion results are redacted like step outputs", async () => {
      const b = await bench();
      b.replies.set("a", { outcome: "accepted", externalRef: "op_r1" });
      const { invocation } = await b.host.submit(b.request({ action: "secret.long", params: { n: 1, card: CARD } }));
      expect(await b.host.worker().runOnce()).toEqual(["parked"]);
      expect(await b.host.complete(b.scope, { connector: "c", externalRef: "op_r1", outcome: "success", result: { token: TOKEN, ok: 2 } })).toMatchObject({ status: "succeeded" });
      expect((await b.host.get(b.scope, invocation.invocationId))?.result).toEqual({ a: { token: "[REDACTED]", ok: 2 } });
      const completions = await store.transact((tx) => tx.listCompletions(b.scope, "c", "op_r1"));
      const stored = (await everythingStored(b, invocation.invocationId)) + JSON.stringify(completions);
      expect(stored).not.toContain(TOKEN);
      expect(stored).not.toContain(CARD);
    });

    it("redactErrorText filters connector error text before it is stored", async () => {
      const b = await bench({ redactErrorText: (t: string) => t.replace(/\d{12,19}/g, "[card]") });
      b.replies.set("a", { outcome: "permanent_failure", reason: `card ${CARD} declined` });
      const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
      expect(await b.host.worker().runOnce()).toEqual(["failed"]);
      const inv = await b.host.get(b.scope, invocation.invocationId);
      expect(inv?.lastError).toContain("card [card] declined");
      expect(await everythingStored(b, invocation.invocationId)).not.toContain(CARD);
    });
  });
}
