/**
 * Store faults at every write (SPEC 4.4-4.6): a clean run of each scenario is measured first (how
 * many store writes it makes: insert*, update*, put*, consume*, claim*, heartbeat), then for EVERY
 * N from 1 to that number the Nth write fails once with STORE_ERROR, and a fresh worker recovers
 * (the manual clock is moved past leases and backoffs). Two fault modes: `throw` (the write is not
 * made, its transaction rolls back) and `lost-ack` (the transaction commits, then the caller gets
 * STORE_ERROR, as when a connection drops right after COMMIT). On the memory and SQLite stores.
 *
 * Invariants checked after every run (fixtures/invariants.ts): no non-idempotent effect twice;
 * nothing stuck; with a provider honouring keys each step key applied exactly once; the journal
 * verifies; unknown outcomes have an open reconciliation record; every effect is known to the host
 * and no success is phantom. Plus:
 * - a failed submission leaves nothing behind (throw) and a resubmission is answered consistently;
 * - an idempotent scenario ends exactly as its clean run did (a store fault never changes the
 *   outcome, SPEC 4.5: "a store error after a provider effect is recorded never turns the
 *   invocation failed");
 * - a non-idempotent scenario ends as its clean run did, or in reconciliation_required;
 * - a compensated scenario runs each compensation exactly once.
 *
 * And one liveness check: an invocation a worker abandoned after a store error is recovered while
 * that worker keeps running (its per-worker heartbeat must not keep the abandoned lease alive).
 */
import { describe, expect, it } from "vitest";
import { isWritError } from "../../src/core/errors.js";
import { manualClock, type ManualClock } from "../../src/core/manual-clock.js";
import type { Store } from "../../src/core/store.js";
import type { InvocationStatus } from "../../src/core/types.js";
import { generateSigningKey } from "../../src/index.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { FAULT_MODES, faultStore, type FaultMode, type FaultStore } from "../helpers/fault-store.js";
import { crashHost, keyringOf } from "./fixtures/hosting.js";
import { SETTLED, checkInvariants, type CheckReport } from "./fixtures/invariants.js";
import { ACTIONS, SCOPES, grantAuthorities, memoryLedger, requestFor, type ActionName, type Ledger, type Mode } from "./fixtures/scenario.js";

const KEY = generateSigningKey({ kid: "fault-key" });
const LEASE_MS = 1000;
const T0 = 1_800_000_000_000;

interface Scenario {
  name: string;
  action: ActionName;
  mode: Mode;
  /** How the clean run ends. */
  clean: InvocationStatus;
}

const SCENARIOS: Scenario[] = [
  { name: "one-step idempotent", action: "idem1", mode: "ok", clean: "succeeded" },
  { name: "two-step idempotent", action: "idem2", mode: "ok", clean: "succeeded" },
  { name: "two-step idempotent, transient failure then retry", action: "idem2", mode: "transient", clean: "succeeded" },
  { name: "three-step idempotent, last step fails, two compensations", action: "comp3", mode: "fail", clean: "failed" },
  { name: "one-step non-idempotent", action: "once1", mode: "ok", clean: "succeeded" },
  { name: "two-step non-idempotent", action: "once2", mode: "ok", clean: "succeeded" },
];

const STORES: Array<{ name: string; make: () => Store }> = [
  { name: "memory", make: () => memoryStore() },
  { name: "sqlite", make: () => sqliteStore({ path: ":memory:" }) },
];

interface RunResult {
  status: InvocationStatus | undefined;
  report: CheckReport;
  store: FaultStore;
  ledger: Ledger;
  problems: string[];
}

const settledStatus = (s: InvocationStatus | undefined): boolean => s !== undefined && SETTLED.includes(s);

/** One run: submit, a first worker until it has nothing more to do, then a fresh worker past leases. */
async function run(makeStore: () => Store, sc: Scenario, fault?: { n: number; mode: FaultMode }): Promise<RunResult> {
  const base = makeStore();
  await base.migrate();
  await grantAuthorities(base);
  const store = faultStore(base, fault ? { failAtWrite: fault.n, mode: fault.mode } : {});
  const clock: ManualClock = manualClock(T0);
  const ledger = memoryLedger();
  const problems: string[] = [];
  const storeError = (e: unknown, where: string): void => {
    if (!isWritError(e, "STORE_ERROR")) problems.push(`${where} threw ${String(e)}`);
  };
  const h1 = crashHost({ store, ledger, worker: "w1", signingKey: KEY, clock });
  const req = requestFor(0, sc.action, sc.mode);
  const scope = SCOPES[0]!;
  const get = async (): Promise<InvocationStatus | undefined> => (await base.transact((tx) => tx.findInvocationByKey(scope, req.action, req.idempotencyKey)))?.status;
  const runAt = async (): Promise<number> => (await base.transact((tx) => tx.findInvocationByKey(scope, req.action, req.idempotencyKey)))?.runAt ?? 0;
  try {
    let id: string | undefined;
    try {
      id = (await h1.submit(req)).invocation.invocationId;
    } catch (e) {
      storeError(e, "submit");
      const existing = await base.transact((tx) => tx.findInvocationByKey(scope, req.action, req.idempotencyKey));
      if (fault?.mode === "throw" && existing) problems.push("a submission that failed left an invocation behind");
      const again = await h1.submit(req);
      if (again.replayed !== (existing !== null)) problems.push(`resubmission answered replayed=${again.replayed} with ${existing ? "an" : "no"} invocation stored`);
      id = again.invocation.invocationId;
    }

    // The first worker, until it claims nothing (time moves only to due retries, never past its lease).
    const w1 = h1.worker({ id: "w1", leaseMs: LEASE_MS });
    for (let i = 0; i < 20; i++) {
      let claimed = 0;
      try {
        claimed = (await w1.runOnce()).length;
      } catch (e) {
        storeError(e, "w1.runOnce");
        continue;
      }
      if (claimed > 0) continue;
      if ((await get()) === "queued" && (await runAt()) > clock.now()) clock.advance((await runAt()) - clock.now());
      else break;
    }

    // A fresh worker (a new process, as far as the host knows), past leases and backoffs.
    const h2 = crashHost({ store, ledger, worker: "w2", signingKey: KEY, clock });
    const w2 = h2.worker({ id: "w2", leaseMs: LEASE_MS });
    for (let i = 0; i < 40 && !settledStatus(await get()); i++) {
      let claimed = 0;
      try {
        claimed = (await w2.runOnce()).length;
      } catch (e) {
        storeError(e, "w2.runOnce");
      }
      if (claimed === 0) clock.advance(LEASE_MS + 1);
    }
    const report = await checkInvariants({ store: base, keyring: keyringOf(KEY), scopes: SCOPES, ledger, stepKey: (...a) => h1.context.boundary.stepKey(...a), honour: "idempotent", expected: [id] });
    return { status: await get(), report, store, ledger, problems };
  } finally {
    await base.close();
  }
}

for (const st of STORES) {
  describe(`store fault at every write, ${st.name} store`, () => {
    for (const sc of SCENARIOS) {
      it(sc.name, async () => {
        const clean = await run(st.make, sc);
        expect(clean.problems).toEqual([]);
        expect(clean.report.violations).toEqual([]);
        expect(clean.status).toBe(sc.clean);
        const writes = clean.store.writes();
        expect(writes).toBeGreaterThan(5);
        const idempotent = ACTIONS[sc.action].idempotent;
        const outcomes: Record<string, number> = {};
        const failures: string[] = [];
        for (const mode of FAULT_MODES) {
          for (let n = 1; n <= writes; n++) {
            const r = await run(st.make, sc, { n, mode });
            const f = r.store.fault();
            const where = `${mode} at write #${n} (${f?.method ?? "never fired"})`;
            outcomes[`${mode}:${r.status}`] = (outcomes[`${mode}:${r.status}`] ?? 0) + 1;
            if (f === null) failures.push(`${where}: the fault did not fire`);
            for (const p of r.problems) failures.push(`${where}: ${p}`);
            for (const v of r.report.violations) failures.push(`${where}: ${v}`);
            const allowed = idempotent ? [sc.clean] : [sc.clean, "reconciliation_required"];
            if (!allowed.includes(r.status!)) failures.push(`${where}: ended ${r.status}, expected ${allowed.join(" or ")}`);
            if (sc.action === "comp3" && r.status === "failed") {
              const undos = r.ledger.entries().filter((e) => e.kind === "effect" && e.operation.startsWith("undo-"));
              if (undos.length !== 2) failures.push(`${where}: ${undos.length} compensation effects, expected 2`);
            }
          }
        }
        console.log(`[fault-nth-write] ${st.name} ${sc.name}: ${writes} writes in a clean run; outcomes ${JSON.stringify(outcomes)}`);
        expect(failures).toEqual([]);
      });
    }
  });
}

const ticks = async (n: number): Promise<void> => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

for (const st of STORES) {
  describe(`an abandoned invocation while its worker lives, ${st.name} store`, () => {
    // Invariant (SPEC 4.5, 4.3): a store error after the effect makes the worker abandon the
    // invocation so that recovery repairs it; recovery must happen even though the worker that
    // abandoned it keeps running and heartbeating (heartbeats are per worker, not per invocation).
    it("is recovered while the worker that abandoned it keeps running", async () => {
      const base = st.make();
      await base.migrate();
      await grantAuthorities(base);
      // The settlement's first write (the step outcome) fails once, after the provider's effect.
      const store = faultStore(base, { failWhen: (c) => c.method === "putStep" && (c.args[1] as { status?: string }).status === "succeeded" });
      const clock = manualClock(T0);
      const ledger = memoryLedger();
      const host = crashHost({ store, ledger, worker: "w1", signingKey: KEY, clock });
      const w = host.worker({ id: "w1", leaseMs: LEASE_MS, heartbeatMs: 250, pollMs: 100 });
      const { invocation } = await host.submit(requestFor(0, "idem1"));
      w.start();
      try {
        // Bounded by wall time, not by a count of turns: on a loaded machine the store's I/O
        // (SQLite's group commit, PostgreSQL round trips) needs more turns of the event loop.
        const until = Date.now() + 30_000;
        while (!(store.fault() !== null && w.inFlight() === 0) && Date.now() < until) {
          clock.advance(10);
          await ticks(20);
        }
        expect(store.fault()?.method).toBe("putStep");
        // The worker lives on: time passes, it heartbeats and polls.
        for (const until2 = Date.now() + 30_000; Date.now() < until2; ) {
          const cur = await host.get(SCOPES[0]!, invocation.invocationId);
          if (settledStatus(cur?.status)) break;
          clock.advance(250);
          await ticks(50);
        }
        const inv = await host.get(SCOPES[0]!, invocation.invocationId);
        expect({ status: inv?.status, attemptCount: inv?.attemptCount }).toMatchObject({ status: "succeeded" });
        const report = await checkInvariants({ store: base, keyring: keyringOf(KEY), scopes: SCOPES, ledger, stepKey: (...a) => host.context.boundary.stepKey(...a), honour: "idempotent", expected: [invocation.invocationId] });
        expect(report.violations).toEqual([]);
        expect(report.effects).toBe(1);
        expect(report.dedups).toBe(1);
      } finally {
        await w.stop({ drain: false });
        await base.close();
      }
    });
  });
}
