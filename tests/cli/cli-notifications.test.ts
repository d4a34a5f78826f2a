/**
 * `writ notifications …` with the real binary (docs/cli.md, docs/notifications.md). Invariants: a
 * bad URL or event is an error naming it and creates nothing; the secret is printed once and
 * never listed; `writ worker --once` sends what is due (signed, verified here with the
 * standardwebhooks library); a dead delivery is sent again after `writ notifications redeliver`.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceiver, type Receiver } from "../host/notify-fixture.js";
import { json, workspace, writ } from "./helpers.js";

let ws: ReturnType<typeof workspace>;
let rx: Receiver;
beforeAll(async () => {
  ws = workspace();
  rx = await startReceiver();
  expect((await writ(ws.dir, ["migrate"])).code).toBe(0);
});
afterAll(async () => {
  await rx?.close();
  ws?.cleanup();
});

const AS_BOT = ["--actor", "agent:support-bot", "--authority", "support-bot"];

describe("writ notifications", () => {
  it("subscribe (errors name the problem), ls, worker --once delivers, disable, redeliver, rm", async () => {
    const badUrl = await writ(ws.dir, ["notifications", "subscribe", "--url", "ftp://x.example/h", "--event", "invocation.ended"]);
    expect(badUrl.code).not.toBe(0);
    expect(badUrl.stderr).toContain("url must use http or https");
    const badEvent = await writ(ws.dir, ["notifications", "subscribe", "--url", rx.url, "--event", "invocation.endd"]);
    expect(badEvent.code).not.toBe(0);
    expect(badEvent.stderr).toContain('unknown event "invocation.endd"');
    expect(json<{ items: unknown[] }>(await writ(ws.dir, ["--json", "notifications", "ls"])).items).toEqual([]);

    const made = await writ(ws.dir, ["--json", "notifications", "subscribe", "--url", rx.url, "--event", "invocation.ended", "--action", "payments.*", "--description", "ops"]);
    expect(made.code, made.stderr).toBe(0);
    const { subscription, secret } = json<{ subscription: { subscriptionId: string }; secret: string }>(made);
    expect(secret).toMatch(/^whsec_/);
    const ls = await writ(ws.dir, ["notifications", "ls"]);
    expect(ls.stdout).toContain(subscription.subscriptionId);
    expect(ls.stdout).not.toContain(secret);
    expect(ls.stdout).not.toContain("/hooks/writ");

    expect((await writ(ws.dir, ["authorities", "create", "support-bot", "--principal", "agent:support-bot", "--action", "*"])).code).toBe(0);
    const sub = await writ(ws.dir, ["submit", "--action", "payments.refund", ...AS_BOT, "--params", '{"paymentId":"pay_1","amount":1200,"currency":"EUR"}', "--idempotency-key", "n-1"]);
    expect(sub.code, sub.stderr).toBe(0);
    const run = await writ(ws.dir, ["worker", "--once"]);
    expect(run.code, run.stderr).toBe(0);
    expect(rx.requests).toHaveLength(1);
    const r = rx.requests[0]!;
    const payload = new Webhook(secret).verify(r.body, { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature }) as { type: string; data: { status: string } };
    expect(payload).toMatchObject({ type: "invocation.ended", data: { status: "succeeded" } });

    const list = json<{ items: Array<{ deliveryId: string; status: string; log: unknown[] }> }>(await writ(ws.dir, ["--json", "notifications", "deliveries"]));
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({ status: "delivered", log: [expect.objectContaining({ statusCode: 204 })] });
    const again = await writ(ws.dir, ["notifications", "redeliver", list.items[0]!.deliveryId]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain("pending again");
    expect((await writ(ws.dir, ["notifications", "redeliver", list.items[0]!.deliveryId])).stderr).toContain("still pending");
    expect((await writ(ws.dir, ["worker", "--once"])).code).toBe(0);
    expect(rx.requests.map((x) => x.id)).toEqual([r.id, r.id]);

    expect((await writ(ws.dir, ["notifications", "disable", subscription.subscriptionId])).stdout).toContain("disabled");
    expect((await writ(ws.dir, ["notifications", "rm", subscription.subscriptionId])).code).toBe(0);
    expect((await writ(ws.dir, ["notifications", "rm", subscription.subscriptionId])).stderr).toContain(`no subscription ${subscription.subscriptionId}`);
  });
});
