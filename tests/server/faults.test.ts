/** Faults answer a generic message with the detail only in the log; no secret ever reaches the log or an answer. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/core/webhook.js";
import { WEBHOOK_SECRET, call, memoryLogger, refund, secretOf, startRig, type Rig } from "./fixture.js";

const log = memoryLogger();
let rig: Rig;
beforeAll(async () => {
  rig = await startRig({ logger: log });
});
afterAll(async () => {
  await rig?.close();
});

describe("faults and secrets", () => {
  it("an unexpected error is a 500 INTERNAL with a generic message; the detail is logged with the request id", async () => {
    const r = await call(rig, "POST", "/v1/spaces/prod/decisions/preview", { key: "acme.submit", body: refund(1, { currency: "BOOM" }), headers: { "x-request-id": "fault-1" } });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({ error: { code: "INTERNAL", message: "internal error" } });
    expect(r.text).not.toContain("7f3a");
    const line = log.lines.find((l) => l.includes('"requestId":"fault-1"') && l.includes('"level":"error"'));
    expect(line).toContain("policy engine exploded: internal detail 7f3a");
  });

  it("keys and webhook secrets appear in no log line and no answer", async () => {
    const keys = Object.values(rig.keys);
    for (const k of ["acme.submit", "acme.approve", "globex.admin"]) await call(rig, "GET", "/v1/spaces/prod/invocations", { key: k });
    await call(rig, "GET", "/v1/spaces/prod/invocations", { key: `Bearer ${rig.keys["acme.submit"]!.slice(0, -2)}xx` });
    const body = JSON.stringify({ externalRef: "dep-none", outcome: "success" });
    const ts = Math.floor(Date.now() / 1000);
    const answers = [
      await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: { "content-type": "application/json", "webhook-id": "m1", "webhook-timestamp": String(ts), "webhook-signature": signWebhook(rig.runtime.host.context.o.crypto, WEBHOOK_SECRET, "m1", ts, body) } }),
      await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers: { "content-type": "application/json", "webhook-id": "m2", "webhook-timestamp": String(ts), "webhook-signature": "v1,AAAA" } }),
    ];
    expect(log.lines.length).toBeGreaterThan(5);
    const everything = [...log.lines, ...answers.map((a) => a.text)].join("\n");
    for (const k of keys) expect(everything).not.toContain(secretOf(k));
    expect(everything).not.toContain(WEBHOOK_SECRET.slice(6));
    expect(everything).not.toMatch(/authorization/i);
  });

  it("a closed store answers 503 with a generic message", async () => {
    await rig.runtime.store.close();
    const r = await call(rig, "GET", "/v1/spaces/prod/invocations", { key: "acme.submit" });
    expect(r.status).toBe(503);
    expect(r.json.error.code).toBe("STORE_CLOSED");
    expect(r.json.error.message).toBe("the store is unavailable; retry later");
    const h = await call(rig, "GET", "/healthz");
    expect(h.status).toBe(503);
    expect(h.json.error.code).toBe("SERVICE_UNAVAILABLE");
  });
});
