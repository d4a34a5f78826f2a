/**
 * A short randomized crash run in the main suite (the long one is tests/long/host-random.long.test.ts):
 * 40 invocations of every action shape (one and two steps, idempotent and not, compensated) and
 * connector outcome (success, transient failure, permanent failure, ambiguous), three worker
 * processes on PostgreSQL, a random worker SIGKILLed and restarted every 0.3-0.8 s, a few times.
 *
 * Invariants checked at the end (fixtures/invariants.ts): no non-idempotent effect twice; nothing
 * stuck; idempotent effects exactly once per step key (the provider honours keys); the journal
 * verifies in every scope; unknown outcomes have open reconciliation records; every effect is
 * known to the host and no success is phantom. The seed is printed; WRIT_SEED replays the
 * workload and the kill plan.
 */
import { afterAll, expect, it } from "vitest";
import { SEED } from "../helpers/seed.js";
import { reapChildren } from "./fixtures/children.js";
import { runSoak } from "./fixtures/soak.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

it(`40 invocations, 3 workers on PostgreSQL, random SIGKILLs (seed ${SEED})`, async () => {
  console.log(`[host-random-short] seed=${SEED} (replay: WRIT_SEED=${SEED})`);
  const r = await runSoak({ kind: "postgres", seed: SEED, invocations: 40, workers: 3, killEveryMs: [300, 800], maxKills: 6, deadlineMs: 45_000 });
  expect(r.report.violations).toEqual([]);
  expect(r.settled).toBe(true);
  expect(r.report.invocations).toBe(40);
  expect(r.kills).toBeGreaterThan(0);
  expect(r.reclaims, "kills that interrupted work in flight").toBeGreaterThan(0);
});
