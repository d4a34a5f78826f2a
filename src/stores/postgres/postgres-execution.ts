/**
 * Execution statements: consumed decisions, idempotency records, attempts and step checkpoints.
 *
 * The boundary's records: consumed decisions (unique per scope and decision id) and idempotency
 * records (one per scope, action and key).
 *
 * Attempts: each scope numbers its attempts 1, 2, 3, … without gaps: the per-scope
 * counter row in `writ_attempt_seqs` is bumped in the same statement as the insert, and its row
 * lock orders concurrent inserts of one scope until their transactions end (a rollback returns
 * the number). `id` (bigserial) gives one global order across scopes.
 *
 * Step checkpoints: monotonicity is enforced in SQL, by the upsert's `WHERE`: a settled
 * step never returns to `started`, except a `failed` one restarted by a new attempt (a retry
 * under a new decision).
 */
import { LeaseLostError, WritError } from "../../core/errors.js";
import type { ListOptions } from "../../core/store.js";
import type { AttemptRecord, ConsumedDecision, Fence, IdempotencyRecord, Scope, StepCheckpoint } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { attemptFromRow, docOf, limitParam, type AttemptRow, type DocRow } from "./postgres-rows.js";

/** The unique key decides: the first consumption inserts, a repeat inserts nothing. */
const CONSUME = statement(
  "consume_decision",
  "INSERT INTO writ_consumed_decisions (tenant_id, space_id, decision_id, attempt_id, consumed_at, doc) VALUES ($1, $2, $3, $4, $5, $6) " +
    "ON CONFLICT (tenant_id, space_id, decision_id) DO NOTHING RETURNING 1",
);
const GET_CONSUMED = statement("get_consumed_decision", "SELECT doc FROM writ_consumed_decisions WHERE tenant_id = $1 AND space_id = $2 AND decision_id = $3");
const GET_IDEMPOTENCY = statement(
  "get_idempotency",
  "SELECT doc FROM writ_idempotency WHERE tenant_id = $1 AND space_id = $2 AND action = $3 AND idempotency_key = $4",
);
const LIST_UNKNOWN_KEYS = statement(
  "list_unknown_keys",
  "SELECT k.doc FROM writ_idempotency k WHERE k.tenant_id = $1 AND k.space_id = $2 AND k.state = 'unknown' " +
    "AND NOT EXISTS (SELECT 1 FROM writ_invocations i WHERE i.tenant_id = k.tenant_id AND i.space_id = k.space_id AND i.invocation_id = k.doc->>'invocationId') " +
    "ORDER BY (k.doc->>'updatedAt')::bigint, k.action, k.idempotency_key LIMIT $3",
);
const PUT_IDEMPOTENCY = statement(
  "put_idempotency",
  "INSERT INTO writ_idempotency (tenant_id, space_id, action, idempotency_key, state, doc) VALUES ($1, $2, $3, $4, $5, $6) " +
    "ON CONFLICT (tenant_id, space_id, action, idempotency_key) DO UPDATE SET state = excluded.state, doc = excluded.doc",
);

/** True if this call consumed the decision; false (nothing written) if it was consumed before. */
export async function consumeDecision(x: Exec, scope: Scope, rec: ConsumedDecision): Promise<boolean> {
  const n = await x.count(CONSUME, [scope.tenantId, scope.spaceId, rec.decisionId, rec.attemptId, rec.consumedAt, docOf(rec)]);
  return n === 1;
}

export async function getConsumedDecision(x: Exec, scope: Scope, decisionId: string): Promise<ConsumedDecision | null> {
  const [row] = await x.rows<DocRow<ConsumedDecision>>(GET_CONSUMED, [scope.tenantId, scope.spaceId, decisionId]);
  return row?.doc ?? null;
}

export async function getIdempotency(x: Exec, scope: Scope, action: string, idempotencyKey: string): Promise<IdempotencyRecord | null> {
  const [row] = await x.rows<DocRow<IdempotencyRecord>>(GET_IDEMPOTENCY, [scope.tenantId, scope.spaceId, action, idempotencyKey]);
  return row?.doc ?? null;
}

/** Unknown keys no invocation holds, oldest first (through the partial index writ_idempotency_unknown). */
export async function listUnknownKeys(x: Exec, scope: Scope, limit: number | undefined): Promise<IdempotencyRecord[]> {
  return (await x.rows<DocRow<IdempotencyRecord>>(LIST_UNKNOWN_KEYS, [scope.tenantId, scope.spaceId, limitParam(limit)])).map((r) => r.doc);
}

export async function putIdempotency(x: Exec, scope: Scope, rec: IdempotencyRecord): Promise<void> {
  await x.count(PUT_IDEMPOTENCY, [scope.tenantId, scope.spaceId, rec.action, rec.idempotencyKey, rec.state, docOf(rec)]);
}

/** Writes nothing, and takes no number, when the attempt id exists. */
const INSERT_ATTEMPT = statement(
  "insert_attempt",
  `WITH next AS (
     INSERT INTO writ_attempt_seqs AS c (tenant_id, space_id, last_seq)
     SELECT $1, $2, 1
      WHERE NOT EXISTS (SELECT 1 FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3)
     ON CONFLICT (tenant_id, space_id) DO UPDATE SET last_seq = c.last_seq + 1
     RETURNING last_seq
   )
   INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc)
   SELECT $1, $2, $3, next.last_seq, $4, $5, $6 FROM next
   RETURNING seq`,
);
const UPDATE_ATTEMPT = statement(
  "update_attempt",
  "UPDATE writ_attempts SET invocation_id = $4, state = $5, doc = $6 WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3",
);
export const GET_ATTEMPT = statement("get_attempt", "SELECT seq, doc FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3");
const LIST_ATTEMPTS = statement(
  "list_attempts",
  "SELECT seq, doc FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND ($3::text IS NULL OR invocation_id = $3) AND seq > $4 " +
    "ORDER BY seq LIMIT $5",
);

function attemptParams(scope: Scope, rec: AttemptRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, rec.attemptId, rec.invocationId ?? null, rec.state, docOf(rec)];
}

/** Inserts and returns the scope's next seq; CONFLICT (nothing written) for an existing id. */
export async function insertAttempt(x: Exec, scope: Scope, rec: AttemptRecord): Promise<number> {
  const [row] = await x.rows<{ seq: string }>(INSERT_ATTEMPT, attemptParams(scope, rec));
  if (row === undefined) throw new WritError("CONFLICT", `attempt ${rec.attemptId} already exists`);
  return Number(row.seq);
}

/** Replaces an attempt, keeping its seq; NOT_FOUND when the scope holds no such attempt. */
export async function updateAttempt(x: Exec, scope: Scope, rec: AttemptRecord): Promise<void> {
  if ((await x.count(UPDATE_ATTEMPT, attemptParams(scope, rec))) === 0) throw new WritError("NOT_FOUND", `no attempt ${rec.attemptId} in this scope`);
}

export async function getAttempt(x: Exec, scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
  const [row] = await x.rows<AttemptRow>(GET_ATTEMPT, [scope.tenantId, scope.spaceId, attemptId]);
  return row === undefined ? null : attemptFromRow(row);
}

export async function listAttempts(x: Exec, scope: Scope, opts: ListOptions & { invocationId?: string; afterSeq?: number } = {}): Promise<AttemptRecord[]> {
  const after = opts.afterSeq ?? 0;
  if (typeof after !== "number" || !Number.isFinite(after)) throw new WritError("INVALID_ARGUMENT", "afterSeq must be a number");
  const rows = await x.rows<AttemptRow>(LIST_ATTEMPTS, [scope.tenantId, scope.spaceId, opts.invocationId ?? null, Math.floor(after), limitParam(opts.limit)]);
  return rows.map(attemptFromRow);
}

const STEP_MONOTONIC =
  "NOT (excluded.status = 'started' AND (writ_steps.status IN ('succeeded', 'unknown') " +
  "OR (writ_steps.status = 'failed' AND writ_steps.attempt_id = excluded.attempt_id)))";
const STEP_UPSERT_TAIL =
  "ON CONFLICT (tenant_id, space_id, invocation_id, step_index) DO UPDATE SET status = excluded.status, attempt_id = excluded.attempt_id, " +
  `connector = excluded.connector, external_ref = excluded.external_ref, doc = excluded.doc WHERE ${STEP_MONOTONIC}`;

const STEP_COLUMNS = "tenant_id, space_id, invocation_id, step_index, status, attempt_id, connector, external_ref, doc";
export const GET_STEPS = statement("get_steps", "SELECT doc FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 ORDER BY step_index");
const PUT_STEP = statement(
  "put_step",
  `INSERT INTO writ_steps (${STEP_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ${STEP_UPSERT_TAIL}`,
);
/**
 * Fenced upsert, one statement: the lease row is locked (FOR UPDATE) and checked, and the step
 * written only if it held. `leased` and `written` tell a lost lease from a refused transition.
 */
const PUT_STEP_FENCED = statement(
  "put_step_fenced",
  `WITH lease AS (
     SELECT 1 FROM writ_invocations
      WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 AND status = 'running' AND lease_owner = $10 AND lease_token = $11
      FOR UPDATE
   ), written AS (
     INSERT INTO writ_steps (${STEP_COLUMNS})
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM lease ${STEP_UPSERT_TAIL}
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM lease)::int AS leased, (SELECT count(*) FROM written)::int AS written`,
);

const STEP_BY_REF = statement(
  "find_step_by_external_ref",
  "SELECT doc FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND external_ref = $4 ORDER BY invocation_id, step_index LIMIT 1",
);

function stepConflict(step: StepCheckpoint): WritError {
  return new WritError("CONFLICT", `step ${step.stepIndex} of invocation ${step.invocationId} is settled and cannot return to started in this attempt`);
}

function stepParams(scope: Scope, step: StepCheckpoint): unknown[] {
  return [scope.tenantId, scope.spaceId, step.invocationId, step.stepIndex, step.status, step.attemptId, step.connector ?? null, step.externalRef ?? null, docOf(step)];
}

export async function getSteps(x: Exec, scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
  return (await x.rows<DocRow<StepCheckpoint>>(GET_STEPS, [scope.tenantId, scope.spaceId, invocationId])).map((r) => r.doc);
}

/** Upserts; CONFLICT (nothing written) for a settled step going back to started (see above). */
export async function putStep(x: Exec, scope: Scope, step: StepCheckpoint): Promise<void> {
  if ((await x.count(PUT_STEP, stepParams(scope, step))) === 0) throw stepConflict(step);
}

/** Fenced upsert; LeaseLostError unless the lease holds, CONFLICT as {@link putStep}. */
export async function putStepFenced(x: Exec, scope: Scope, step: StepCheckpoint, fence: Fence): Promise<void> {
  const [row] = await x.rows<{ leased: number; written: number }>(PUT_STEP_FENCED, [...stepParams(scope, step), fence.owner, fence.token]);
  if (row === undefined || row.leased === 0) throw new LeaseLostError(`lease lost on invocation ${fence.invocationId}`);
  if (row.written === 0) throw stepConflict(step);
}

/** The step that handed off to (connector, externalRef) in this scope, whatever its status now. */
export async function findStepByExternalRef(x: Exec, scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
  const [row] = await x.rows<DocRow<StepCheckpoint>>(STEP_BY_REF, [scope.tenantId, scope.spaceId, connector, externalRef]);
  return row?.doc ?? null;
}
