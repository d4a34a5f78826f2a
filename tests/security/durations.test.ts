/**
 * Durations are validated to what timers can hold (docs/security.md). Invariants: a timeoutMs,
 * lease, heartbeat, poll or sweep interval above 2^31-1 ms is refused at construction with
 * INVALID_OPTION naming the option; at exactly 2^31-1 a boundary on the system clock lets a
 * connector that answers in 20 ms succeed (Node would clamp a longer delay to 1 ms and time out
 * every call); the system clock never fires a long timer early.
 */
import { describe, expect, it } from "vitest";
import { WritError } from "../../src/core/errors.js";
import { MAX_TIMER_MS } from "../../src/core/validate.js";
import { systemClock } from "../../src/node/clock.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { makeBench } from "../boundary/fixture.js";
import { makeHostBench } from "../host/fixture.js";

function optionError(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    if (e instanceof WritError && e.code === "INVALID_OPTION") return e.message;
    throw e;
  }
  throw new Error("no error");
}

describe("durations", () => {
  const tooLong = MAX_TIMER_MS + 1;

  it("boundary, host and worker refuse durations a timer cannot hold", () => {
    const store = memoryStore();
    const b = makeBench(store);
    expect(optionError(() => b.boundary({ timeoutMs: tooLong }))).toMatch(/timeoutMs/);
    expect(optionError(() => b.boundary({ timeoutMs: Infinity }))).toMatch(/timeoutMs/);
    for (const opt of ["timeoutMs", "sweepMs"] as const) {
      expect(optionError(() => makeHostBench(store, { [opt]: tooLong }))).toMatch(new RegExp(opt));
    }
    expect(optionError(() => makeHostBench(store, { retry: { maxAttempts: 3, baseDelayMs: tooLong, maxDelayMs: 1000 } }))).toMatch(/baseDelayMs/);
    const host = makeHostBench(store).host;
    for (const opt of ["leaseMs", "heartbeatMs", "pollMs"] as const) {
      expect(optionError(() => host.worker({ [opt]: tooLong }))).toMatch(new RegExp(opt));
    }
    // The largest valid values are accepted.
    expect(() => b.boundary({ timeoutMs: MAX_TIMER_MS })).not.toThrow();
    expect(() => host.worker({ leaseMs: MAX_TIMER_MS, heartbeatMs: MAX_TIMER_MS, pollMs: MAX_TIMER_MS })).not.toThrow();
  });

  it("a boundary with the longest timeoutMs on the system clock does not time out a 20 ms call", async () => {
    const store = memoryStore();
    await store.migrate();
    const b = makeBench(store);
    b.mode.current = async () => {
      await new Promise((r) => setTimeout(r, 20));
      return { outcome: "success", externalRef: "slow-but-fine" };
    };
    const req = b.request();
    const a = await b.execute(req, b.decision(req, { issuedAt: Date.now() }), {}, { timeoutMs: MAX_TIMER_MS, clock: systemClock });
    expect(a.state).toBe("SUCCEEDED");
    await store.close();
  });

  it("the system clock does not fire a timer longer than 2^31-1 ms early", async () => {
    let fired = 0;
    const cancel = systemClock.setTimer(MAX_TIMER_MS + 1000, () => fired++);
    const short = new Promise<void>((r) => systemClock.setTimer(30, r));
    await short;
    expect(fired).toBe(0);
    cancel();
  });
});
