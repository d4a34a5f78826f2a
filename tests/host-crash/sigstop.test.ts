/**
 * A frozen worker (SPEC 4.3 fencing): a child worker stops (SIGSTOP) inside a connector call,
 * right after its step's effect, while it holds the invocation's lease. It stays frozen past its
 * lease (no heartbeats), another worker reclaims the invocation and finishes it; then the frozen
 * one is resumed (SIGCONT) and its connector call returns.
 *
 * Invariants checked, on SQLite and PostgreSQL, for a two-step idempotent action (the provider
 * honours keys) and a two-step non-idempotent one:
 * - every write of the resumed worker is refused: it reports the lease lost, and the invocation,
 *   its steps, attempts and reconciliation records and every scope's journal are exactly as the
 *   rescuer left them (no entry from the stale worker after the takeover);
 * - it calls no further connector: the ledger holds no line from it after it was resumed (its one
 *   line is the effect made before it froze), so step 2 is never called by it;
 * - the rescuer's outcome follows the recovery rules: idempotent -> the step is called again with
 *   the same key (absorbed by the provider) and the action succeeds with each effect once;
 *   non-idempotent -> reconciliation_required, never called again;
 * - and the end-of-run invariants (fixtures/invariants.ts) hold.
 *
 * The worker stops itself (process.kill(pid, "SIGSTOP")) when none of its store transactions is
 * open, so the frozen process holds no database lock (a frozen lock holder would block everyone,
 * which is a property of the database, not of the host).
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { sealJournalNow } from "../../src/index.js";
import { killChild, processState, reapChildren, sleep, spawnChild, waitFor } from "./fixtures/children.js";
import { STORE_KINDS } from "./fixtures/hosting.js";
import { summary } from "./fixtures/invariants.js";
import { SCOPES, requestFor, type ActionName } from "./fixtures/scenario.js";
import { makeWorld } from "./fixtures/world.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

const LEASE_MS = 600;

/** Everything the host has stored, per scope. */
async function snapshot(store: Store): Promise<unknown> {
  const out: unknown[] = [];
  // Seal what is committed first (the frozen worker cannot; PostgreSQL seals after commit).
  for (const scope of SCOPES) await sealJournalNow(store, scope);
  for (const scope of SCOPES) {
    out.push(
      await store.transact(async (tx) => {
        const invocations = await tx.listInvocations(scope);
        const steps = await Promise.all(invocations.map((i) => tx.getSteps(scope, i.invocationId)));
        return {
          invocations,
          steps,
          attempts: await tx.listAttempts(scope),
          reconciliations: await tx.listReconciliations(scope),
          journal: await tx.readJournal(scope),
        };
      }),
    );
  }
  return out;
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`a frozen worker on ${kind}`, () => {
    for (const action of ["idem2", "once2"] as const satisfies readonly ActionName[]) {
      it(`${action}: resumed after the takeover, it writes nothing and calls no connector`, async ({ expect }) => {
        const world = await makeWorld(kind);
        const child = spawnChild(
          `${kind}/sigstop/${action}`,
          world.childEnv("frozen", {
            WRIT_STOP_AT: "after-effect",
            WRIT_MARKER: join(world.dir, "stop-marker"),
            WRIT_RUN: "once",
            WRIT_LEASE_MS: String(LEASE_MS),
            WRIT_HEARTBEAT_MS: "150",
            WRIT_POLL_MS: "20",
            WRIT_CONCURRENCY: "1",
          }),
        );
        try {
          const [id] = await world.submit([requestFor(0, action)]);
          const scope = SCOPES[0]!;
          await waitFor(() => processState(child.pid) === "T" || !child.alive(), 30_000, "the child to stop itself");
          expect(child.alive(), child.stderr()).toBe(true);
          const held = await world.host.get(scope, id!);
          expect(held).toMatchObject({ status: "running", leaseOwner: "frozen" });
          expect(world.ledger.entries().map((e) => [e.worker, e.stepIndex, e.kind])).toEqual([["frozen", 0, "effect"]]);

          // Frozen past its lease: no heartbeat extends it; the rescuer takes over and finishes.
          await waitFor(async () => ((await world.host.get(scope, id!))?.leaseExpiresAt ?? 0) < Date.now(), 10_000, "the frozen worker's lease to expire");
          await world.rescue({ leaseMs: LEASE_MS });
          const taken = await world.host.get(scope, id!);
          expect(taken?.status).toBe(action === "idem2" ? "succeeded" : "reconciliation_required");
          const before = await snapshot(world.store);
          const ledgerBefore = world.ledger.entries();

          const resumedAt = Date.now();
          child.signal("SIGCONT");
          await child.waitForLine((l) => (l as { type?: string }).type === "resumed", 10_000, "the resumed connector call");
          const done = await child.waitForLine((l) => (l as { type?: string }).type === "results", 15_000, "the frozen worker's result");
          expect((done as { results: string[] }).results).toEqual(["lease_lost"]);
          // Longer than a heartbeat and several polls: anything more it would write, it has written.
          await sleep(LEASE_MS);
          expect(child.alive()).toBe(true);

          expect(await snapshot(world.store)).toEqual(before);
          const ledgerAfter = world.ledger.entries();
          expect(ledgerAfter).toEqual(ledgerBefore);
          expect(ledgerAfter.filter((e) => e.worker === "frozen" && e.at >= resumedAt)).toEqual([]);
          expect(ledgerAfter.filter((e) => e.worker === "frozen" && e.stepIndex > 0)).toEqual([]);

          await killChild(child);
          const report = await world.check([id!]);
          console.log(`[sigstop] ${kind} ${action}: ${summary(report)}`);
          expect(report.violations).toEqual([]);
          const view = report.views.get(id!)!;
          if (action === "idem2") {
            expect([view.effects.get(0)?.length, view.effects.get(1)?.length]).toEqual([1, 1]);
            expect(view.dedups).toBe(1); // the rescuer's repeat of step 1, absorbed by its key
          } else {
            expect(view.recs).toEqual([expect.objectContaining({ status: "open", stepIndex: 0, reasonCode: "OUTCOME_AMBIGUOUS" })]);
            expect([view.effects.get(0)?.length, view.effects.get(1)?.length ?? 0]).toEqual([1, 0]);
          }
        } finally {
          await killChild(child);
          await world.close();
        }
      });
    }
  });
}
