/**
 * Notification routes over HTTP (docs/notifications.md): every answer is checked against the
 * served OpenAPI document (fixture `call`); admin keys over every space manage a tenant's
 * subscriptions; bad input is a 400 naming the problem; another tenant sees nothing; a large
 * refund's approval request reaches a receiver, in the standard and the Slack format.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceiver, type Receiver } from "../host/notify-fixture.js";
import { call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
let rx: Receiver;
beforeAll(async () => {
  rig = await startRig();
  rx = await startReceiver();
});
afterAll(async () => {
  await rx?.close();
  await rig?.close();
});

const SUBS = "/v1/notifications/subscriptions";

describe("notification routes", () => {
  // Invariant: bad input is 400 and the message names the field and the problem; nothing is created.
  it("bad URL, unknown event, bad filter: 400 naming the problem", async () => {
    const bad = async (body: unknown, says: string) => {
      const r = await call(rig, "POST", SUBS, { key: "acme.admin", body });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toContain(says);
    };
    await bad({ url: "ftp://hooks.example.com/x", events: ["invocation.ended"] }, "url must use http or https");
    await bad({ url: "https://user:hunter2@hooks.example.com/x", events: ["invocation.ended"] }, "must not carry credentials");
    await bad({ url: "nope", events: ["invocation.ended"] }, "url is not a valid URL");
    await bad({ url: rx.url, events: ["invocation.endd"] }, "body.events.0");
    await bad({ url: rx.url, events: [] }, "body.events");
    await bad({ url: rx.url, events: ["invocation.ended"], filter: { statuses: ["running"] } }, "body.filter.statuses.0");
    await bad({ url: rx.url, events: ["invocation.ended"], filter: { owner: "x" } }, "body.filter");
    await bad({ url: rx.url, events: ["approval.requested"], filter: { statuses: ["failed"] } }, "filter.statuses applies to invocation.ended only");
    const r = await call(rig, "POST", SUBS, { key: "acme.admin", body: { url: "https://user:hunter2@hooks.example.com/x", events: ["invocation.ended"] } });
    expect(r.text).not.toContain("hunter2");
    expect((await call(rig, "GET", SUBS, { key: "acme.admin" })).json.items).toEqual([]);
  });

  // Invariant: only an admin key over every space manages subscriptions; another tenant's admin
  // finds nothing of this tenant's.
  it("admin keys over every space only; tenants apart", async () => {
    expect((await call(rig, "GET", SUBS, { key: "acme.operate" })).status).toBe(403);
    const staging = await call(rig, "GET", SUBS, { key: "acme.otherspace" });
    expect(staging.status).toBe(403);
    expect(staging.json.error.message).toContain("whole tenant");
    const made = await call(rig, "POST", SUBS, { key: "acme.admin", body: { url: rx.url, events: ["invocation.ended"], description: "ops" } });
    expect(made.status).toBe(201);
    const id = made.json.subscription.subscriptionId as string;
    expect((await call(rig, "GET", `${SUBS}/${id}`, { key: "globex.admin" })).status).toBe(404);
    expect((await call(rig, "GET", SUBS, { key: "globex.admin" })).json.items).toEqual([]);
    const paused = await call(rig, "PATCH", `${SUBS}/${id}`, { key: "acme.admin", body: { enabled: false } });
    expect(paused.status).toBe(200);
    expect(paused.json.subscription.enabled).toBe(false);
    expect((await call(rig, "PATCH", `${SUBS}/${id}`, { key: "acme.admin", body: { secret: "x" } })).status).toBe(400);
    expect((await call(rig, "DELETE", `${SUBS}/${id}`, { key: "globex.admin" })).status).toBe(404);
    expect((await call(rig, "DELETE", `${SUBS}/${id}`, { key: "acme.admin" })).status).toBe(204);
    expect((await call(rig, "GET", `${SUBS}/${id}`, { key: "acme.admin" })).status).toBe(404);
  });

  // Invariant: a subscription created over HTTP gets the approval request of a large refund,
  // signed with the secret shown once; the Slack format gets a Block Kit message; deliveries and
  // their tries are listed; a delivered one can be sent again, a pending one cannot.
  it("an approval request reaches the receiver, standard and Slack; deliveries listed and redelivered", async () => {
    rx.requests.length = 0;
    const std = await call(rig, "POST", SUBS, { key: "acme.admin", body: { url: rx.url, events: ["approval.requested"] } });
    const slack = await call(rig, "POST", SUBS, { key: "acme.admin", body: { url: rx.url + "?slack", events: ["approval.requested"], format: "slack" } });
    expect(std.json.secret).toMatch(/^whsec_/);
    expect(JSON.stringify((await call(rig, "GET", SUBS, { key: "acme.admin" })).json)).not.toContain(std.json.secret);
    const sub = await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(5000) });
    expect(sub.status).toBe(202);
    await rig.work();
    expect(await rig.runtime.host.notifications.dispatchOnce()).toBeGreaterThan(0);
    const plain = rx.requests.find((r) => !r.body.includes('"blocks"'))!;
    const payload = new Webhook(std.json.secret).verify(plain.body, { "webhook-id": plain.id, "webhook-timestamp": plain.timestamp, "webhook-signature": plain.signature }) as { type: string; data: { params: unknown } };
    expect(payload.type).toBe("approval.requested");
    expect(payload.data.params).toEqual({ amount: 5000, currency: "EUR" });
    const block = JSON.parse(rx.requests.find((r) => r.body.includes('"blocks"'))!.body) as { text: string; blocks: Array<{ type: string }> };
    expect(block.text).toBe("Approval needed: payments.refund");
    expect(block.blocks[0]!.type).toBe("header");
    const list = await call(rig, "GET", `/v1/notifications/deliveries?subscriptionId=${std.json.subscription.subscriptionId}`, { key: "acme.admin" });
    expect(list.status).toBe(200);
    expect(list.json.items).toHaveLength(1);
    const d = list.json.items[0];
    expect(d).toMatchObject({ status: "delivered", eventType: "approval.requested", eventId: plain.id });
    expect(d.log[0]).toMatchObject({ statusCode: 204 });
    expect((await call(rig, "GET", `/v1/notifications/deliveries/${d.deliveryId}`, { key: "acme.admin" })).json.delivery.deliveryId).toBe(d.deliveryId);
    expect((await call(rig, "GET", `/v1/notifications/deliveries/${d.deliveryId}`, { key: "globex.admin" })).status).toBe(404);
    expect((await call(rig, "GET", "/v1/notifications/deliveries?status=lost", { key: "acme.admin" })).status).toBe(400);
    const again = await call(rig, "POST", `/v1/notifications/deliveries/${d.deliveryId}/redeliver`, { key: "acme.admin" });
    expect(again.status).toBe(200);
    expect(again.json.delivery.status).toBe("pending");
    const twice = await call(rig, "POST", `/v1/notifications/deliveries/${d.deliveryId}/redeliver`, { key: "acme.admin" });
    expect(twice.status).toBe(409);
    await rig.runtime.host.notifications.dispatchOnce();
    expect(rx.requests.filter((r) => r.id === plain.id && !r.body.includes('"blocks"'))).toHaveLength(2);
    for (const s of [std, slack]) await call(rig, "DELETE", `${SUBS}/${s.json.subscription.subscriptionId}`, { key: "acme.admin" });
  });
});
