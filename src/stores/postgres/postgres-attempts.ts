/**
 * Attempt statements. Each scope numbers its attempts 1, 2, 3, … without gaps: the per-scope
 * counter row in `writ_attempt_seqs` is bumped in the same statement as the insert, and its row
 * lock orders concurrent inserts of one scope until their transactions end (a rollback returns
 * the number). `id` (bigserial) gives one global order across scopes.
 */
import { WritError } from "../../core/errors.js";
import type { ListOptions } from "../../core/store.js";
import type { AttemptRecord, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { attemptFromRow, docOf, limitParam, type AttemptRow } from "./postgres-rows.js";

/** Writes nothing, and takes no number, when the attempt id exists. */
const INSERT = statement(
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
const UPDATE = statement(
  "update_attempt",
  "UPDATE writ_attempts SET invocation_id = $4, state = $5, doc = $6 WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3",
);
const GET = statement("get_attempt", "SELECT seq, doc FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND attempt_id = $3");
const LIST = statement(
  "list_attempts",
  "SELECT seq, doc FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND ($3::text IS NULL OR invocation_id = $3) AND seq > $4 " +
    "ORDER BY seq LIMIT $5",
);

function params(scope: Scope, rec: AttemptRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, rec.attemptId, rec.invocationId ?? null, rec.state, docOf(rec)];
}

/** Inserts and returns the scope's next seq; CONFLICT (nothing written) for an existing id. */
export async function insertAttempt(x: Exec, scope: Scope, rec: AttemptRecord): Promise<number> {
  const [row] = await x.rows<{ seq: string }>(INSERT, params(scope, rec));
  if (row === undefined) throw new WritError("CONFLICT", `attempt ${rec.attemptId} already exists`);
  return Number(row.seq);
}

/** Replaces an attempt, keeping its seq; NOT_FOUND when the scope holds no such attempt. */
export async function updateAttempt(x: Exec, scope: Scope, rec: AttemptRecord): Promise<void> {
  if ((await x.count(UPDATE, params(scope, rec))) === 0) throw new WritError("NOT_FOUND", `no attempt ${rec.attemptId} in this scope`);
}

export async function getAttempt(x: Exec, scope: Scope, attemptId: string): Promise<AttemptRecord | null> {
  const [row] = await x.rows<AttemptRow>(GET, [scope.tenantId, scope.spaceId, attemptId]);
  return row === undefined ? null : attemptFromRow(row);
}

export async function listAttempts(x: Exec, scope: Scope, opts: ListOptions & { invocationId?: string; afterSeq?: number } = {}): Promise<AttemptRecord[]> {
  const after = opts.afterSeq ?? 0;
  if (typeof after !== "number" || !Number.isFinite(after)) throw new WritError("INVALID_ARGUMENT", "afterSeq must be a number");
  const rows = await x.rows<AttemptRow>(LIST, [scope.tenantId, scope.spaceId, opts.invocationId ?? null, Math.floor(after), limitParam(opts.limit)]);
  return rows.map(attemptFromRow);
}
