/**
 * The cluster checker can fail: a clean record set (what a correct run leaves) passes, and each
 * deliberate corruption of the provider's ledger or of Writ's records is caught under its
 * invariant, with a report that names the seed, the nemesis history and the offending invocation.
 * Pure: no namespaces, no database (the records are built here as the store would return them).
 */
import { describe, expect, it } from "vitest";
import type { AttemptRecord, Invocation, ReconciliationRecord, StepCheckpoint } from "../../src/core/types.js";
import { check, report, type CheckInput, type InvocationRecord } from "./fixtures/checker.js";
import type { LedgerLine } from "./fixtures/ledger.js";

const scope = { tenantId: "cluster", spaceId: "even" } as const;
const ACTIONS = { "cl.idem2": { idempotent: true, steps: 2 }, "cl.once1": { idempotent: false, steps: 1 } } as const;

function record(id: string, action: keyof typeof ACTIONS, status: Invocation["status"], o: { attempts?: number; stepStatus?: StepCheckpoint["status"][]; open?: number } = {}): InvocationRecord {
  const steps = ACTIONS[action].steps;
  const stepKeys = Array.from({ length: steps }, (_, i) => `writ-step-${id}-${i}`);
  const inv = { ...scope, invocationId: id, action, idempotencyKey: `s7-req-${id}`, status, attemptCount: o.attempts ?? 1 } as Invocation;
  const stepRows = (o.stepStatus ?? Array.from({ length: steps }, () => "succeeded" as const)).map(
    (st, i) => ({ ...scope, invocationId: id, stepIndex: i, stepName: `s${i}`, status: st, stepKey: stepKeys[i]!, attemptId: `${id}-a`, startedAt: 0 }),
  );
  const attempts = Array.from({ length: o.attempts ?? 1 }, (_, i): AttemptRecord => ({ ...scope, attemptId: `${id}-a${i}`, seq: i, state: "SUCCEEDED", invocationId: id, startedAt: 0 }));
  const recs = Array.from(
    { length: o.open ?? 0 },
    (_, i): ReconciliationRecord => ({ ...scope, reconciliationId: `${id}-r${i}`, invocationId: id, stepIndex: 0, reason: "ambiguous", reasonCode: "OUTCOME_AMBIGUOUS", status: "open", createdAt: 0, updatedAt: 0 }),
  );
  return { inv, steps: stepRows, attempts, recs, stepKeys };
}

let seq = 0;
const line = (key: string, kind: LedgerLine["kind"], step = 0): LedgerLine => ({ seq: ++seq, at: 1_000 + seq, kind, key, op: `op${step}`, n: 1, step, from: "10.213.1.12", status: kind === "refused" ? 503 : 200 });

/** A clean run: a two-step idempotent invocation retried once (a transient 503, then its effects), a non-idempotent one sent once, one left to a person. */
function clean(): CheckInput {
  const a = record("inv-a", "cl.idem2", "succeeded", { attempts: 2 });
  const b = record("inv-b", "cl.once1", "succeeded");
  const c = record("inv-c", "cl.once1", "reconciliation_required", { stepStatus: ["unknown"], open: 1 });
  return {
    records: { invocations: [a, b, c], journals: { "cluster/even": [] } },
    ledger: [line(a.stepKeys[0]!, "refused"), line(a.stepKeys[0]!, "effect"), line(a.stepKeys[1]!, "effect", 1), line(b.stepKeys[0]!, "effect"), line(c.stepKeys[0]!, "effect")],
    admitted: ["inv-a", "inv-b", "inv-c"],
    actions: ACTIONS,
    recovery: { ms: 1_200, boundMs: 33_000 },
    // inv-b came over HTTP from writ serve: its first submit timed out, the repeat was acknowledged.
    http: { acked: ["inv-b"], failedKeys: ["s7-req-inv-b"], refused: [], serverDown: null },
  };
}

const RUN = { seed: 7, history: "+   100ms start kill-pg postgres for 900ms\n+  1000ms healed kill-pg postgres for 900ms", replay: "WRIT_CLUSTER_SEEDS=7 npx vitest run tests/cluster/nemesis.test.ts" };

describe("the cluster checker", () => {
  it("passes a clean record set", () => {
    expect(check(clean()).findings).toEqual([]);
  });

  // Each corruption is what a Writ bug (or a provider bug) would leave; the checker must name it.
  const corruptions: Array<[string, (i: CheckInput) => void, string, string | undefined]> = [
    ["a non-idempotent step sent twice", (i) => void (i.ledger as LedgerLine[]).push(line(i.records.invocations[1]!.stepKeys[0]!, "replay")), "C1 at most once", "inv-b"],
    [
      "an idempotent step sent more often than it had attempts (3 requests in 2 attempts)",
      (i) => void (i.ledger as LedgerLine[]).push(line(i.records.invocations[0]!.stepKeys[1]!, "replay", 1), line(i.records.invocations[0]!.stepKeys[1]!, "replay", 1)), "C2 keyed retries", "inv-a"],
    ["an idempotent step applied twice (the provider ignored the key)", (i) => void (i.ledger as LedgerLine[]).splice(0, 1, line(i.records.invocations[0]!.stepKeys[0]!, "effect")), "C2 keyed retries", "inv-a"],
    ["a request under a key that is no step's", (i) => void (i.ledger as LedgerLine[]).push(line("writ-step-drifted-0", "effect")), "C2 keyed retries", undefined],
    ["a request without an idempotency key", (i) => void (i.ledger as LedgerLine[]).push(line("", "nokey")), "C2 keyed retries", undefined],
    ["an admitted invocation missing from the store", (i) => void (i.admitted as string[]).push("inv-lost"), "C3 nothing lost", "inv-lost"],
    [
      "an invocation acknowledged before a failover, missing after it",
      (i) => {
        (i.admitted as string[]).push("inv-lost");
        i.admittedAt = { "inv-lost": 5_000 };
        i.failovers = [5_200];
      },
      "C7 failover durability",
      "inv-lost",
    ],
    ["an invocation left running", (i) => void (i.records.invocations[1]!.inv.status = "running"), "C3 nothing lost", "inv-b"],
    ["reconciliation_required without an open reconciliation", (i) => void (i.records.invocations[2]!.recs = []), "C3 nothing lost", "inv-c"],
    ["a success whose effect the provider never saw", (i) => void (i.ledger as LedgerLine[]).splice(3, 1), "C4 no phantom success", "inv-b"],
    ["a journal that does not verify", (i) => void (i.records.journals["cluster/even"] = [{ kind: "broken_link", seq: 4 }]), "C5 evidence", undefined],
    [
      "a claim that took a live lease (a worker's clock ahead)",
      (i) => void (i.leaseAnomalies = [{ kind: "stolen", invocationId: "inv-b", owner: "w1", prevOwner: "w0", prevExpiresAt: 301_500, expiresAt: 603_000, dbNow: 1_000 }]),
      "C8 leases on one clock",
      "inv-b",
    ],
    [
      "a lease stamped dead at birth (a worker's clock behind)",
      (i) => void (i.leaseAnomalies = [{ kind: "born-dead", invocationId: "inv-a", owner: "w2", prevOwner: null, prevExpiresAt: null, expiresAt: 1_000, dbNow: 181_000 }]),
      "C8 leases on one clock",
      "inv-a",
    ],
    ["recovery over its bound", (i) => void (i.recovery = { ms: 40_000, boundMs: 33_000 }), "C6 recovery", undefined],
    [
      "a submit to writ serve that timed out, repeated with its key, admitted twice",
      (i) => {
        const b = i.records.invocations[1]!;
        const twin = record("inv-b2", "cl.once1", "succeeded");
        twin.inv.idempotencyKey = b.inv.idempotencyKey;
        twin.stepKeys = [...b.stepKeys];
        i.records.invocations.push(twin);
        (i.admitted as string[]).push("inv-b2");
      },
      "C9 one invocation per key",
      "inv-b2",
    ],
    ["an invocation writ serve acknowledged, missing from the store", (i) => {
      (i.admitted as string[]).push("inv-http-lost");
      (i.http!.acked as string[]).push("inv-http-lost");
    }, "C3 nothing lost", "inv-http-lost"],
    ["writ serve refusing a repeated valid submit with a client error", (i) => void (i.http!.refused as string[]).push("s7-req-9: 409 IDEMPOTENCY_CONFLICT"), "C9 one invocation per key", undefined],
    ["writ serve not answering after the faults healed", (i) => void (i.http!.serverDown = "it runs but /healthz did not answer 200 within 30 s"), "C6 recovery", undefined],
  ];
  for (const [what, corrupt, invariant, invocationId] of corruptions) {
    it(`fails on ${what}, naming ${invariant}`, () => {
      const input = clean();
      corrupt(input);
      const result = check(input);
      expect(result.findings.map((f) => f.invariant)).toContain(invariant);
      if (invocationId !== undefined) expect(result.findings.map((f) => f.invocationId)).toContain(invocationId);
      const text = report(result, input, RUN);
      // The report a failing cluster test prints: seed, how to replay, the history, the invocation.
      expect(text).toContain("seed 7");
      expect(text).toContain(RUN.replay);
      expect(text).toContain("kill-pg postgres");
      expect(text).toContain(`[${invariant}]`);
      if (invocationId !== undefined) expect(text).toContain(invocationId);
    });
  }
});
