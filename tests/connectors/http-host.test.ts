/**
 * The HTTP connector through the real host (memory store): why a 503 may be retried (the provider
 * dedupes on Idempotency-Key, the host retries idempotent actions with the same step key), and
 * that a reset after sending goes to reconciliation instead of being retried.
 */
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpConnector } from "../../src/connectors/index.js";
import { defineAction } from "../../src/core/action.js";
import type { Clock } from "../../src/core/ports.js";
import type { Store } from "../../src/core/store.js";
import { memoryFactory } from "../helpers/stores.js";
import { grantAuthority, makeHostBench, type HostBench } from "../host/fixture.js";
import { json, startServer, type TestServer } from "./helpers.js";

describe("httpConnector in the host", () => {
  let store: Store;
  let cleanup: () => Promise<void>;
  let server: TestServer;
  beforeAll(async () => {
    ({ store, cleanup } = await memoryFactory.make());
    server = await startServer();
  });
  afterAll(async () => {
    await server.close();
    await cleanup();
  });

  const action = defineAction({
    id: "payments.charge",
    version: "1",
    params: z.object({ n: z.number() }),
    idempotent: true,
    steps: [{ name: "charge", connector: "payments", operation: "charge", input: ({ params }) => ({ amount: params.n }) }],
  });

  /** A bench whose connector runs on the bench's manual clock. */
  async function bench(): Promise<HostBench> {
    const bound: { bench?: HostBench } = {};
    const clock: Clock = { now: () => bound.bench!.clock.now(), setTimer: (ms, fn) => bound.bench!.clock.setTimer(ms, fn) };
    const payments = httpConnector({
      id: "payments",
      baseUrl: server.url,
      headers: { authorization: "Bearer sk_test_host_secret" },
      clock,
      operations: { charge: { method: "POST", path: "/charges", externalRef: { field: "/id" } } },
    });
    const b = (bound.bench = makeHostBench(store, { actions: [action], connectors: [payments] }));
    await grantAuthority(b);
    return b;
  }

  // Invariant (SPEC 4.5): a transient failure of an idempotent action is retried with the same
  // step key; a provider that dedupes on Idempotency-Key applies the effect once, even though
  // the first attempt's effect happened and only its answer was a 503.
  it("a 503 is retried with the same Idempotency-Key and the provider applies the charge once", async () => {
    const b = await bench();
    const charges = new Map<string, { id: string; amount: number }>();
    let effects = 0;
    server.requests.length = 0;
    server.handle((req, res) => {
      const key = String(req.headers["idempotency-key"]);
      let charge = charges.get(key);
      if (charge === undefined) {
        effects++;
        charge = { id: `ch_${effects}`, amount: (JSON.parse(req.body) as { amount: number }).amount };
        charges.set(key, charge);
        // The charge is made, but a gateway in front answers 503 this first time.
        return json(res, 503, { error: "upstream unavailable" });
      }
      json(res, 200, charge);
    });
    const { invocation } = await b.host.submit(b.request({ action: "payments.charge", params: { n: 7 } }));
    const w = b.host.worker();
    expect(await w.runOnce()).toEqual(["queued"]);
    expect((await b.host.get(b.scope, invocation.invocationId))?.lastError).toContain("HTTP 503");
    b.clock.advance(1_000);
    expect(await w.runOnce()).toEqual(["succeeded"]);

    expect(server.requests).toHaveLength(2);
    const keys = server.requests.map((r) => r.headers["idempotency-key"]);
    expect(keys[0]).toMatch(/^writ-step-/);
    expect(keys[1]).toBe(keys[0]);
    expect(effects).toBe(1);
    const done = await b.host.get(b.scope, invocation.invocationId);
    expect(done?.status).toBe("succeeded");
    expect(done?.result).toEqual({ charge: { id: "ch_1", amount: 7 } });
  });

  // Invariant (SPEC 4.5): an outcome the connector cannot know (reset after the request was sent)
  // is never retried automatically: the invocation waits for reconciliation.
  it("a reset after sending -> reconciliation_required, no retry", async () => {
    const b = await bench();
    server.requests.length = 0;
    server.handle((_req, _res, raw) => raw.socket.destroy());
    const { invocation } = await b.host.submit(b.request({ action: "payments.charge", params: { n: 3 } }));
    const w = b.host.worker();
    expect(await w.runOnce()).toEqual(["reconciliation_required"]);
    b.clock.advance(60_000);
    expect(await w.runOnce()).toEqual([]);
    expect(server.requests).toHaveLength(1);
    const inv = await b.host.get(b.scope, invocation.invocationId);
    expect(inv?.status).toBe("reconciliation_required");
    expect(inv?.lastError ?? "").not.toContain("sk_test_host_secret");
  });
});
