/**
 * Retention (docs/retention.md): ended invocations oldest first across scopes (a partial index of
 * ended rows, migration 14), the journal's hold on them (entries unsealed or sealed above the
 * archive watermark, read from the chain by seq and the pending queue), whole-invocation deletes
 * (children first, the locked row last, in the caller's short transaction) and age-only deletes.
 */
import { WritError } from "../../core/errors.js";
import type { AgedRecordKind, EndedCursor, PrunedInvocationRows } from "../../core/store.js";
import { TERMINAL_INVOCATION_STATUSES, type Invocation, type Scope } from "../../core/types.js";
import { statement, type Exec, type Statement } from "./postgres-exec.js";
import { INVOCATION_READ, invocationFromRow, type InvocationRow } from "./postgres-rows.js";

const ENDED = `status IN (${TERMINAL_INVOCATION_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const LIST_ENDED = statement(
  "list_ended_invocations",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE ${ENDED} AND updated_at < $1
      AND ($3::bigint IS NULL OR (updated_at, tenant_id, space_id, invocation_id) > ($3::bigint, $4::text, $5::text, $6::text))
    ORDER BY updated_at, tenant_id, space_id, invocation_id LIMIT $2`,
);
const NAMES_ABOVE = statement(
  "journal_names_above",
  `SELECT DISTINCT x.inv FROM (
     SELECT j.doc->'refs'->>'invocationId' AS inv FROM writ_journal_chain c
       JOIN writ_journal j ON j.tenant_id = c.tenant_id AND j.space_id = c.space_id AND j.id = c.id
      WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq > $3
     UNION ALL
     SELECT j.doc->'refs'->>'invocationId' FROM writ_journal_pending p
       JOIN writ_journal j ON j.tenant_id = p.tenant_id AND j.space_id = p.space_id AND j.id = p.id
      WHERE p.tenant_id = $1 AND p.space_id = $2
   ) x WHERE x.inv = ANY($4::text[])`,
);
const LOCK_FOR_DELETE = statement(
  "invocation_for_delete",
  `SELECT ${INVOCATION_READ} FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 FOR UPDATE`,
);
const DELETE_STEPS = statement(
  "prune_steps",
  "DELETE FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 RETURNING connector, external_ref",
);
const DELETE_COMPLETIONS = statement(
  "prune_completions",
  `DELETE FROM writ_completions c USING unnest($4::text[], $5::text[]) AS r(connector, external_ref)
    WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.connector = r.connector AND c.external_ref = r.external_ref AND c.doc->>'invocationId' = $3`,
);
const DELETE_ATTEMPTS = statement(
  "prune_attempts",
  "DELETE FROM writ_attempts WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3 RETURNING attempt_id, doc->>'decisionId' AS decision_id",
);
const DELETE_DECISIONS = statement(
  "prune_decisions",
  `DELETE FROM writ_consumed_decisions d USING unnest($3::text[], $4::text[]) AS a(decision_id, attempt_id)
    WHERE d.tenant_id = $1 AND d.space_id = $2 AND d.decision_id = a.decision_id AND d.attempt_id = a.attempt_id`,
);
const DELETE_IDEMPOTENCY = statement(
  "prune_idempotency",
  "DELETE FROM writ_idempotency WHERE tenant_id = $1 AND space_id = $2 AND action = $4 AND idempotency_key = $5 AND doc->>'invocationId' = $3",
);
const DELETE_RECONCILIATIONS = statement("prune_reconciliations", "DELETE FROM writ_reconciliations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3");
const DELETE_APPROVAL = statement("prune_approval", "DELETE FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $3");
const DELETE_INVOCATION = statement("prune_invocation", "DELETE FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3");

const DONE_DELIVERY = "status <> 'pending' AND (doc->>'updatedAt')::bigint < $1";
const EXPIRED_COMPLETION = "doc->>'disposition' = 'expired' AND coalesce((doc->>'expiredAt')::bigint, received_at) < $1";
const AGED: Record<AgedRecordKind, { del: Statement; count: Statement }> = {
  notify_deliveries: {
    del: statement(
      "prune_notify_deliveries",
      `DELETE FROM writ_notify_deliveries WHERE seq IN (SELECT seq FROM writ_notify_deliveries WHERE ${DONE_DELIVERY} ORDER BY (doc->>'updatedAt')::bigint LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_notify_deliveries_done", `SELECT count(*) AS n FROM writ_notify_deliveries WHERE ${DONE_DELIVERY}`),
  },
  expired_completions: {
    del: statement(
      "prune_expired_completions",
      `DELETE FROM writ_completions WHERE id IN (SELECT id FROM writ_completions WHERE ${EXPIRED_COMPLETION} ORDER BY (doc->>'expiredAt')::bigint LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_expired_completions", `SELECT count(*) AS n FROM writ_completions WHERE ${EXPIRED_COMPLETION}`),
  },
  webhook_deliveries: {
    del: statement(
      "prune_webhook_deliveries",
      `DELETE FROM writ_deliveries WHERE ctid IN (SELECT ctid FROM writ_deliveries WHERE received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_webhook_deliveries", "SELECT count(*) AS n FROM writ_deliveries WHERE received_at < $1"),
  },
};

export async function listEndedInvocations(x: Exec, opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<Invocation[]> {
  const a = opts.after;
  const rows = await x.rows<InvocationRow>(LIST_ENDED, [opts.endedBefore, opts.limit, a?.updatedAt ?? null, a?.tenantId ?? null, a?.spaceId ?? null, a?.invocationId ?? null]);
  return rows.map(invocationFromRow);
}

export async function journalNamesAbove(x: Exec, scope: Scope, aboveSeq: number, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await x.rows<{ inv: string }>(NAMES_ABOVE, [scope.tenantId, scope.spaceId, aboveSeq, ids]);
  return new Set(rows.map((r) => r.inv));
}

export async function deleteInvocation(x: Exec, scope: Scope, invocationId: string): Promise<PrunedInvocationRows> {
  const n: PrunedInvocationRows = { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 };
  const p = [scope.tenantId, scope.spaceId, invocationId];
  const [row] = await x.rows<InvocationRow>(LOCK_FOR_DELETE, p);
  if (row === undefined) return n;
  const inv = invocationFromRow(row);
  if (!TERMINAL_INVOCATION_STATUSES.includes(inv.status)) throw new WritError("CONFLICT", `invocation ${invocationId} is ${inv.status}, not ended: retention never deletes it`);
  const steps = await x.rows<{ connector: string | null; external_ref: string | null }>(DELETE_STEPS, p);
  n.steps = steps.length;
  const refs = steps.filter((s) => s.connector !== null && s.external_ref !== null);
  if (refs.length > 0) n.completions = await x.count(DELETE_COMPLETIONS, [...p, refs.map((r) => r.connector), refs.map((r) => r.external_ref)]);
  const attempts = await x.rows<{ attempt_id: string; decision_id: string | null }>(DELETE_ATTEMPTS, p);
  n.attempts = attempts.length;
  const decided = attempts.filter((a) => a.decision_id !== null);
  if (decided.length > 0) n.decisions = await x.count(DELETE_DECISIONS, [scope.tenantId, scope.spaceId, decided.map((a) => a.decision_id), decided.map((a) => a.attempt_id)]);
  n.idempotency = await x.count(DELETE_IDEMPOTENCY, [...p, inv.action, inv.idempotencyKey]);
  n.reconciliations = await x.count(DELETE_RECONCILIATIONS, p);
  if (inv.approvalId !== undefined) n.approvals = await x.count(DELETE_APPROVAL, [scope.tenantId, scope.spaceId, inv.approvalId]);
  n.invocations = await x.count(DELETE_INVOCATION, p);
  return n;
}

export async function deleteAgedRecords(x: Exec, kind: AgedRecordKind, before: number, limit: number): Promise<number> {
  return x.count(AGED[kind].del, [before, limit]);
}

export async function countAgedRecords(x: Exec, kind: AgedRecordKind, before: number): Promise<number> {
  const [row] = await x.rows<{ n: string }>(AGED[kind].count, [before]);
  return Number(row?.n ?? 0);
}
