/**
 * The deterministic simulation (docs/simulation.md): 1,000 seeds on the memory store and 200 on
 * SQLite, each a whole deployment (host, workers, API, providers) under seeded faults, checked
 * against the invariants switched on in tests/sim/config.ts. A failing seed prints its replay
 * command; a seed replays exactly (the replay test compares every trace event).
 */
import { describe, expect, it } from "vitest";
import { simConfig } from "./config.js";
import { runSeed } from "./run.js";
import { runSeeds, seedList, storeSelected } from "./suite.js";

const FILE = "tests/sim/sim.test.ts";

describe("deterministic simulation", () => {
  it.runIf(storeSelected("memory"))("memory store: 1,000 seeds keep every invariant", async () => {
    const r = await runSeeds("memory", seedList(1000), FILE);
    expect(r.failures.map((f) => `${f.replay}\n  ${f.violations.join("\n  ")}`)).toEqual([]);
    // The seeds exercised batches: several members per batch, members failing alone, and nodes
    // crashing with a batch queued or in flight (those transitions never hear back).
    expect(r.batching.multi).toBeGreaterThan(0);
    expect(r.batching.failedAlone).toBeGreaterThan(0);
    expect(r.batching.diedMidBatch).toBeGreaterThan(0);
  }, 600_000);

  it.runIf(storeSelected("sqlite"))("SQLite store: 200 seeds keep every invariant", async () => {
    const r = await runSeeds("sqlite", seedList(200), FILE);
    expect(r.failures.map((f) => `${f.replay}\n  ${f.violations.join("\n  ")}`)).toEqual([]);
    expect(r.batching.multi).toBeGreaterThan(0);
    expect(r.batching.diedMidBatch).toBeGreaterThan(0);
  }, 600_000);

  it("a seed replays exactly: the same trace, event for event", async () => {
    const config = simConfig({ keepTrace: true });
    for (const seed of [7, 4242]) {
      const a = await runSeed(seed, "memory", config);
      const b = await runSeed(seed, "memory", config);
      expect(a.events).toBeGreaterThan(100);
      expect(b.trace).toEqual(a.trace);
      expect(b.traceHash).toBe(a.traceHash);
      // A different seed is a different run.
      const c = await runSeed(seed + 1, "memory", config);
      expect(c.traceHash).not.toBe(a.traceHash);
    }
  });

  it("the checker catches a planted bug: a connector applying its effect twice breaks at-most-once", async () => {
    const config = simConfig();
    const caught: number[] = [];
    for (let seed = 1; seed <= 60 && caught.length < 3; seed++) {
      const planted = await runSeed(seed, "memory", config, { plant: "double-effect" });
      if (planted.violations.some((v) => v.invariant === "atMostOnce")) {
        caught.push(seed);
        const clean = await runSeed(seed, "memory", config);
        expect(clean.violations.filter((v) => v.invariant === "atMostOnce")).toEqual([]);
      }
    }
    console.log(`[sim] planted double effect caught by seeds ${caught.join(", ")}`);
    expect(caught.length).toBe(3);
  });
});
