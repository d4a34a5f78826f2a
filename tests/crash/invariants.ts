/**
 * What must hold in a store after a boundary process was SIGKILLed at an arbitrary moment, and a
 * reader that takes a snapshot of it. `checkCrash` returns the violations (empty = all hold), each
 * prefixed with the invariant it breaks.
 *
 * Scope of the claim: a process crash (SIGKILL), not a power loss. What the child was told is
 * committed must be in the store; nothing a transaction half did may be visible.
 */
import { readWholeJournal, type JournalVerification } from "../../src/core/journal.js";
import type { Keyring } from "../../src/core/keyring.js";
import type { Store } from "../../src/core/store.js";
import type { AttemptRecord, ConsumedDecision, IdempotencyRecord, JournalCheckpoint, JournalEntry, Scope, StepCheckpoint } from "../../src/core/types.js";
import { sealJournalNow, verifyJournalIn } from "../../src/index.js";
import type { ReportedCheckpoint } from "./child.js";
import type { CrashTarget } from "./targets.js";
import { CRASH_SCOPES, EXECUTED_STATES, IDEM_STATE_OF, STEP_STATUS_OF, type Report } from "./workload.js";

export interface ScopeView {
  scope: Scope;
  /** In seq order. */
  attempts: AttemptRecord[];
  journal: JournalEntry[];
  checkpoints: JournalCheckpoint[];
  verification: JournalVerification;
}

/** Everything the checks read, taken after the child is dead and the store reopened. */
export interface Snapshot {
  scopes: ScopeView[];
  attempts: Map<string, AttemptRecord>;
  consumed: ConsumedDecision[];
  idempotency: IdempotencyRecord[];
  /** Step checkpoints by `scopeKey/invocationId`. */
  steps: Map<string, StepCheckpoint[]>;
}

/** What a re-execution of an earlier child's key must answer (checked when it is reported). */
export type Expectation =
  | { kind: "refused"; code: "EXECUTION_IN_PROGRESS" | "RECONCILIATION_PENDING" }
  | { kind: "duplicate"; of: string }
  | { kind: "executes"; fromStep: number };

export const sk = (s: { tenantId: string; spaceId: string }): string => `${s.tenantId}/${s.spaceId}`;
const keyId = (s: Scope, action: string | undefined, key: string | undefined): string => `${sk(s)}|${action ?? "?"}|${key ?? "?"}`;
const isExecution = (a: AttemptRecord): boolean => EXECUTED_STATES.includes(a.state);

/** Reads the store (reopened in this process) into a snapshot. */
export async function takeSnapshot(store: Store, target: CrashTarget, keyring: Keyring): Promise<Snapshot> {
  const keys = await target.keys();
  const snap: Snapshot = { scopes: [], attempts: new Map(), consumed: [], idempotency: [], steps: new Map() };
  for (const k of [...keys.decisions, ...keys.idempotency]) {
    if (!CRASH_SCOPES.some((s) => sk(s) === sk(k))) throw new Error(`a record in an unexpected scope ${sk(k)}`);
  }
  // As a restarted process's sequencer would: seal what the killed child committed and left unsealed.
  for (const scope of CRASH_SCOPES) await sealJournalNow(store, scope);
  for (const scope of CRASH_SCOPES) {
    const attempts = await store.transact((tx) => tx.listAttempts(scope));
    for (const a of attempts) snap.attempts.set(a.attemptId, a);
    const journal = await readWholeJournal(store, scope);
    const checkpoints = await store.transact((tx) => tx.listCheckpoints(scope));
    const verification = await verifyJournalIn(store, keyring, scope);
    snap.scopes.push({ scope, attempts, journal, checkpoints, verification });
    const invocations = [...new Set(attempts.flatMap((a) => (a.invocationId ? [a.invocationId] : [])))];
    await store.transact(async (tx) => {
      for (const d of keys.decisions.filter((x) => sk(x) === sk(scope))) {
        const rec = await tx.getConsumedDecision(scope, d.decisionId);
        if (rec) snap.consumed.push(rec);
      }
      for (const i of keys.idempotency.filter((x) => sk(x) === sk(scope))) {
        const rec = await tx.getIdempotency(scope, i.action, i.idempotencyKey);
        if (rec) snap.idempotency.push(rec);
      }
      for (const inv of invocations) snap.steps.set(`${sk(scope)}/${inv}`, await tx.getSteps(scope, inv));
    });
  }
  return snap;
}

export interface CheckInput {
  snap: Snapshot;
  /** The snapshot after the previous kill on the same store, if any. */
  prev: Snapshot | null;
  reports: readonly Report[];
  checkpoints: readonly ReportedCheckpoint[];
  /** Expected answers for keys handed to this child from earlier ones. */
  expectations: ReadonlyMap<string, Expectation>;
  /** Executions the child ran at once: a bound on what can be caught in flight. */
  concurrency: number;
}

/** Per-execution facts the checks derive once. */
interface Index {
  journalById: Map<string, Map<string, JournalEntry>>;
  consumedById: Map<string, ConsumedDecision>;
  idemByKey: Map<string, IdempotencyRecord>;
  /** Executions per (scope, action, key), ascending seq. */
  executionsByKey: Map<string, AttemptRecord[]>;
  /** Executions per invocation, ascending seq. */
  executionsByInvocation: Map<string, AttemptRecord[]>;
}

function index(snap: Snapshot): Index {
  const ix: Index = { journalById: new Map(), consumedById: new Map(), idemByKey: new Map(), executionsByKey: new Map(), executionsByInvocation: new Map() };
  for (const v of snap.scopes) {
    ix.journalById.set(sk(v.scope), new Map(v.journal.map((e) => [e.id, e])));
    for (const a of v.attempts.filter(isExecution)) {
      const k = keyId(v.scope, a.action, a.idempotencyKey);
      ix.executionsByKey.set(k, [...(ix.executionsByKey.get(k) ?? []), a]);
      const inv = `${sk(v.scope)}/${a.invocationId ?? "?"}`;
      ix.executionsByInvocation.set(inv, [...(ix.executionsByInvocation.get(inv) ?? []), a]);
    }
  }
  for (const c of snap.consumed) ix.consumedById.set(`${sk(c)}|${c.decisionId}`, c);
  for (const r of snap.idempotency) ix.idemByKey.set(keyId(r, r.action, r.idempotencyKey), r);
  return ix;
}

/** Returns every violated invariant (empty when the store is exactly as a crash may leave it). */
export function checkCrash(input: CheckInput): string[] {
  const { snap, prev } = input;
  const p: string[] = [];
  const ix = index(snap);
  const journalOf = (s: Scope): Map<string, JournalEntry> => ix.journalById.get(sk(s)) ?? new Map<string, JournalEntry>();

  // (1) Every execution the child reported committed is in the store with the reported outcome:
  //     the attempt record says what execute() returned (state, key, decision, reason, ending
  //     step, original of a duplicate). Its idempotency record agrees with it: checked for every
  //     key in (2c), which covers the reported ones (the latest execution of a key is the one the
  //     record must name).
  for (const r of input.reports) {
    const a = snap.attempts.get(r.attemptId);
    if (!a) {
      p.push(`(1) reported ${r.state} attempt ${r.attemptId} (${r.idempotencyKey}) is missing`);
      continue;
    }
    const same = a.state === r.state && a.idempotencyKey === r.idempotencyKey && (a.decisionId ?? "") === r.decisionId && a.reasonCode === r.reasonCode && a.originalAttemptId === r.originalAttemptId && a.stepIndex === r.stepIndex;
    if (!same) p.push(`(1) attempt ${r.attemptId} reported ${JSON.stringify(r)} but stored ${JSON.stringify({ state: a.state, key: a.idempotencyKey, decisionId: a.decisionId, reasonCode: a.reasonCode, stepIndex: a.stepIndex, originalAttemptId: a.originalAttemptId })}`);
  }
  //     Every signed checkpoint the child reported is stored as signed.
  for (const c of input.checkpoints) {
    const v = snap.scopes.find((x) => sk(x.scope) === sk(c));
    if (!v?.checkpoints.some((x) => x.seq === c.seq && x.headHash === c.headHash)) p.push(`(1) reported checkpoint ${sk(c)}@${c.seq} is missing`);
  }
  //     What earlier kills left stays as it was: a later crash (or the recovery of a reopened
  //     store) loses no attempt and rewrites none; in-flight ones stay EXECUTING (a bare boundary
  //     never guesses an outcome).
  if (prev) {
    for (const [id, before] of prev.attempts) {
      const now = snap.attempts.get(id);
      if (!now) p.push(`(1) attempt ${id} (${before.state}) present after an earlier kill is gone`);
      else if (JSON.stringify(now) !== JSON.stringify(before)) p.push(`(1) attempt ${id} changed after an earlier kill: ${before.state} -> ${now.state}`);
    }
  }
  //     Keys handed over from an earlier child answer from what that child left: in flight (or
  //     handed off) still blocks, an unknown outcome awaits reconciliation, a success answers
  //     DUPLICATE with the original, a failure resumes at the failed step.
  for (const r of input.reports.filter((x) => x.revisit)) {
    const want = input.expectations.get(r.idempotencyKey);
    if (!want) {
      p.push(`(1) revisit of ${r.idempotencyKey} had no expectation`);
      continue;
    }
    if (want.kind === "refused" && !(r.state === "REFUSED" && r.reasonCode === want.code)) p.push(`(1) revisit of ${r.idempotencyKey}: expected REFUSED ${want.code}, got ${r.state} ${r.reasonCode ?? ""}`);
    if (want.kind === "duplicate" && !(r.state === "DUPLICATE" && r.originalAttemptId === want.of)) p.push(`(1) revisit of ${r.idempotencyKey}: expected DUPLICATE of ${want.of}, got ${r.state} ${r.originalAttemptId ?? ""}`);
    if (want.kind === "executes") {
      const a = snap.attempts.get(r.attemptId);
      const consumed = a ? journalOf(a).get(`decision.consumed:${r.decisionId}`) : undefined;
      const from = (consumed?.data as { startStep?: number } | undefined)?.startStep;
      if (!EXECUTED_STATES.includes(r.state) || from !== want.fromStep) p.push(`(1) revisit of ${r.idempotencyKey}: expected an execution from step ${want.fromStep}, got ${r.state} from step ${String(from)}`);
    }
  }

  // (2) Nothing half-written is visible.
  for (const v of snap.scopes) {
    const s = sk(v.scope);
    // (2a) Attempt numbers are 1..n without a gap: a transaction the kill cut short used none.
    v.attempts.forEach((a, i) => {
      if (a.seq !== i + 1) p.push(`(2a) ${s}: attempt #${i + 1} has seq ${a.seq}`);
    });
    const journal = journalOf(v.scope);
    const expectedIds = new Set<string>();
    for (const a of v.attempts) {
      if (a.state === "REFUSED") expectedIds.add(`attempt.refused:${a.attemptId}`);
      if (a.state === "DUPLICATE") {
        expectedIds.add(`attempt.duplicate:${a.attemptId}`);
        const orig = a.originalAttemptId ? snap.attempts.get(a.originalAttemptId) : undefined;
        if (orig?.state !== "SUCCEEDED" || orig.idempotencyKey !== a.idempotencyKey) p.push(`(2e) ${s}: DUPLICATE ${a.attemptId} names ${a.originalAttemptId ?? "nothing"}, not a success of its key`);
      }
      if (!isExecution(a)) continue;
      // (2b) Consumption and execution are one: the decision is consumed by this very attempt.
      const c = ix.consumedById.get(`${s}|${a.decisionId ?? "?"}`);
      if (!c || c.attemptId !== a.attemptId) p.push(`(2b) ${s}: ${a.state} attempt ${a.attemptId} has no consumption of its decision ${a.decisionId ?? "?"} (found ${c?.attemptId ?? "none"})`);
      const consumedEntry = journal.get(`decision.consumed:${a.decisionId ?? "?"}`);
      expectedIds.add(`decision.consumed:${a.decisionId ?? "?"}`);
      if (consumedEntry?.refs.attemptId !== a.attemptId) {
        p.push(`(2f) ${s}: ${a.state} attempt ${a.attemptId} has no decision.consumed entry naming it`);
        continue;
      }
      const startStep = (consumedEntry.data as { startStep: number }).startStep;
      const inv = `${s}/${a.invocationId ?? "?"}`;
      const steps = [...(snap.steps.get(inv) ?? [])].sort((x, y) => x.stepIndex - y.stepIndex);
      const runs = ix.executionsByInvocation.get(inv) ?? [];
      const latest = runs[runs.length - 1]?.attemptId === a.attemptId;
      let endStep: number;
      if (a.state === "EXECUTING") {
        // (2d) An in-flight execution (the kill came between its consumption and its settlement)
        //      is exactly what the consumption transaction wrote, plus whole later step
        //      transactions: its key in_progress under it (2c), one `started` step owned by it at
        //      or after its start step, every step before that one succeeded, nothing after, and
        //      no settlement entry. Nothing may have run after it under the same key.
        if (journal.has(`attempt.settled:${a.attemptId}`)) p.push(`(2d) ${s}: EXECUTING attempt ${a.attemptId} has a settlement entry`);
        if (!latest) p.push(`(2d) ${s}: EXECUTING attempt ${a.attemptId} is not the latest execution of its invocation`);
        const started = steps.filter((x) => x.status === "started");
        const mine = started[0];
        if (started.length !== 1 || !mine || mine.attemptId !== a.attemptId || mine.stepIndex < startStep) {
          p.push(`(2d) ${s}: EXECUTING attempt ${a.attemptId} (from step ${startStep}) should own exactly one started step; steps: ${JSON.stringify(steps.map((x) => [x.stepIndex, x.status, x.attemptId]))}`);
          continue;
        }
        endStep = mine.stepIndex;
        if (steps.some((x) => x.stepIndex < endStep && x.status !== "succeeded") || steps.some((x) => x.stepIndex > endStep)) {
          p.push(`(2d) ${s}: EXECUTING attempt ${a.attemptId}: steps around its started step are wrong: ${JSON.stringify(steps.map((x) => [x.stepIndex, x.status]))}`);
        }
      } else {
        expectedIds.add(`attempt.settled:${a.attemptId}`);
        endStep = a.stepIndex ?? -1;
        // (2e) A settled execution (the latest of its invocation; earlier ones were overwritten
        //      by their retries) left its ending step settled with its outcome, every earlier
        //      step succeeded, no step started and none after.
        if (latest) {
          const end = steps.find((x) => x.stepIndex === endStep);
          const want = STEP_STATUS_OF[a.state];
          if (end === undefined || end.status !== want || end.attemptId !== a.attemptId) p.push(`(2e) ${s}: ${a.state} attempt ${a.attemptId} ended at step ${endStep}, whose checkpoint is ${JSON.stringify(end ? [end.status, end.attemptId] : null)}`);
          if (steps.some((x) => x.stepIndex < endStep && x.status !== "succeeded") || steps.some((x) => x.stepIndex > endStep)) {
            p.push(`(2e) ${s}: ${a.state} attempt ${a.attemptId}: steps are ${JSON.stringify(steps.map((x) => [x.stepIndex, x.status]))}`);
          }
        }
      }
      // Outcome before next step: each step this attempt got past left its step.succeeded entry.
      for (let i = startStep; i < endStep; i++) expectedIds.add(`step.succeeded:${a.invocationId ?? "?"}:${i}:${a.attemptId}`);
    }
    // (2f) The journal holds exactly the entries the attempts imply (none missing, none extra),
    //      and every entry's refs point at records that exist.
    for (const id of expectedIds) if (!journal.has(id)) p.push(`(2f) ${s}: journal lacks ${id}`);
    for (const e of v.journal) {
      if (!expectedIds.has(e.id)) p.push(`(2f) ${s}: journal entry ${e.seq} ${e.id} belongs to no attempt`);
      const att = e.refs.attemptId;
      if (att === undefined || snap.attempts.get(att)?.tenantId !== v.scope.tenantId || snap.attempts.get(att)?.spaceId !== v.scope.spaceId) p.push(`(2f) ${s}: entry ${e.seq} names attempt ${String(att)}, not in this scope`);
      if (e.type === "decision.consumed" && ix.consumedById.get(`${s}|${e.refs.decisionId ?? "?"}`)?.attemptId !== att) p.push(`(2f) ${s}: entry ${e.seq} names decision ${String(e.refs.decisionId)}, not consumed by ${String(att)}`);
      if (e.refs.invocationId !== undefined && (snap.steps.get(`${s}/${e.refs.invocationId}`)?.length ?? 0) === 0) p.push(`(2f) ${s}: entry ${e.seq} names invocation ${e.refs.invocationId}, which has no step checkpoint`);
    }
  }
  // (2b) ...and the other way round: every consumed decision names an execution of that decision.
  for (const c of snap.consumed) {
    const a = snap.attempts.get(c.attemptId);
    if (!a || !isExecution(a) || a.decisionId !== c.decisionId || sk(a) !== sk(c)) p.push(`(2b) ${sk(c)}: consumed decision ${c.decisionId} names attempt ${c.attemptId}, which is ${a ? `${a.state} of ${String(a.decisionId)}` : "missing"}`);
  }
  // (2c) Idempotency records agree with the latest execution of their key (an in-flight one
  //      holds it in_progress); every executed key has one; no record exists without an execution.
  for (const [k, runs] of ix.executionsByKey) {
    const last = runs[runs.length - 1]!;
    const rec = ix.idemByKey.get(k);
    const want = IDEM_STATE_OF[last.state];
    const ok =
      rec !== undefined &&
      rec.attemptId === last.attemptId &&
      rec.state === want &&
      rec.invocationId === last.invocationId &&
      rec.requestDigest === last.requestDigest &&
      (rec.state !== "succeeded" || rec.resultAttemptId === last.attemptId);
    if (!ok) p.push(`(2c) ${k}: latest execution ${last.attemptId} is ${last.state} (wants ${String(want)}) but the idempotency record is ${JSON.stringify(rec ? [rec.state, rec.attemptId, rec.resultAttemptId] : null)}`);
    // Only a definite failure lets a later execution run under the same key.
    for (const earlier of runs.slice(0, -1)) {
      if (earlier.state !== "FAILED") p.push(`(2c) ${k}: ${earlier.state} attempt ${earlier.attemptId} was followed by another execution`);
    }
  }
  for (const [k] of ix.idemByKey) if (!ix.executionsByKey.has(k)) p.push(`(2c) ${k}: idempotency record without any execution`);
  // (2d) At most `concurrency` executions are caught in flight by one kill.
  const newInFlight = [...snap.attempts.values()].filter((a) => a.state === "EXECUTING" && !prev?.attempts.has(a.attemptId)).length;
  if (newInFlight > input.concurrency) p.push(`(2d) ${newInFlight} executions in flight at the kill, more than the child's ${input.concurrency}`);

  // (3) The journal of every scope verifies: chain, hashes and the signed checkpoints.
  for (const v of snap.scopes) {
    if (!v.verification.ok) p.push(`(3) ${sk(v.scope)}: journal does not verify: ${JSON.stringify(v.verification.problems.slice(0, 5))}`);
  }
  return p;
}

/**
 * Keys a next child re-executes, with what each must answer: every key left in flight, some of
 * every settled outcome, and two keys never used.
 */
export function planRevisits(snap: Snapshot, rand: () => number, run: number): Map<string, Expectation> {
  const ix = index(snap);
  const byState = new Map<string, AttemptRecord[]>();
  for (const runs of ix.executionsByKey.values()) {
    const last = runs[runs.length - 1]!;
    byState.set(last.state, [...(byState.get(last.state) ?? []), last]);
  }
  const pick = <T>(xs: T[], n: number): T[] => {
    const out = [...xs];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out.slice(0, n);
  };
  const plan = new Map<string, Expectation>();
  for (const [state, lasts] of byState) {
    for (const a of pick(lasts, state === "EXECUTING" ? 16 : 5)) {
      const key = a.idempotencyKey!;
      if (state === "EXECUTING" || state === "HANDED_OFF") plan.set(key, { kind: "refused", code: "EXECUTION_IN_PROGRESS" });
      else if (state === "UNKNOWN" || state === "TIMED_OUT") plan.set(key, { kind: "refused", code: "RECONCILIATION_PENDING" });
      else if (state === "SUCCEEDED") plan.set(key, { kind: "duplicate", of: a.attemptId });
      else if (state === "FAILED") plan.set(key, { kind: "executes", fromStep: a.stepIndex ?? 0 });
    }
  }
  plan.set(`r${run}-c0-n999000-2ok`, { kind: "executes", fromStep: 0 });
  plan.set(`r${run}-c1-n999001-1flaky`, { kind: "executes", fromStep: 0 });
  return plan;
}
