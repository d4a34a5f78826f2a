/**
 * Retention (docs/retention.md): ended invocations oldest first across scopes (an expression index
 * on the document's updatedAt, migration 10), the journal's hold on them, whole-invocation deletes
 * (children first, the row last, in the caller's transaction) and the age-only deletes.
 */
import type Database from "better-sqlite3";
import { WritError } from "../../core/errors.js";
import type { AgedRecordKind, EndedCursor, PrunedInvocationRows } from "../../core/store.js";
import { TERMINAL_INVOCATION_STATUSES, type AttemptRecord, type Invocation } from "../../core/types.js";
import { SCOPE, type Prepare } from "./sqlite-sql.js";

/** The retention statements, by name. */
export interface SqliteRetentionStatements {
  listEnded: Database.Statement;
  listEndedAfter: Database.Statement;
  journalNamesAbove: Database.Statement;
  invocationForDelete: Database.Statement;
  deleteSteps: Database.Statement;
  deleteCompletionsOf: Database.Statement;
  deleteAttempts: Database.Statement;
  deleteDecision: Database.Statement;
  deleteIdempotencyOf: Database.Statement;
  deleteReconciliations: Database.Statement;
  deleteApproval: Database.Statement;
  deleteInvocationRow: Database.Statement;
  aged: Record<AgedRecordKind, { del: Database.Statement; count: Database.Statement }>;
}

const ENDED = `status IN (${TERMINAL_INVOCATION_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const UPDATED = "json_extract(doc, '$.updatedAt')";
const ENDED_ORDER = `ORDER BY ${UPDATED}, tenant_id, space_id, invocation_id LIMIT @limit`;
const DONE_DELIVERY = "status <> 'pending' AND json_extract(doc, '$.updatedAt') < @before";
const EXPIRED_COMPLETION = "json_extract(doc, '$.disposition') = 'expired' AND coalesce(json_extract(doc, '$.expiredAt'), received_at) < @before";

export function prepareRetentionStatements(p: Prepare): SqliteRetentionStatements {
  return {
    listEnded: p(`SELECT doc FROM invocations WHERE ${ENDED} AND ${UPDATED} < @before ${ENDED_ORDER}`).pluck(),
    listEndedAfter: p(
      `SELECT doc FROM invocations WHERE ${ENDED} AND ${UPDATED} < @before AND (${UPDATED}, tenant_id, space_id, invocation_id) > (@at, @at_t, @at_s, @at_id) ${ENDED_ORDER}`,
    ).pluck(),
    journalNamesAbove: p(
      `SELECT DISTINCT json_extract(doc, '$.refs.invocationId') FROM journal WHERE ${SCOPE} AND (seq IS NULL OR seq > @above) ` +
        "AND json_extract(doc, '$.refs.invocationId') IN (SELECT value FROM json_each(@ids))",
    ).pluck(),
    invocationForDelete: p(`SELECT status, doc FROM invocations WHERE ${SCOPE} AND invocation_id = @id`),
    deleteSteps: p(`DELETE FROM steps WHERE ${SCOPE} AND invocation_id = @id RETURNING json_extract(doc, '$.connector') AS connector, json_extract(doc, '$.externalRef') AS ref`),
    deleteCompletionsOf: p(`DELETE FROM completions WHERE ${SCOPE} AND connector = @connector AND external_ref = @ref AND json_extract(doc, '$.invocationId') = @id`),
    deleteAttempts: p(`DELETE FROM attempts WHERE ${SCOPE} AND invocation_id = @id RETURNING doc`).pluck(),
    deleteDecision: p(`DELETE FROM consumed_decisions WHERE ${SCOPE} AND decision_id = @decisionId AND attempt_id = @attemptId`),
    deleteIdempotencyOf: p(`DELETE FROM idempotency WHERE ${SCOPE} AND action = @action AND idempotency_key = @key AND json_extract(doc, '$.invocationId') = @id`),
    deleteReconciliations: p(`DELETE FROM reconciliations WHERE ${SCOPE} AND invocation_id = @id`),
    deleteApproval: p(`DELETE FROM approvals WHERE ${SCOPE} AND approval_id = @approvalId`),
    deleteInvocationRow: p(`DELETE FROM invocations WHERE ${SCOPE} AND invocation_id = @id`),
    aged: {
      notify_deliveries: {
        del: p(`DELETE FROM notify_deliveries WHERE seq IN (SELECT seq FROM notify_deliveries WHERE ${DONE_DELIVERY} ORDER BY json_extract(doc, '$.updatedAt') LIMIT @limit)`),
        count: p(`SELECT count(*) FROM notify_deliveries WHERE ${DONE_DELIVERY}`).pluck(),
      },
      expired_completions: {
        del: p(`DELETE FROM completions WHERE rowid IN (SELECT rowid FROM completions WHERE ${EXPIRED_COMPLETION} ORDER BY json_extract(doc, '$.expiredAt') LIMIT @limit)`),
        count: p(`SELECT count(*) FROM completions WHERE ${EXPIRED_COMPLETION}`).pluck(),
      },
      webhook_deliveries: {
        del: p("DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE seen_at < @before ORDER BY seen_at LIMIT @limit)"),
        count: p("SELECT count(*) FROM deliveries WHERE seen_at < @before").pluck(),
      },
    },
  };
}

type ScopeParams = { t: string; s: string };

export function listEndedInvocations(q: SqliteRetentionStatements, opts: { endedBefore: number; limit: number; after?: EndedCursor }): Invocation[] {
  const a = opts.after;
  const rows = (
    a === undefined
      ? q.listEnded.all({ before: opts.endedBefore, limit: opts.limit })
      : q.listEndedAfter.all({ before: opts.endedBefore, limit: opts.limit, at: a.updatedAt, at_t: a.tenantId, at_s: a.spaceId, at_id: a.invocationId })
  ) as string[];
  return rows.map((d) => JSON.parse(d) as Invocation);
}

export function journalNamesAbove(q: SqliteRetentionStatements, sp: ScopeParams, aboveSeq: number, ids: string[]): Set<string> {
  if (ids.length === 0) return new Set();
  return new Set(q.journalNamesAbove.all({ ...sp, above: aboveSeq, ids: JSON.stringify(ids) }) as string[]);
}

export function deleteInvocation(q: SqliteRetentionStatements, sp: ScopeParams, invocationId: string): PrunedInvocationRows {
  const n: PrunedInvocationRows = { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 };
  const row = q.invocationForDelete.get({ ...sp, id: invocationId }) as { status: string; doc: string } | undefined;
  if (row === undefined) return n;
  if (!(TERMINAL_INVOCATION_STATUSES as readonly string[]).includes(row.status)) {
    throw new WritError("CONFLICT", `invocation ${invocationId} is ${row.status}, not ended: retention never deletes it`);
  }
  const inv = JSON.parse(row.doc) as Invocation;
  const p = { ...sp, id: invocationId };
  const steps = q.deleteSteps.all(p) as Array<{ connector: string | null; ref: string | null }>;
  n.steps = steps.length;
  const refs = new Set<string>();
  for (const s of steps) {
    if (s.connector === null || s.ref === null || refs.has(JSON.stringify([s.connector, s.ref]))) continue;
    refs.add(JSON.stringify([s.connector, s.ref]));
    n.completions += q.deleteCompletionsOf.run({ ...p, connector: s.connector, ref: s.ref }).changes;
  }
  for (const doc of q.deleteAttempts.all(p) as string[]) {
    const a = JSON.parse(doc) as AttemptRecord;
    n.attempts += 1;
    if (a.decisionId !== undefined) n.decisions += q.deleteDecision.run({ ...sp, decisionId: a.decisionId, attemptId: a.attemptId }).changes;
  }
  n.idempotency = q.deleteIdempotencyOf.run({ ...p, action: inv.action, key: inv.idempotencyKey }).changes;
  n.reconciliations = q.deleteReconciliations.run(p).changes;
  if (inv.approvalId !== undefined) n.approvals = q.deleteApproval.run({ ...sp, approvalId: inv.approvalId }).changes;
  n.invocations = q.deleteInvocationRow.run(p).changes;
  return n;
}

export function deleteAgedRecords(q: SqliteRetentionStatements, kind: AgedRecordKind, before: number, limit: number): number {
  return q.aged[kind].del.run({ before, limit }).changes;
}

export function countAgedRecords(q: SqliteRetentionStatements, kind: AgedRecordKind, before: number): number {
  return q.aged[kind].count.get({ before }) as number;
}
