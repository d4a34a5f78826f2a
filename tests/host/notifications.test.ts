/**
 * Notifications end to end on every store (docs/notifications.md): events come from the sealed
 * journal, each delivery is signed the Standard Webhooks way (checked with the official
 * `standardwebhooks` library), a failing receiver holds later events behind the failing one and
 * gets every event once in order after it recovers, dead letters and redelivery, sensitive
 * params masked, and the events that are not invocation transitions (breaker, verify, expiring,
 * overdue handoff).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../src/core/manual-clock.js";
import type { Store } from "../../src/core/store.js";
import type { Delivery } from "../../src/core/types.js";
import { verifyWebhook, webhookSecretBytes } from "../../src/core/webhook.js";
import { sealJournalNow } from "../../src/index.js";
import { localDataKey } from "../../src/runtime/data-key-file.js";
import { allStoreFactories } from "../helpers/stores.js";
import { crypto, grantAuthority, makeHostBench, type HostBench } from "./fixture.js";
import { firstOf, startReceiver, type Receiver } from "./notify-fixture.js";

const approver = { actor: { type: "user" as const, id: "alice" }, roles: ["approve"] };

for (const factory of allStoreFactories()) {
  describe(`notifications on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let rx: Receiver;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => {
      await rx.close();
      await cleanup();
    });

    async function bench(over: Parameters<typeof makeHostBench>[1] = {}): Promise<HostBench> {
      const b = makeHostBench(store, { notifications: { retryBaseMs: 1000, retryMaxMs: 8000, maxAttempts: 5, consoleUrl: "https://writ.example.com" }, ...over });
      await grantAuthority(b);
      // A receiver per test: subscriptions of earlier tests (their dispatchers serve every tenant's
      // on a shared store) never reach this one.
      await rx?.close();
      rx = await startReceiver();
      return b;
    }

    /** Seals what committed (PostgreSQL seals after commit), then lets the dispatcher serve until nothing is due. */
    async function dispatch(b: HostBench): Promise<void> {
      await sealJournalNow(b.store);
      for (let i = 0; i < 20 && (await b.host.notifications.dispatchOnce()) > 0; i++) {
        const pending = await b.host.notifications.deliveries(b.scope.tenantId, { status: "pending" });
        if (pending.every((d) => d.nextAttemptAt > b.clock.now())) break;
      }
    }

    async function ended(b: HostBench, n: number, action = "one.idem"): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) ids.push((await b.host.submit(b.request({ action, params: action.startsWith("secret") ? { n: i, card: "4111-1111-1111-1111" } : { n: i } }))).invocation.invocationId);
      while ((await b.host.worker().runOnce()).length > 0);
      return ids;
    }

    // Invariant: every delivery verifies with the official standardwebhooks library under the
    // secret shown at creation; bodies are { type, timestamp, data } with the event id, and the
    // sensitive params are masked as in every other answer.
    it("a receiver verifies every delivery with the standardwebhooks library; sensitive params masked", async () => {
      const clock = manualClock(Date.now());
      const b = await bench({ clock });
      const { secret, subscription } = await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["approval.requested", "approval.decided", "invocation.ended"] });
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      expect(JSON.stringify(await b.host.notifications.get(b.scope.tenantId, subscription.subscriptionId))).not.toContain(secret);
      b.verdict.current = "REQUIRE_APPROVAL";
      const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 7, card: "4111-1111-1111-1111" } }));
      expect(await b.host.worker().runOnce()).toEqual(["awaiting_approval"]);
      const approvalId = (await b.host.get(b.scope, invocation.invocationId))!.approvalId!;
      await b.host.approvals.approve(b.scope, approvalId, approver);
      expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
      await dispatch(b);
      const wh = new Webhook(secret);
      const payloads = rx.requests.map((r) => wh.verify(r.body, { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature }) as { type: string; timestamp: string; data: Record<string, unknown> });
      expect(payloads.map((p) => p.type)).toEqual(["approval.requested", "approval.decided", "invocation.ended"]);
      expect(new Set(rx.requests.map((r) => r.id)).size).toBe(3);
      for (const [i, p] of payloads.entries()) {
        expect(p.data.eventId).toBe(rx.requests[i]!.id);
        expect(p.data).toMatchObject({ tenantId: b.scope.tenantId, spaceId: b.scope.spaceId, invocationId: invocation.invocationId, action: "secret.pay" });
        expect(p.data.params).toEqual({ n: 7, card: "[REDACTED]" });
        expect(rx.requests[i]!.body).not.toContain("4111-1111");
      }
      expect(payloads[0]!.data).toMatchObject({ approvalId, quorum: 1, consoleUrl: `https://writ.example.com/console/approvals#apr-${approvalId}` });
      expect(payloads[1]!.data).toMatchObject({ approvalId, decision: "approved" });
      expect(payloads[2]!.data).toMatchObject({ status: "succeeded" });
      // A tampered body does not verify.
      const r0 = rx.requests[0]!;
      expect(() => wh.verify(r0.body.replace("approval", "approvaL"), { "webhook-id": r0.id, "webhook-timestamp": r0.timestamp, "webhook-signature": r0.signature })).toThrow();
      const ds = await b.host.notifications.deliveries(b.scope.tenantId);
      expect(ds.map((d) => d.status)).toEqual(["delivered", "delivered", "delivered"]);
      expect(ds[0]!.log).toEqual([expect.objectContaining({ statusCode: 204 })]);
    });

    // Invariant: events before the subscription existed are not sent; the subscription's filters
    // (action globs, ending statuses) hold; a disabled subscription sends nothing until enabled.
    it("from creation on, filtered, paused while disabled", async () => {
      const b = await bench();
      await ended(b, 1);
      const { subscription } = await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"], filter: { actions: ["one.*"], statuses: ["succeeded"] } });
      await ended(b, 1, "three.idem");
      b.replies.set("a", { outcome: "permanent_failure", reason: "nope" });
      await ended(b, 1);
      b.replies.delete("a");
      await b.host.notifications.update(b.scope.tenantId, subscription.subscriptionId, { enabled: false });
      const [ok] = await ended(b, 1);
      await dispatch(b);
      expect(rx.requests).toHaveLength(0);
      await b.host.notifications.update(b.scope.tenantId, subscription.subscriptionId, { enabled: true });
      await dispatch(b);
      expect(rx.requests.map((r) => (JSON.parse(r.body) as { data: { invocationId: string } }).data.invocationId)).toEqual([ok]);
    });

    // Invariant: a receiver that fails then recovers gets every event exactly once among its
    // accepted answers, in the order the events happened; while the head fails, no later event of
    // that subscription is sent (it is held behind it); every try is recorded.
    it("a failing receiver holds later events; after it recovers it gets each once, in order", async () => {
      const b = await bench();
      const { secret } = await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
      const ids = await ended(b, 5);
      let failing = true;
      rx.answer = () => (failing ? 503 : 200);
      await dispatch(b);
      expect(rx.requests).toHaveLength(1);
      for (let i = 0; i < 2; i++) {
        b.clock.advance(8000);
        await dispatch(b);
      }
      const tried = rx.requests.length;
      expect(new Set(rx.requests.map((r) => r.id)).size).toBe(1);
      failing = false;
      b.clock.advance(8000);
      await dispatch(b);
      const order = rx.requests.map((r) => (JSON.parse(r.body) as { data: { invocationId: string } }).data.invocationId);
      // Every request verifies with Writ's own checker too (timestamps follow the test's clock).
      for (const r of rx.requests) verifyWebhook(crypto, [webhookSecretBytes(secret)], { id: r.id, timestamp: r.timestamp, signature: r.signature }, r.body, b.clock.now(), 3600);
      // The order events happened in is the journal's (a batch of invocations ends in any order).
      const journal = await b.store.transact((tx) => tx.readJournal(b.scope, { fromSeq: 1 }));
      const happened = journal.filter((e) => e.type === "invocation.succeeded").map((e) => e.refs.invocationId);
      expect([...happened].sort()).toEqual([...ids].sort());
      expect(firstOf(rx.requests).map((id) => order[rx.requests.findIndex((r) => r.id === id)])).toEqual(happened);
      expect(rx.requests.filter((r) => r.status === 200).map((r) => r.id)).toEqual(firstOf(rx.requests));
      expect(rx.requests.slice(0, tried).every((r) => r.status === 503)).toBe(true);
      const head = (await b.host.notifications.deliveries(b.scope.tenantId)).at(-1)!;
      expect(head.log.map((l) => l.statusCode)).toEqual([...Array<number>(tried).fill(503), 200]);
      expect(head.log[0]).toMatchObject({ error: "the receiver answered 503", response: "receiver says no" });
    });

    // Invariant: whatever a receiver answers, the try is recorded and the delivery is marked
    // delivered on every store: an answer holding NUL, cut at the kept length through a surrogate
    // pair, is kept with U+FFFD in their place (PostgreSQL refused to update a delivery whose
    // document held either, so the delivery stayed pending and was sent again and again).
    it("a receiver's answer holding NUL, cut through a surrogate pair, is kept and the delivery delivered", async () => {
      const b = await bench();
      await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
      await ended(b, 1);
      rx.answer = () => 200;
      rx.reply = () => "ok\u0000" + "x".repeat(508) + "\ud83d\ude00tail";
      try {
        await dispatch(b);
      } finally {
        rx.reply = (status) => (status >= 300 ? "receiver says no" : "ok");
      }
      const head = (await b.host.notifications.deliveries(b.scope.tenantId)).at(-1)!;
      expect(head.status).toBe("delivered");
      expect(rx.requests).toHaveLength(1);
      expect(head.log).toHaveLength(1);
      expect(head.log[0]!.response).toBe("ok\ufffd" + "x".repeat(508) + "\ufffd");
    });

    // Invariant: dispatchers of two hosts serving at once never send one subscription's events
    // from two places: each event reaches the receiver once, in the order it happened.
    it("two hosts dispatching at once: each event once, in order", async () => {
      const b = await bench();
      const other = makeHostBench(store);
      await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
      await ended(b, 8);
      await sealJournalNow(b.store);
      rx.answer = () => 204;
      for (let round = 0; round < 6; round++) {
        await Promise.all([b.host.notifications.dispatchOnce(), other.host.notifications.dispatchOnce(), b.host.notifications.dispatchOnce(), other.host.notifications.dispatchOnce()]);
      }
      const journal = await b.store.transact((tx) => tx.readJournal(b.scope, { fromSeq: 1 }));
      const happened = journal.filter((e) => e.type === "invocation.succeeded").map((e) => e.refs.invocationId);
      expect(rx.requests.map((r) => (JSON.parse(r.body) as { data: { invocationId: string } }).data.invocationId)).toEqual(happened);
    });

    // Invariant: after maxAttempts failed tries a delivery is dead and no longer holds the line;
    // a redelivery sends the same event id and body again and ends delivered.
    it("dead after maxAttempts, then redelivered with the same id and body", async () => {
      const b = await bench({ notifications: { retryBaseMs: 1000, retryMaxMs: 1000, maxAttempts: 2 } });
      await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
      await ended(b, 2);
      rx.answer = (r) => (rx.requests.length === 0 || rx.requests.every((x) => x.id === r.id) ? 500 : 204);
      await dispatch(b);
      b.clock.advance(1000);
      await dispatch(b);
      const all = await b.host.notifications.deliveries(b.scope.tenantId);
      const dead = all.find((d) => d.status === "dead")!;
      expect(dead.deadReason).toContain("maxAttempts");
      expect(all.find((d) => d.deliveryId !== dead.deliveryId)!.status).toBe("delivered");
      rx.answer = () => 204;
      const again = await b.host.notifications.redeliver(b.scope.tenantId, dead.deliveryId);
      expect(again.status).toBe("pending");
      await dispatch(b);
      const last = rx.requests.at(-1)!;
      expect(last.id).toBe(dead.eventId);
      expect(last.body).toBe(dead.body);
      const after: Delivery = await b.host.notifications.delivery(b.scope.tenantId, dead.deliveryId);
      expect(after.status).toBe("delivered");
      expect(after.log.map((l) => l.statusCode)).toEqual([500, 500, 204]);
      await expect(b.host.notifications.redeliver(b.scope.tenantId, "dlv_nope")).rejects.toMatchObject({ code: "NOT_FOUND" });
    });

    // Invariant: a breaker that opens, a failed journal verification (once per failure however
    // often verified), an approval close to expiry (once per pending approval) and an overdue
    // handoff are events too.
    it("breaker.opened, journal.verify_failed, approval.expiring and handoff.overdue", async () => {
      const b = await bench({ breaker: { failureThreshold: 1, cooldownMs: 60_000 }, notifications: { expiringWithinMs: 600_000 } });
      await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["breaker.opened", "journal.verify_failed", "approval.expiring", "handoff.overdue", "reconciliation.opened"] });
      b.replies.set("a", { outcome: "transient_failure", reason: "503 upstream" });
      await b.host.submit(b.request());
      await b.host.worker().runOnce();
      b.replies.delete("a");
      b.clock.advance(61_000); // past the breaker's cooldown: the next calls run
      const v = { ok: false, entries: 3, checkpoints: 0, headSeq: 3, headHash: null, problems: [{ kind: "hash_mismatch" as const, seq: 2, message: "entry 2 was edited" }] };
      expect(await b.host.notifications.verifyFailed(b.scope, v)).toBe(1);
      expect(await b.host.notifications.verifyFailed(b.scope, v)).toBe(0);
      b.verdict.current = "REQUIRE_APPROVAL";
      await b.host.submit(b.request());
      await b.host.worker().runOnce();
      b.verdict.current = "ALLOW";
      await b.host.submit(b.request({ action: "long.one", params: { n: 1 } }));
      b.replies.set("a", { outcome: "accepted", externalRef: "op-1" });
      await b.host.worker().runOnce();
      b.clock.advance(86_400_000 - 500_000);
      await b.host.sweep();
      await dispatch(b);
      b.clock.advance(120_000);
      await dispatch(b);
      const types = rx.requests.map((r) => (JSON.parse(r.body) as { type: string }).type);
      // The first invocation's retry and the approval request race for the half-open breaker's one
      // probe, so one or both may end awaiting approval: each pending approval is announced once.
      const pending = await b.store.transact((tx) => tx.listApprovals(b.scope, { status: "pending" }));
      expect(pending.length).toBeGreaterThan(0);
      const expiringFor = rx.requests.map((r) => JSON.parse(r.body) as { type: string; data: { approvalId?: string } }).filter((e) => e.type === "approval.expiring").map((e) => e.data.approvalId);
      expect(expiringFor.sort()).toEqual(pending.map((a) => a.approvalId).sort());
      expect(types.filter((t) => t !== "approval.expiring").sort()).toEqual(["breaker.opened", "handoff.overdue", "journal.verify_failed", "reconciliation.opened"]);
      const byType = Object.fromEntries(rx.requests.map((r) => [(JSON.parse(r.body) as { type: string }).type, (JSON.parse(r.body) as { data: Record<string, unknown> }).data]));
      expect(byType["breaker.opened"]).toMatchObject({ connector: "c", operation: "a", failures: 1 });
      expect(byType["journal.verify_failed"]).toMatchObject({ problems: [{ kind: "hash_mismatch", seq: 2 }] });
      expect(byType["handoff.overdue"]).toMatchObject({ reasonCode: "COMPLETION_OVERDUE", action: "long.one" });
    });

    // Invariant: with a data key the stored secret is a sealed envelope (the secret's text is
    // nowhere in the stored row), and deliveries are still signed with the secret shown at creation.
    it("the secret is sealed at rest under the data key and still signs", async () => {
      const dir = mkdtempSync(join(tmpdir(), "writ-notify-key-"));
      try {
        const b = await bench({ dataKey: localDataKey(join(dir, "data-key.json")) });
        const { secret, subscription } = await b.host.notifications.create(b.scope.tenantId, { url: rx.url, events: ["invocation.ended"] });
        const stored = await b.store.transact((tx) => tx.getSubscription(b.scope.tenantId, subscription.subscriptionId));
        expect(stored!.secret.startsWith("sealed:")).toBe(true);
        expect(JSON.stringify(stored)).not.toContain(secret.slice(6));
        await ended(b, 1);
        await dispatch(b);
        const r = rx.requests[0]!;
        expect(verifyWebhook(crypto, [webhookSecretBytes(secret)], { id: r.id, timestamp: r.timestamp, signature: r.signature }, r.body, b.clock.now())).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    // Invariant: bad input is INVALID_ARGUMENT naming the problem, and nothing is created.
    it("bad input names the problem", async () => {
      const b = await bench();
      const t = b.scope.tenantId;
      const bad = (input: object) => b.host.notifications.create(t, input as never);
      await expect(bad({ url: "ftp://x.example/h", events: ["invocation.ended"] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("http or https") });
      await expect(bad({ url: "https://u:secret-pw@x.example/h", events: ["invocation.ended"] })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.not.stringContaining("secret-pw") });
      await expect(bad({ url: "not a url", events: ["invocation.ended"] })).rejects.toMatchObject({ message: "url is not a valid URL" });
      await expect(bad({ url: rx.url, events: ["invocation.endd"] })).rejects.toMatchObject({ message: expect.stringContaining('unknown event "invocation.endd"') });
      await expect(bad({ url: rx.url, events: [] })).rejects.toMatchObject({ message: expect.stringContaining("events must be a non-empty list") });
      await expect(bad({ url: rx.url, events: ["invocation.ended"], filter: { statuses: ["running"] } })).rejects.toMatchObject({ message: expect.stringContaining('filter.statuses: "running" is not an ending status') });
      await expect(bad({ url: rx.url, events: ["approval.requested"], filter: { statuses: ["failed"] } })).rejects.toMatchObject({ message: expect.stringContaining("add it to events") });
      await expect(bad({ url: rx.url, events: ["approval.requested"], filter: { owner: "x" } })).rejects.toMatchObject({ message: expect.stringContaining("filter.owner is not a filter") });
      await expect(bad({ url: rx.url, events: ["approval.requested"], format: "teams" })).rejects.toMatchObject({ message: "format must be one of standard, slack" });
      expect(await b.host.notifications.list(t)).toEqual([]);
    });
  });
}
