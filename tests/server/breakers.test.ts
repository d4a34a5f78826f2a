/**
 * Operators see circuit breakers over HTTP (`GET /v1/spaces/{spaceId}/breakers`, operate role, per
 * space) and in `/metrics` (state changes this process wrote; no tenant labels).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

describe("circuit breakers over HTTP", () => {
  // Invariant: a breaker opened by transient failures is listed for the space's operators (not for
  // another tenant, not for a submit key), refuses the call, and its opening is counted in /metrics.
  it("lists the space's breakers and counts state changes in /metrics", async () => {
    const target = { connector: "payments", operation: "refund" };
    const acme = { tenantId: "acme", spaceId: "prod" };
    const { failureThreshold } = rig.runtime.host.context.r.breaker;
    // The host's own path: transient failures recorded after settlements.
    const attempt = rig.runtime.host.context.breakers.forAttempt(acme, "test-holder");
    for (let i = 0; i < failureThreshold; i++) await attempt.outcome(target, "failure");

    const list = await call(rig, "GET", "/v1/spaces/prod/breakers", { key: "acme.operate" });
    expect(list.status).toBe(200);
    expect(list.json.items).toEqual([expect.objectContaining({ ...target, state: "open", failures: failureThreshold })]);
    expect((await call(rig, "GET", "/v1/spaces/prod/breakers", { key: "acme.submit" })).status).toBe(403);
    expect((await call(rig, "GET", "/v1/spaces/prod/breakers", { key: "globex.operate" })).json.items).toEqual([]);

    const id = (await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body: refund(10) })).json.invocation.invocationId;
    await rig.work();
    const inv = (await call(rig, "GET", `/v1/spaces/prod/invocations/${id}`, { key: "acme.submit" })).json.invocation;
    expect(inv).toMatchObject({ status: "queued", lastError: "circuit open for payments.refund" });

    const metrics = await call(rig, "GET", "/metrics");
    expect(metrics.text).toContain('writ_breaker_transitions_total{connector="payments",operation="refund",to="open"} 1');
    expect(metrics.text).not.toContain("acme");
  });
});
