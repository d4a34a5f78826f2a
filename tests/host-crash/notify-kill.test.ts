/**
 * A worker process SIGKILLed between a state change and its notification's delivery still gets
 * the notification delivered (docs/notifications.md, "Durability"). Real processes, SQLite and
 * PostgreSQL.
 *
 * Two kill points in a child host (fixtures/notify-child.ts) working three queued invocations:
 * - after-commit: right after the first invocation's terminal transition committed, before any
 *   fan-out (no delivery row exists; on PostgreSQL the journal entry may even be unsealed);
 * - before-send: every invocation ended and the deliveries are written, the child holds the
 *   subscription's lease and dies inside its first send, before a byte leaves.
 * Then a host in this process (its own dispatcher, no help from the dead one) finishes the work
 * and dispatches.
 *
 * Invariant: the receiver gets one invocation.ended per ended invocation (each event id once,
 * every one verified with the standardwebhooks library), in the journal's order, and every
 * delivery ends `delivered`: no state change without its event.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, describe, expect, it } from "vitest";
import { sealJournalNow } from "../../src/index.js";
import { startReceiver } from "../host/notify-fixture.js";
import { reapChildren, sleep, spawnChild } from "./fixtures/children.js";
import { STORE_KINDS } from "./fixtures/hosting.js";
import { SCOPES, requestFor } from "./fixtures/scenario.js";
import { makeWorld } from "./fixtures/world.js";

afterAll(async () => expect(await reapChildren()).toBe(0));

const NOTIFY_CHILD = new URL("./fixtures/notify-child.ts", import.meta.url).pathname;
const SCOPE = SCOPES[0]!;

for (const kind of STORE_KINDS) {
  describe(`notifications survive a SIGKILL (${kind})`, () => {
    for (const point of ["after-commit", "before-send"] as const) {
      it(`killed ${point}: every ended invocation is notified once, in order`, { timeout: 60_000 }, async () => {
        const world = await makeWorld(kind);
        const rx = await startReceiver();
        try {
          const { secret } = await world.host.notifications.create(SCOPE.tenantId, { url: rx.url, events: ["invocation.ended"], filter: { spaces: [SCOPE.spaceId] } });
          const ids = await world.submit([0, 2, 4].map((n) => requestFor(n, "idem1")));
          const child = spawnChild(`notify-${point}`, { ...world.childEnv(`notify-${point}`), WRIT_NOTIFY_KILL: point }, NOTIFY_CHILD);
          const exit = await child.exited;
          expect(exit.signal, child.stderr()).toBe("SIGKILL");
          expect(child.lines).toContainEqual({ type: "dying", point });
          expect(rx.requests).toHaveLength(0);
          if (point === "before-send") {
            const pending = await world.host.notifications.deliveries(SCOPE.tenantId, { status: "pending" });
            expect(pending).toHaveLength(3);
          }
          await world.rescue({ deadlineMs: 20_000 });
          const deadline = Date.now() + 20_000;
          while (Date.now() < deadline) {
            await sealJournalNow(world.store);
            await world.host.notifications.dispatchOnce();
            if (new Set(rx.requests.map((r) => r.id)).size >= 3) break;
            await sleep(200);
          }
          const wh = new Webhook(secret);
          const got = rx.requests.map((r) => wh.verify(r.body, { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature }) as { type: string; data: { invocationId: string; status: string } });
          expect(new Set(rx.requests.map((r) => r.id)).size).toBe(rx.requests.length);
          const journal = await world.store.transact((tx) => tx.readJournal(SCOPE, { fromSeq: 1 }));
          const ended = journal.filter((e) => e.type === "invocation.succeeded").map((e) => e.refs.invocationId);
          expect([...ended].sort()).toEqual([...ids].sort());
          expect(got.map((p) => p.data.invocationId)).toEqual(ended);
          expect(got.every((p) => p.type === "invocation.ended" && p.data.status === "succeeded")).toBe(true);
          const all = await world.host.notifications.deliveries(SCOPE.tenantId);
          expect(all.map((d) => d.status)).toEqual(["delivered", "delivered", "delivered"]);
        } finally {
          await rx.close();
          await world.close();
        }
      });
    }
  });
}
