/**
 * Function redaction hooks (docs/security.md): an action's `redact(value, context)` runs after its
 * `sensitive` pointers wherever params and outputs are journaled or answered, and
 * `redactErrorText(text, context)` receives where the text came from. Invariants: what the hook
 * withholds appears in no journal entry and no answer, while the connector still receives the
 * original; a throwing hook withholds the whole value (fail closed); pointer behaviour is unchanged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAction } from "../../src/core/action.js";
import type { ErrorTextContext, RedactContext } from "../../src/core/redact.js";
import type { Store } from "../../src/core/store.js";
import type { Json } from "../../src/core/types.js";
import { allStoreFactories } from "../helpers/stores.js";
import { journalOf } from "./helpers.js";
import { actions, grantAuthority, makeHostBench } from "../host/fixture.js";

const EMAIL = "ada.lovelace@example.org";
const CARD = "5500005555555559";

const seen: RedactContext[] = [];
const hooked = defineAction({
  id: "hooked.send",
  version: "1",
  params: z.object({ n: z.number(), to: z.string(), card: z.string() }),
  idempotent: true,
  sensitive: ["/params/card"],
  redact: (value: Json, context: RedactContext): Json => {
    seen.push(context);
    return JSON.parse(JSON.stringify(value).replace(/[\w.]+@[\w.]+/g, "[email]")) as Json;
  },
  steps: [{ name: "a", connector: "c", operation: "a" }],
});
const throwing = defineAction({
  id: "hooked.throws",
  version: "1",
  params: z.object({ n: z.number(), to: z.string() }),
  idempotent: true,
  redact: () => {
    throw new Error("hook bug");
  },
  steps: [{ name: "a", connector: "c", operation: "a" }],
});

for (const factory of allStoreFactories()) {
  describe(`function redaction hooks on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      const made = await factory.make();
      store = made.store;
      cleanup = () => made.cleanup();
    });
    afterAll(async () => cleanup());

    it("redact(value, context) filters params and outputs in the journal and answers; the connector sees the original", async () => {
      const b = makeHostBench(store, { actions: [...actions, hooked, throwing] });
      await grantAuthority(b);
      b.replies.set("a", { outcome: "success", externalRef: "x1", output: { echo: EMAIL } });
      const { invocation } = await b.host.submit(b.request({ action: "hooked.send", params: { n: 1, to: EMAIL, card: CARD } }));
      expect(invocation.request.params).toEqual({ n: 1, to: "[email]", card: "[REDACTED]" });
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      expect(b.calls[0]!.input).toEqual({ n: 1, to: EMAIL, card: CARD });
      const got = await b.host.get(b.scope, invocation.invocationId);
      expect(got?.result).toEqual({ a: { echo: "[email]" } });
      const journal = JSON.stringify(await journalOf(store, b.scope));
      expect(journal).toContain(invocation.invocationId); // the search reads the real entries
      expect(journal).toContain("[email]");
      expect(journal).not.toContain(EMAIL);
      expect(journal).not.toContain(CARD);
      expect(seen).toContainEqual({ action: "hooked.send", kind: "params" });
      expect(seen).toContainEqual({ action: "hooked.send", kind: "outputs" });
    });

    it("a throwing hook withholds the whole value", async () => {
      const b = makeHostBench(store, { actions: [...actions, hooked, throwing] });
      await grantAuthority(b);
      const { invocation } = await b.host.submit(b.request({ action: "hooked.throws", params: { n: 2, to: EMAIL } }));
      expect(invocation.request.params).toBe("[REDACTED]");
      const journal = JSON.stringify(await journalOf(store, b.scope));
      expect(journal).toContain(invocation.invocationId);
      expect(journal).not.toContain(EMAIL);
    });

    it("redactErrorText(text, context) names the action, step, connector and operation", async () => {
      const contexts: ErrorTextContext[] = [];
      const b = makeHostBench(store, {
        redactErrorText: (t: string, c: ErrorTextContext) => {
          contexts.push(c);
          return t.replace(/\d{12,19}/g, "[card]");
        },
      });
      await grantAuthority(b);
      b.replies.set("a", { outcome: "permanent_failure", reason: `card ${CARD} declined` });
      const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 3, card: CARD } }));
      expect(await b.host.worker().runOnce()).toContain("failed"); // the store is shared with the tests above
      expect((await b.host.get(b.scope, invocation.invocationId))?.lastError).toContain("card [card] declined");
      expect(contexts).toContainEqual({ source: "connector", action: "secret.pay", invocationId: invocation.invocationId, stepName: "a", connector: "c", operation: "a" });
    });
  });
}
