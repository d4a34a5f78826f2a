/**
 * Kill points (SPEC 4.3-4.6): a real worker process SIGKILLs itself at a precise point of an
 * execution, then a fresh worker (in this process, short lease so the dead worker's lease expires
 * quickly) runs until nothing is runnable. On SQLite and PostgreSQL, for every kill point, with an
 * idempotent action (the provider honours step keys) and a non-idempotent one (it does not).
 *
 * Kill points:
 * - after-intent: inside the connector, before the effect (the step's `started` checkpoint is
 *   durable, nothing happened outside);
 * - after-effect: right after the effect was recorded in the ledger (effect done, outcome unwritten);
 * - between-steps: at the start of step 2's connector call (step 1's outcome committed);
 * - during-settlement: inside the settlement transaction, before its commit.
 *
 * Invariants checked after recovery (see fixtures/invariants.ts):
 * (1) no effect of a non-idempotent action happens twice (ledger);
 * (2) every invocation ends terminal or reconciliation_required, none stuck;
 * (3) with a provider honouring keys, each step key is applied exactly once (distinct keys and
 *     repeated deliveries are counted);
 * (4) the journal verifies in every scope;
 * (5) every invocation whose outcome was unknown has an open reconciliation record;
 * (6) every effect is known to the host and no success is phantom.
 * And per scenario, what recovery must make of the killed invocation: an idempotent one succeeds
 * with its effect applied once (re-called with the same key where the effect may have happened);
 * a non-idempotent one whose step had started goes to reconciliation_required (OUTCOME_AMBIGUOUS)
 * and is never called again.
 *
 * A crash loop (every worker that runs the invocation dies at the same point): bounded recovery
 * (docs/host.md, Recovery) settles an idempotent invocation reconciliation_required once its claims
 * exceed recoveryMaxAttempts (3 here, the retry cap), "recovery attempts exhausted (4/3)", before
 * any further call; a non-idempotent one goes to reconciliation at its first reclaim, never called
 * again. The same holds for a worker that dies during compensation: the budget is checked before
 * compensation resumes, so the loop ends after the budget instead of running forever.
 *
 * A deploy that changed the action's version while a step was started (the worker died after
 * intent): the new host reads the checkpoints and opens a reconciliation (ACTION_VERSION_UNAVAILABLE)
 * with the step unknown, calling nothing; an invocation of that version with no step started fails.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { killChild, reapChildren, spawnChild, waitFor, type ChildExit } from "./fixtures/children.js";
import { STORE_KINDS, crashHost } from "./fixtures/hosting.js";
import { summary } from "./fixtures/invariants.js";
import { ACTIONS, ALL_ACTIONS, KILL_POINTS, requestFor, type ActionName, type KillPoint } from "./fixtures/scenario.js";
import { makeWorld } from "./fixtures/world.js";

// No child outlives its test: each test reaps its own, a survivor here is a leak.
afterAll(async () => expect(await reapChildren()).toBe(0));

interface Case {
  point: KillPoint;
  idempotent: boolean;
  action: ActionName;
  /** Step the kill happens in. */
  step: number;
}

const CASES: Case[] = KILL_POINTS.flatMap((point) =>
  [true, false].map((idempotent): Case => {
    const two = point === "between-steps";
    return { point, idempotent, action: two ? (idempotent ? "idem2" : "once2") : idempotent ? "idem1" : "once1", step: two ? 1 : 0 };
  }),
);

/** Effects of the killed step that happened before the kill. */
const effectBeforeKill = (p: KillPoint): number => (p === "after-effect" || p === "during-settlement" ? 1 : 0);

function within<T>(p: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)))]).finally(() => clearTimeout(timer));
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`kill points on ${kind}`, () => {
    for (const c of CASES) {
      it(`${c.point}, ${c.idempotent ? "idempotent action, provider honours keys" : "non-idempotent action"}`, async ({ expect }) => {
        const world = await makeWorld(kind);
        try {
          const ids = await world.submit([0, 1, 2, 3].map((n) => requestFor(n, c.action)));
          const marker = join(world.dir, "kill-marker");
          const child = spawnChild(
            `${kind}/${c.point}/${c.action}`,
            world.childEnv("doomed", { WRIT_KILL_AT: c.point, WRIT_MARKER: marker, WRIT_LEASE_MS: "500", WRIT_POLL_MS: "20", WRIT_CONCURRENCY: "2" }),
          );
          let exit: ChildExit;
          try {
            exit = await within(child.exited, 30_000, () => `the child never reached ${c.point}; stdout: ${JSON.stringify(child.lines.slice(-5))}; stderr: ${child.stderr()}`);
          } finally {
            await killChild(child);
          }
          expect(exit.signal, child.stderr()).toBe("SIGKILL");
          const killed = JSON.parse(readFileSync(marker, "utf8")) as { point: string; invocationId: string };
          expect(killed.point).toBe(c.point);

          await world.rescue({ leaseMs: 500 });
          const report = await world.check(ids);
          console.log(`[kill-points] ${kind} ${c.point} ${c.action}: ${summary(report)}`);
          expect(report.violations).toEqual([]);

          const k = report.views.get(killed.invocationId);
          expect(k, `killed invocation ${killed.invocationId}`).toBeDefined();
          const effects = (i: number): number => k!.effects.get(i)?.length ?? 0;
          for (let i = 0; i < c.step; i++) expect(effects(i), `step ${i} before the killed one`).toBe(1);
          if (c.idempotent) {
            expect(report.byStatus).toEqual({ succeeded: ids.length });
            expect(effects(c.step)).toBe(1);
            // Where the effect may have happened, recovery called again with the same key and the provider absorbed it.
            expect(k!.dedups).toBe(effectBeforeKill(c.point));
          } else {
            expect(k!.inv.status).toBe("reconciliation_required");
            expect(k!.recs).toEqual([expect.objectContaining({ status: "open", stepIndex: c.step, reasonCode: "OUTCOME_AMBIGUOUS" })]);
            expect(k!.steps.find((s) => s.stepIndex === c.step)?.status).toBe("unknown");
            expect(effects(c.step)).toBe(effectBeforeKill(c.point));
            expect(k!.dedups).toBe(0);
            expect(report.byStatus.succeeded ?? 0).toBeGreaterThan(0);
          }
        } finally {
          await world.close();
        }
      });
    }
  });
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`a kill with a batch in flight on ${kind}`, () => {
    // Eight invocations claimed together by one worker (concurrency 8): on PostgreSQL their begins
    // (decision consumed with the step's intent) and settlements travel in shared batches
    // (docs/stores.md, "Batches"), so the worker dies between a batch's consume commit and its
    // settlement. Invariants: nothing is lost (all eight end terminal or reconciliation_required);
    // no effect happens twice; a non-idempotent member whose step started is never called again
    // (reconciliation, OUTCOME_AMBIGUOUS); an idempotent one is applied exactly once.
    for (const action of ["once1", "idem1"] as const) {
      it(`${action}: SIGKILL after intent with eight in flight`, async ({ expect }) => {
        const world = await makeWorld(kind);
        try {
          const ids = await world.submit(Array.from({ length: 8 }, (_, n) => requestFor(n, action)));
          const marker = join(world.dir, "kill-marker");
          const child = spawnChild(
            `${kind}/batch/${action}`,
            world.childEnv("doomed", { WRIT_KILL_AT: "after-intent", WRIT_MARKER: marker, WRIT_LEASE_MS: "500", WRIT_POLL_MS: "20", WRIT_CONCURRENCY: "8", WRIT_DELAY_MS: "40" }),
          );
          try {
            await within(child.exited, 30_000, () => `the child never reached after-intent; stderr: ${child.stderr()}`);
          } finally {
            await killChild(child);
          }
          await world.rescue({ leaseMs: 500 });
          const report = await world.check(ids);
          console.log(`[kill-points] ${kind} batch ${action}: ${summary(report)}`);
          expect(report.violations).toEqual([]);
          expect(Object.values(report.byStatus).reduce((a, b) => a + b, 0)).toBe(8);
          for (const id of ids) {
            const v = report.views.get(id)!;
            const effects = v.effects.get(0)?.length ?? 0;
            if (action === "idem1") {
              expect(v.inv.status).toBe("succeeded");
              expect(effects).toBe(1);
            } else {
              expect(["succeeded", "reconciliation_required"]).toContain(v.inv.status);
              expect(effects).toBeLessThanOrEqual(1);
              if (v.inv.status === "reconciliation_required") expect(v.recs).toEqual([expect.objectContaining({ status: "open", reasonCode: "OUTCOME_AMBIGUOUS" })]);
            }
          }
          if (action === "once1") expect(report.byStatus.reconciliation_required ?? 0).toBeGreaterThan(0);
        } finally {
          await world.close();
        }
      });
    }
  });
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`a crash loop on ${kind}`, () => {
    const loops = [
      { action: "idem1", mode: "ok", point: "after-effect", kills: 3, reasonCode: "RECOVERY_EXHAUSTED", stepIndex: 0, effects: 1, dedups: 2 },
      { action: "once1", mode: "ok", point: "after-intent", kills: 1, reasonCode: "OUTCOME_AMBIGUOUS", stepIndex: 0, effects: 0, dedups: 0 },
      // Step c fails for good, the undo of step b starts, and every worker dies inside it.
      { action: "comp3", mode: "fail", point: "during-compensation", kills: 3, reasonCode: "RECOVERY_EXHAUSTED", stepIndex: 2, effects: 1, dedups: 0 },
    ] as const;
    for (const l of loops) {
      it(`${l.action}: every worker dies ${l.point} -> reconciliation_required (${l.reasonCode}) after ${l.kills} kill(s)`, async ({ expect }) => {
        const world = await makeWorld(kind);
        try {
          const [id] = await world.submit([requestFor(0, l.action, l.mode)]);
          let kills = 0;
          for (let gen = 0; gen < 10 && !(await world.settled()); gen++) {
            const child = spawnChild(`${kind}/loop/${l.action}/${gen}`, world.childEnv(`looped-${gen}`, { WRIT_KILL_AT: l.point, WRIT_KILL_ALWAYS: "1", WRIT_RECOVERY_MAX_ATTEMPTS: "3", WRIT_LEASE_MS: "300", WRIT_POLL_MS: "20", WRIT_CONCURRENCY: "1" }));
            try {
              await waitFor(async () => !child.alive() || (await world.settled()), 60_000, `child ${gen} to die or the invocation to settle`);
              if (!child.alive()) {
                expect((await child.exited).signal, child.stderr()).toBe("SIGKILL");
                kills += 1;
              }
            } finally {
              await killChild(child);
            }
          }
          const report = await world.check([id!]);
          console.log(`[kill-points] ${kind} crash loop ${l.action}: ${summary(report)}`);
          expect(report.violations).toEqual([]);
          const view = report.views.get(id!)!;
          expect(kills).toBe(l.kills);
          expect(view.inv.status).toBe("reconciliation_required");
          expect(view.recs).toEqual([expect.objectContaining({ status: "open", stepIndex: l.stepIndex, reasonCode: l.reasonCode })]);
          if (l.reasonCode === "RECOVERY_EXHAUSTED") expect(view.recs[0]!.reason).toBe("recovery attempts exhausted (4/3)");
          expect([view.effects.get(0)?.length ?? 0, view.dedups]).toEqual([l.effects, l.dedups]);
        } finally {
          await world.close();
        }
        // Four or more child processes in a row, each starting tsx: minutes on a loaded machine.
      }, 240_000);
    }
  });
}

for (const kind of STORE_KINDS) {
  describe.concurrent(`a deploy changes the action version on ${kind}`, () => {
    // Invariant (docs/host.md, Recovery): after a kill with a started step, a host on which the
    // invocation's action version is no longer registered reconciles it from its checkpoints
    // (step unknown, ACTION_VERSION_UNAVAILABLE), never a blind failed and never a call; the
    // invocation of that version with no step started fails with the code.
    it("idem1 killed after intent, rescued by a host with idem1@2 -> reconciliation_required", async ({ expect }) => {
      const world = await makeWorld(kind);
      try {
        const [started, untouched] = await world.submit([requestFor(0, "idem1"), requestFor(1, "idem1")]);
        const marker = join(world.dir, "kill-marker");
        const child = spawnChild(`${kind}/deploy/idem1`, world.childEnv("doomed", { WRIT_KILL_AT: "after-intent", WRIT_MARKER: marker, WRIT_LEASE_MS: "300", WRIT_POLL_MS: "20", WRIT_CONCURRENCY: "1" }));
        let exit: ChildExit;
        try {
          exit = await within(child.exited, 30_000, () => `the child never reached after-intent; stderr: ${child.stderr()}`);
        } finally {
          await killChild(child);
        }
        expect(exit.signal, child.stderr()).toBe("SIGKILL");
        const killed = JSON.parse(readFileSync(marker, "utf8")) as { invocationId: string };
        const other = killed.invocationId === started ? untouched! : started!;
        const changed = ALL_ACTIONS.map((a) => (a.id === ACTIONS.idem1.id ? { ...a, version: "2" } : a));
        const host = crashHost({ store: world.store, ledger: world.ledger, worker: "deployed", signingKey: world.key, actions: changed });
        const w = host.worker({ id: "deployed", leaseMs: 300, pollMs: 20 });
        await waitFor(async () => (await w.runOnce(), world.settled()), 20_000, "the deployed host to settle both invocations");
        const report = await world.check([started!, untouched!]);
        console.log(`[kill-points] ${kind} deploy: ${summary(report)}`);
        expect(report.violations).toEqual([]);
        const k = report.views.get(killed.invocationId)!;
        expect(k.inv.status).toBe("reconciliation_required");
        expect(k.recs).toEqual([expect.objectContaining({ status: "open", stepIndex: 0, reasonCode: "ACTION_VERSION_UNAVAILABLE" })]);
        expect(k.steps.map((s) => s.status)).toEqual(["unknown"]);
        expect(k.effects.get(0)?.length ?? 0).toBe(0);
        const o = report.views.get(other)!;
        expect(o.inv.status).toBe("failed");
        expect(o.inv.lastError).toMatch(/^ACTION_VERSION_UNAVAILABLE: /);
        expect(world.ledger.entries().filter((e) => e.worker === "deployed")).toEqual([]);
      } finally {
        await world.close();
      }
    });
  });
}

// The hand-off (docs/host.md, "Hand-off to an idle worker"), where the store offers it: a worker
// process submits through its own host while its worker waits for work, so each admission is
// claimed for it in the admission's commit, and the process dies as the host announces the second
// claim (that admission and its claim committed, no decision made, nothing begun). Invariants: the killed
// invocation is in the store (it committed, though its submit never answered) and the rescuer runs
// it to success with one effect; every invocation the child's submit acknowledged before it died
// is found and succeeds; the invariants of fixtures/invariants.ts hold.
describe("a kill right after a handed-off admission committed, on postgres", () => {
  it("the admission survives and recovery runs it once", async ({ expect }) => {
    const world = await makeWorld("postgres");
    try {
      const requests = [0, 1, 2].map((n) => requestFor(n, "idem1"));
      const marker = join(world.dir, "kill-marker");
      const child = spawnChild(
        "postgres/after-claim/handoff",
        // A long poll: the worker is awake only when it has work, so every admission finds it waiting.
        world.childEnv("doomed", { WRIT_KILL_AT: "after-claim", WRIT_KILL_NTH: "2", WRIT_MARKER: marker, WRIT_SUBMIT: JSON.stringify(requests), WRIT_LEASE_MS: "500", WRIT_POLL_MS: "60000", WRIT_CONCURRENCY: "2" }),
      );
      let exit: ChildExit;
      try {
        exit = await within(child.exited, 30_000, () => `the child never reached after-claim; stdout: ${JSON.stringify(child.lines.slice(-5))}; stderr: ${child.stderr()}`);
      } finally {
        await killChild(child);
      }
      expect(exit.signal, child.stderr()).toBe("SIGKILL");
      const killed = JSON.parse(readFileSync(marker, "utf8")) as { point: string; invocationId: string };
      expect(killed.point).toBe("after-claim");
      const acknowledged = child.lines.filter((l): l is { type: "submitted"; invocationId: string } => (l as { type?: string }).type === "submitted").map((l) => l.invocationId);
      // The first admission was acknowledged; the second was handed off and the process died
      // inside its submit: not acknowledged.
      expect(acknowledged).toHaveLength(1);
      expect(acknowledged).not.toContain(killed.invocationId);
      const handedOff = child.lines.filter((l) => (l as { type?: string }).type === "handed-off").map((l) => (l as { invocationId: string }).invocationId);
      expect(handedOff).toContain(killed.invocationId);

      await world.rescue({ leaseMs: 500 });
      const ids = [killed.invocationId, ...acknowledged];
      const report = await world.check(ids);
      console.log(`[kill-points] postgres after-claim (hand-off) idem1: ${summary(report)}`);
      expect(report.violations).toEqual([]);
      expect(report.byStatus).toEqual({ succeeded: ids.length });
      const k = report.views.get(killed.invocationId);
      expect(k!.inv.attemptCount).toBe(2);
      expect(k!.effects.get(0)?.length ?? 0).toBe(1);
    } finally {
      await world.close();
    }
  });
});
