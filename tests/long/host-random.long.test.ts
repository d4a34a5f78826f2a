/**
 * The long randomized crash run (npm run test:long): at least 200 invocations of every action
 * shape and connector outcome, three worker processes on PostgreSQL, a random worker SIGKILLed
 * every 0.15-0.6 s and restarted, many times; then the workers run undisturbed to the end. The
 * same run on one SQLite file shared by the three processes. WRIT_HOST_RANDOM_INVOCATIONS and
 * WRIT_HOST_RANDOM_KILLS scale it up.
 *
 * Invariants checked at the end (tests/host-crash/fixtures/invariants.ts): no non-idempotent
 * effect twice; nothing stuck; idempotent effects exactly once per step key (the provider honours
 * keys); the journal verifies in every scope; unknown outcomes have open reconciliation records;
 * every effect is known to the host and no success is phantom; nothing lost to archiving and
 * retention (I8: the workers archive the journal into a shared directory and prune ended work at a
 * 600 ms window while they are killed; every acknowledged invocation is present or pruned with
 * evidence, and the archives plus the database verify as one chain). The seed is printed; WRIT_SEED replays the
 * workload and the kill plan (not the exact interleaving).
 */
import { afterAll, expect, it } from "vitest";
import { SEED } from "../helpers/seed.js";
import { reapChildren } from "../host-crash/fixtures/children.js";
import { runSoak } from "../host-crash/fixtures/soak.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

const invocations = Math.max(200, Number(process.env.WRIT_HOST_RANDOM_INVOCATIONS ?? 200));
const maxKills = Math.max(20, Number(process.env.WRIT_HOST_RANDOM_KILLS ?? 60));

for (const kind of ["postgres", "sqlite"] as const) {
  it(`${invocations} invocations, 3 workers on ${kind}, ${maxKills} random SIGKILLs (seed ${SEED})`, async () => {
    console.log(`[host-random] ${kind} seed=${SEED} (replay: WRIT_SEED=${SEED})`);
    const r = await runSoak({ kind, seed: SEED, invocations, workers: 3, killEveryMs: [150, 600], maxKills, deadlineMs: 600_000, lifecycle: true });
    expect(r.report.violations).toEqual([]);
    expect(r.settled).toBe(true);
    expect(r.report.invocations + r.report.pruned, "acknowledged invocations present or pruned with evidence").toBe(invocations);
    expect(r.reclaims, "kills that interrupted work in flight").toBeGreaterThan(0);
    // Not vacuous: the workers archived and pruned during the run.
    expect(r.report.pruned, "acknowledged invocations pruned (with evidence)").toBeGreaterThan(0);
    expect(r.report.prunedEntries, "archived journal entries pruned from the database").toBeGreaterThan(0);
  });
}
