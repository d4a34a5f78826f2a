/**
 * The boundary's records: consumed decisions (unique per scope and decision id) and idempotency
 * records (one per scope, action and key).
 */
import type { ConsumedDecision, IdempotencyRecord, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, type DocRow } from "./postgres-rows.js";

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

export async function putIdempotency(x: Exec, scope: Scope, rec: IdempotencyRecord): Promise<void> {
  await x.count(PUT_IDEMPOTENCY, [scope.tenantId, scope.spaceId, rec.action, rec.idempotencyKey, rec.state, docOf(rec)]);
}
