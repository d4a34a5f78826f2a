/**
 * Execution statements: consumed decisions, idempotency records, attempts and step checkpoints
 * (the step upsert is monotonic in SQL). The attempt list varies with its filters: {@link attemptListSql}.
 */
import type Database from "better-sqlite3";
import { HOLDS_LEASE, SCOPE, type Prepare } from "./sqlite-sql.js";

/**
 * A settled step (`succeeded`, `failed`, `unknown`) never returns to `started`, except a `failed`
 * one restarted by a new attempt (another attemptId: a retry under a new decision).
 */
const STEP_MONOTONIC =
  "NOT (excluded.status = 'started' AND (steps.status IN ('succeeded', 'unknown') OR (steps.status = 'failed' AND steps.attempt_id = excluded.attempt_id)))";
const STEP_UPSERT =
  "ON CONFLICT (tenant_id, space_id, invocation_id, step_index) DO UPDATE SET status = excluded.status, attempt_id = excluded.attempt_id, doc = excluded.doc " +
  `WHERE ${STEP_MONOTONIC}`;

/** The execution statements, by name. */
export interface SqliteExecutionStatements {
  consumeDecision: Database.Statement;
  getConsumedDecision: Database.Statement;
  getIdempotency: Database.Statement;
  listUnknownKeys: Database.Statement;
  putIdempotency: Database.Statement;
  insertAttempt: Database.Statement;
  updateAttempt: Database.Statement;
  getAttempt: Database.Statement;
  getSteps: Database.Statement;
  putStep: Database.Statement;
  putStepFenced: Database.Statement;
  findStepByExternalRef: Database.Statement;
}

/** Prepares the execution statements; the schema must be migrated first. */
export function prepareExecutionStatements(p: Prepare): SqliteExecutionStatements {
  return {
    consumeDecision: p(
      "INSERT INTO consumed_decisions (tenant_id, space_id, decision_id, attempt_id, consumed_at, doc) VALUES (@t, @s, @id, @attemptId, @consumedAt, @doc) " +
        "ON CONFLICT (tenant_id, space_id, decision_id) DO NOTHING",
    ),
    getConsumedDecision: p(`SELECT doc FROM consumed_decisions WHERE ${SCOPE} AND decision_id = @id`).pluck(),
    getIdempotency: p(`SELECT doc FROM idempotency WHERE ${SCOPE} AND action = @action AND idempotency_key = @key`).pluck(),
    // Through the partial index idempotency_unknown; the invocation check is one primary-key probe each.
    listUnknownKeys: p(
      `SELECT doc FROM idempotency k WHERE k.tenant_id = @t AND k.space_id = @s AND k.state = 'unknown' ` +
        "AND NOT EXISTS (SELECT 1 FROM invocations i WHERE i.tenant_id = k.tenant_id AND i.space_id = k.space_id AND i.invocation_id = json_extract(k.doc, '$.invocationId')) " +
        "ORDER BY json_extract(k.doc, '$.updatedAt'), k.action, k.idempotency_key LIMIT @limit",
    ).pluck(),
    putIdempotency: p(
      "INSERT INTO idempotency (tenant_id, space_id, action, idempotency_key, state, doc) VALUES (@t, @s, @action, @key, @state, @doc) " +
        "ON CONFLICT (tenant_id, space_id, action, idempotency_key) DO UPDATE SET state = excluded.state, doc = excluded.doc",
    ),
    insertAttempt: p(
      "INSERT INTO attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc) " +
        `VALUES (@t, @s, @id, (SELECT COALESCE(MAX(seq), 0) + 1 FROM attempts WHERE ${SCOPE}), @invocationId, @state, @doc) RETURNING seq`,
    ).pluck(),
    updateAttempt: p(`UPDATE attempts SET invocation_id = @invocationId, state = @state, doc = @doc WHERE ${SCOPE} AND attempt_id = @id`),
    getAttempt: p(`SELECT seq, doc FROM attempts WHERE ${SCOPE} AND attempt_id = @id`),
    getSteps: p(`SELECT doc FROM steps WHERE ${SCOPE} AND invocation_id = @invocationId ORDER BY step_index`).pluck(),
    putStep: p(
      "INSERT INTO steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, doc) " +
        "VALUES (@t, @s, @invocationId, @stepIndex, @status, @attemptId, @doc) " +
        STEP_UPSERT,
    ),
    putStepFenced: p(
      "INSERT INTO steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, doc) " +
        "SELECT @t, @s, @invocationId, @stepIndex, @status, @attemptId, @doc " +
        `WHERE EXISTS (SELECT 1 FROM invocations WHERE ${SCOPE} AND invocation_id = @invocationId AND ${HOLDS_LEASE}) ` +
        STEP_UPSERT,
    ),
    findStepByExternalRef: p(
      `SELECT doc FROM steps WHERE ${SCOPE} AND json_extract(doc, '$.connector') = @connector AND json_extract(doc, '$.externalRef') = @ref LIMIT 1`,
    ).pluck(),
  };
}

/** The SQL of `ListStatements.attempts`: in scope order (seq). */
export function attemptListSql(invocation: boolean): string {
  const where = `${SCOPE} AND seq > @afterSeq` + (invocation ? " AND invocation_id = @invocationId" : "");
  return `SELECT seq, doc FROM attempts WHERE ${where} ORDER BY seq LIMIT @limit`;
}
