/**
 * Step checkpoint statements. Monotonicity is enforced in SQL, by the upsert's `WHERE`: a settled
 * step never returns to `started`, except a `failed` one restarted by a new attempt (a retry
 * under a new decision).
 */
import { LeaseLostError, WritError } from "../../core/errors.js";
import type { Fence, Scope, StepCheckpoint } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, type DocRow } from "./postgres-rows.js";

const MONOTONIC =
  "NOT (excluded.status = 'started' AND (writ_steps.status IN ('succeeded', 'unknown') " +
  "OR (writ_steps.status = 'failed' AND writ_steps.attempt_id = excluded.attempt_id)))";
const UPSERT_TAIL =
  "ON CONFLICT (tenant_id, space_id, invocation_id, step_index) DO UPDATE SET status = excluded.status, attempt_id = excluded.attempt_id, " +
  `connector = excluded.connector, external_ref = excluded.external_ref, doc = excluded.doc WHERE ${MONOTONIC}`;

const COLUMNS = "tenant_id, space_id, invocation_id, step_index, status, attempt_id, connector, external_ref, doc";
const GET = statement("get_steps", "SELECT doc FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 ORDER BY step_index");
const PUT = statement(
  "put_step",
  `INSERT INTO writ_steps (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ${UPSERT_TAIL}`,
);
/**
 * Fenced upsert, one statement: the lease row is locked (FOR UPDATE) and checked, and the step
 * written only if it held. `leased` and `written` tell a lost lease from a refused transition.
 */
const PUT_FENCED = statement(
  "put_step_fenced",
  `WITH lease AS (
     SELECT 1 FROM writ_invocations
      WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 AND status = 'running' AND lease_owner = $10 AND lease_token = $11
      FOR UPDATE
   ), written AS (
     INSERT INTO writ_steps (${COLUMNS})
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 FROM lease ${UPSERT_TAIL}
     RETURNING 1
   )
   SELECT (SELECT count(*) FROM lease)::int AS leased, (SELECT count(*) FROM written)::int AS written`,
);

const BY_REF = statement(
  "find_step_by_external_ref",
  "SELECT doc FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND external_ref = $4 ORDER BY invocation_id, step_index LIMIT 1",
);

function conflict(step: StepCheckpoint): WritError {
  return new WritError("CONFLICT", `step ${step.stepIndex} of invocation ${step.invocationId} is settled and cannot return to started in this attempt`);
}

function params(scope: Scope, step: StepCheckpoint): unknown[] {
  return [scope.tenantId, scope.spaceId, step.invocationId, step.stepIndex, step.status, step.attemptId, step.connector ?? null, step.externalRef ?? null, docOf(step)];
}

export async function getSteps(x: Exec, scope: Scope, invocationId: string): Promise<StepCheckpoint[]> {
  return (await x.rows<DocRow<StepCheckpoint>>(GET, [scope.tenantId, scope.spaceId, invocationId])).map((r) => r.doc);
}

/** Upserts; CONFLICT (nothing written) for a settled step going back to started (see above). */
export async function putStep(x: Exec, scope: Scope, step: StepCheckpoint): Promise<void> {
  if ((await x.count(PUT, params(scope, step))) === 0) throw conflict(step);
}

/** Fenced upsert; LeaseLostError unless the lease holds, CONFLICT as {@link putStep}. */
export async function putStepFenced(x: Exec, scope: Scope, step: StepCheckpoint, fence: Fence): Promise<void> {
  const [row] = await x.rows<{ leased: number; written: number }>(PUT_FENCED, [...params(scope, step), fence.owner, fence.token]);
  if (row === undefined || row.leased === 0) throw new LeaseLostError(`lease lost on invocation ${fence.invocationId}`);
  if (row.written === 0) throw conflict(step);
}

/** The step that handed off to (connector, externalRef) in this scope, whatever its status now. */
export async function findStepByExternalRef(x: Exec, scope: Scope, connector: string, externalRef: string): Promise<StepCheckpoint | null> {
  const [row] = await x.rows<DocRow<StepCheckpoint>>(BY_REF, [scope.tenantId, scope.spaceId, connector, externalRef]);
  return row?.doc ?? null;
}
