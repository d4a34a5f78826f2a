/**
 * Text holding NUL or an unpaired surrogate, end to end through a host on every store
 * (docs/stores.md, "Documents that hold NUL"). PostgreSQL stores such text in its json documents
 * but its JSON operators refuse to read any field of them; every read of a field out of a document
 * an outside party fills goes through a lenient read since migrations 23 and 24.
 *
 * Invariants (each on memory, SQLite and PostgreSQL):
 * - invocations whose params hold NUL (a submission refuses an unpaired surrogate) run to succeeded,
 *   through a worker's claim beside ordinary ones and through the hand-off at admission (the idle
 *   worker holds the invocation as the submission returns), and their params read back exactly;
 * - an authority whose constraints hold such text authorizes its invocations as any other does
 *   (the start's check of the authority read its document);
 * - a notification delivery whose log already holds NUL (as versions before the fix kept a
 *   receiver's answer) is marked delivered once the receiver accepts it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHost, defineAction, defineConnector, functionPolicy, generateSigningKey, manualClock, sealJournalNow, type Host } from "../../src/index.js";
import type { Store } from "../../src/core/store.js";
import type { Json } from "../../src/core/types.js";
import { allStoreFactories } from "../helpers/stores.js";
import { untilRead } from "../helpers/wait.js";
import { grantAuthority, makeHostBench } from "./fixture.js";
import { startReceiver } from "./notify-fixture.js";

/** NUL, a backslash before the text "u0000", an emoji (a submission refuses an unpaired surrogate: not I-JSON). */
const AWKWARD = "a\u0000b \\u0000 \ud83d\ude00";
const action = defineAction({ id: "docs.nul", version: "1", params: z.object({ s: z.string() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
const connector = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });

let counter = 0;

for (const factory of allStoreFactories()) {
  describe(`documents holding NUL on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => ({ store, cleanup } = await factory.make()));
    afterAll(async () => cleanup());

    async function hostWith(constraints: Record<string, Json>): Promise<{ host: Host; scope: { tenantId: string; spaceId: string }; submit: (s: string) => Promise<string> }> {
      const scope = { tenantId: `t-nul-${++counter}`, spaceId: "s" };
      const host = createHost({ store, actions: [action], connectors: [connector], policy: functionPolicy("p:v1", () => "ALLOW"), signingKey: generateSigningKey({ kid: "k" }), clock: manualClock(Date.now()) });
      await host.authorities.create(scope, { authorityRef: "a", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [action.id], constraints });
      const submit = async (s: string): Promise<string> =>
        (await host.submit({ ...scope, action: action.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a", params: { s }, idempotencyKey: `k-${++counter}` })).invocation.invocationId;
      return { host, scope, submit };
    }

    it("params holding NUL run through a worker's claim beside ordinary ones", async () => {
      const { host, scope, submit } = await hostWith({});
      const odd = await submit(AWKWARD);
      const plain = await submit("plain");
      // Claims span every scope: run until this scope's two are done.
      for (let i = 0; i < 10 && (await host.get(scope, plain))?.status !== "succeeded"; i++) await host.worker().runOnce();
      expect((await host.get(scope, odd))?.status).toBe("succeeded");
      expect((await host.get(scope, plain))?.status).toBe("succeeded");
      expect((await host.get(scope, odd))?.request.params).toEqual({ s: AWKWARD });
    });

    it("params holding NUL run through the hand-off at admission", async () => {
      const { host, scope } = await hostWith({});
      // An hour's poll: after its first, empty claim the worker sleeps, and its idle slot takes
      // the next admission in that admission's own write (the hand-off).
      const worker = host.worker({ concurrency: 1, pollMs: 3_600_000, handoff: true });
      worker.start();
      try {
        let handedOff = false;
        for (let n = 0; n < 50 && !handedOff; n++) {
          await new Promise((r) => setTimeout(r, 20));
          await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
          const { invocation } = await host.submit({ ...scope, action: action.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a", params: { s: AWKWARD }, idempotencyKey: `h-${++counter}` });
          // Handed off: the idle slot holds it as the submission returns (the ticket is taken
          // before it does); otherwise only a wake-up would bring the sleeping worker to it.
          handedOff = worker.inFlight() === 1;
          await untilRead(async () => (await host.get(scope, invocation.invocationId))?.status === "succeeded", "the invocation with NUL in its params succeeded");
          expect((await host.get(scope, invocation.invocationId))?.request.params).toEqual({ s: AWKWARD });
        }
        expect(handedOff, "an admission was handed to the idle worker").toBe(true);
      } finally {
        await worker.stop();
      }
    });

    it("an authority whose constraints hold NUL authorizes its invocations", async () => {
      const { host, scope, submit } = await hostWith({ note: AWKWARD });
      const id = await submit("x");
      for (let i = 0; i < 10 && (await host.get(scope, id))?.status !== "succeeded"; i++) await host.worker().runOnce();
      expect((await host.get(scope, id))?.status).toBe("succeeded");
    });

    it("a delivery whose log already holds NUL (kept by an earlier version) is marked delivered", async () => {
      const b = makeHostBench(store, { notifications: { retryBaseMs: 1000, retryMaxMs: 8000, maxAttempts: 5, consoleUrl: "https://writ.example.com" } });
      await grantAuthority(b);
      const rx = await startReceiver();
      try {
        await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
        await b.host.submit(b.request());
        while ((await b.host.worker().runOnce()).length > 0);
        await sealJournalNow(b.store);
        rx.answer = () => 500;
        await b.host.notifications.dispatchOnce();
        const [first] = await b.host.notifications.deliveries(b.scope.tenantId);
        // What versions before the fix kept of a 500 whose answer held NUL.
        await store.transact(async (tx) => {
          const cur = (await tx.getDelivery(b.scope.tenantId, first!.deliveryId))!;
          await tx.updateDelivery({ ...cur, log: cur.log.map((l) => ({ ...l, response: "no\u0000" })) });
        });
        rx.answer = () => 200;
        b.clock.advance(10_000);
        await b.host.notifications.dispatchOnce();
        const d = (await b.host.notifications.deliveries(b.scope.tenantId)).at(-1)!;
        expect(d.status).toBe("delivered");
        expect(rx.requests.map((r) => r.status)).toEqual([500, 200]);
      } finally {
        await rx.close();
      }
    });
  });
}
