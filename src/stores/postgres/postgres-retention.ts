/**
 * Retention (docs/retention.md): ended invocations oldest first across scopes (a partial index of
 * ended rows, migration 14), the journal's hold on them (entries unsealed or sealed above the
 * archive watermark, read from the chain by seq and the pending queue), batch deletes of whole
 * invocations (the rows locked and checked in one statement, then one statement deleting from
 * every table, in the caller's short transaction), bare executions' idempotency records past the
 * replay window (migration 15) and age-only deletes.
 */
import type { AgedRecordKind, BareCursor, EndedCursor, InvocationHold, PrunedInvocationRows, PrunedInvocations } from "../../core/store.js";
import { UNDO_MARK } from "../../core/invocation.js";
import { TERMINAL_INVOCATION_STATUSES, type IdempotencyRecord, type Scope } from "../../core/types.js";
import { statement, type Exec, type Statement } from "./postgres-exec.js";

const ENDED = `status IN (${TERMINAL_INVOCATION_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const ENDED_SET: ReadonlySet<string> = new Set(TERMINAL_INVOCATION_STATUSES);
const ENDED_ORDER = "ORDER BY updated_at, tenant_id, space_id, invocation_id LIMIT $2";
// Two statements, so that the cursor is an index condition of writ_invocations_ended (a cursor
// written as `$3 IS NULL OR (...) > (...)` is a filter: every page would walk the index from its start).
// Only the columns of writ_invocations_ended (migration 14): an index-only scan, no documents.
const ENDED_FIELDS = `updated_at AS "updatedAt", tenant_id AS "tenantId", space_id AS "spaceId", invocation_id AS "invocationId"`;
const LIST_ENDED = statement("list_ended_invocations", `SELECT ${ENDED_FIELDS} FROM writ_invocations WHERE ${ENDED} AND updated_at < $1 ${ENDED_ORDER}`);
const LIST_ENDED_AFTER = statement(
  "list_ended_invocations_after",
  `SELECT ${ENDED_FIELDS} FROM writ_invocations WHERE ${ENDED} AND updated_at < $1
      AND (updated_at, tenant_id, space_id, invocation_id) > ($3::bigint, $4::text, $5::text, $6::text) ${ENDED_ORDER}`,
);
/**
 * Fields of documents that may hold NUL or an unpaired surrogate (a journal entry holds the
 * submitted params, an invocation its params, an attempt a connector's reason, a completion an
 * external system's result, a delivery a receiver's answer) are read through `writ_doc_text`
 * (migration 24, docs/stores.md, "Documents that hold NUL"): PostgreSQL's `->>` on such a document
 * fails, whichever field it reads.
 */
const NAMES_ABOVE = statement(
  "journal_names_above_2",
  `SELECT DISTINCT x.inv FROM (
     SELECT writ_doc_text(j.doc, '{refs,invocationId}') AS inv FROM writ_journal_chain c
       JOIN writ_journal j ON j.tenant_id = c.tenant_id AND j.space_id = c.space_id AND j.id = c.id
      WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq > $3
     UNION ALL
     SELECT writ_doc_text(j.doc, '{refs,invocationId}') FROM writ_journal_pending p
       JOIN writ_journal j ON j.tenant_id = p.tenant_id AND j.space_id = p.space_id AND j.id = p.id
      WHERE p.tenant_id = $1 AND p.space_id = $2
   ) x WHERE x.inv = ANY($4::text[])`,
);
/**
 * Every id the entries sealed above $3 or unsealed name, and the highest seq read: the chain by its
 * primary key from $3, the pending queue by scope (one snapshot, so `through` covers every entry
 * sealed at or below it).
 */
const NAMED_SINCE = statement(
  "journal_named_since_2",
  `WITH c AS (SELECT c.seq, writ_doc_text(j.doc, '{refs,invocationId}') AS inv FROM writ_journal_chain c
       JOIN writ_journal j ON j.tenant_id = c.tenant_id AND j.space_id = c.space_id AND j.id = c.id
      WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.seq > $3),
   p AS (SELECT writ_doc_text(j.doc, '{refs,invocationId}') AS inv FROM writ_journal_pending p
       JOIN writ_journal j ON j.tenant_id = p.tenant_id AND j.space_id = p.space_id AND j.id = p.id
      WHERE p.tenant_id = $1 AND p.space_id = $2)
   SELECT (SELECT max(seq) FROM c) AS through,
     ARRAY(SELECT DISTINCT x.inv FROM (SELECT inv FROM c UNION ALL SELECT inv FROM p) x WHERE x.inv IS NOT NULL) AS named`,
);
/** Each member's status and hold: read (the dry run's), or locked in one order (the delete's first statement). */
const CHECKS = `SELECT i.invocation_id AS id, i.status, CASE
     WHEN EXISTS (SELECT 1 FROM writ_reconciliations r WHERE r.tenant_id = $1 AND r.space_id = $2 AND r.invocation_id = i.invocation_id AND r.status = 'open') THEN 'open_reconciliation'
     WHEN EXISTS (SELECT 1 FROM writ_approvals a WHERE a.tenant_id = $1 AND a.space_id = $2 AND a.approval_id = writ_doc_text(i.doc, '{approvalId}') AND a.status = 'pending') THEN 'pending_approval'
   END AS hold
   FROM writ_invocations i WHERE i.tenant_id = $1 AND i.space_id = $2 AND i.invocation_id = ANY($3::text[])`;
const INVOCATION_HOLDS = statement("invocation_holds_2", CHECKS);
const LOCK_FOR_DELETE = statement("invocations_for_delete_2", `${CHECKS} ORDER BY i.invocation_id FOR UPDATE OF i`);
/**
 * The rows of the executions filed under the invocation ids $3: steps, the completions matched to
 * them, attempts and the decisions they consumed, each table by its index on the invocation id (or
 * by primary key from the rows a sibling deleted). Data-modifying CTEs of one statement.
 */
const EXECUTION_CTES = `st AS (DELETE FROM writ_steps s WHERE s.tenant_id = $1 AND s.space_id = $2 AND s.invocation_id = ANY($3::text[])
       RETURNING s.invocation_id, s.connector, s.external_ref),
   cp AS (DELETE FROM writ_completions c USING st WHERE c.tenant_id = $1 AND c.space_id = $2 AND c.connector = st.connector AND c.external_ref = st.external_ref
       AND writ_doc_text(c.doc, '{invocationId}') = st.invocation_id RETURNING 1),
   at AS (DELETE FROM writ_attempts a WHERE a.tenant_id = $1 AND a.space_id = $2 AND a.invocation_id = ANY($3::text[])
       RETURNING a.attempt_id, writ_doc_text(a.doc, '{decisionId}') AS decision_id),
   dc AS (DELETE FROM writ_consumed_decisions d USING at WHERE d.tenant_id = $1 AND d.space_id = $2 AND d.decision_id = at.decision_id AND d.attempt_id = at.attempt_id RETURNING 1)`;
const EXECUTION_COUNTS = "(SELECT count(*) FROM st) AS steps, (SELECT count(*) FROM cp) AS completions, (SELECT count(*) FROM at) AS attempts, (SELECT count(*) FROM dc) AS decisions";
/** Whole invocations $3 (locked and checked by LOCK_FOR_DELETE): one statement, one delete per table. */
const DELETE_INVOCATIONS = statement(
  "prune_invocations_2",
  `WITH ${EXECUTION_CTES},
   rc AS (DELETE FROM writ_reconciliations r WHERE r.tenant_id = $1 AND r.space_id = $2 AND r.invocation_id = ANY($3::text[]) RETURNING 1),
   iv AS (DELETE FROM writ_invocations v WHERE v.tenant_id = $1 AND v.space_id = $2 AND v.invocation_id = ANY($3::text[])
       RETURNING v.invocation_id, v.action, v.idempotency_key, writ_doc_text(v.doc, '{approvalId}') AS approval_id),
   ik AS (DELETE FROM writ_idempotency k USING iv WHERE k.tenant_id = $1 AND k.space_id = $2 AND k.action = iv.action AND k.idempotency_key = iv.idempotency_key
       AND k.doc->>'invocationId' = iv.invocation_id RETURNING 1),
   ap AS (DELETE FROM writ_approvals p USING iv WHERE p.tenant_id = $1 AND p.space_id = $2 AND p.approval_id = iv.approval_id RETURNING 1)
   SELECT ${EXECUTION_COUNTS}, (SELECT count(*) FROM iv) AS invocations, (SELECT count(*) FROM ik) AS idempotency,
     (SELECT count(*) FROM rc) AS reconciliations, (SELECT count(*) FROM ap) AS approvals`,
);

/**
 * `h.held` is 1 when an invocation of the scope of record `k` holds it (by its invocationId, by the
 * invocation a compensation `<invocation>:undo:<i>` undoes, or by its action and key), else null: a
 * lateral probe of the two unique indexes per record (as NOT EXISTS, the planner may hash the whole
 * table of invocations instead).
 */
const HOLDER = `LEFT JOIN LATERAL (SELECT 1 AS held FROM writ_invocations v WHERE v.tenant_id = k.tenant_id AND v.space_id = k.space_id
     AND (v.invocation_id = k.doc->>'invocationId' OR v.invocation_id = split_part(k.doc->>'invocationId', '${UNDO_MARK}', 1)
       OR (v.action = k.action AND v.idempotency_key = k.idempotency_key)) LIMIT 1) h ON true`;
const SETTLED = "state IN ('succeeded', 'failed') AND (doc->>'updatedAt')::bigint < $1";
const SETTLED_ORDER = "ORDER BY (doc->>'updatedAt')::bigint, tenant_id, space_id, action, idempotency_key";
/** The next $2 settled records (writ_idempotency_settled, migration 15), each marked bare or not. */
const settledPage = (cursor: string): string =>
  `SELECT k.doc, k.tenant_id AS t, k.space_id AS s, h.held IS NULL AS bare
     FROM (SELECT tenant_id, space_id, action, idempotency_key, doc FROM writ_idempotency WHERE ${SETTLED}${cursor} ${SETTLED_ORDER} LIMIT $2) k ${HOLDER}
    ORDER BY (k.doc->>'updatedAt')::bigint, k.tenant_id, k.space_id, k.action, k.idempotency_key`;
const LIST_SETTLED = statement("list_settled_idempotency", settledPage(""));
const LIST_SETTLED_AFTER = statement(
  "list_settled_idempotency_after",
  settledPage(" AND ((doc->>'updatedAt')::bigint, tenant_id, space_id, action, idempotency_key) > ($3::bigint, $4::text, $5::text, $6::text, $7::text)"),
);
/** Of the keys ($3 actions, $4 keys), the records still bare, locked (updated before $5). */
const LOCK_BARE = statement(
  "bare_for_delete",
  `SELECT k.action, k.idempotency_key AS key, k.doc->>'invocationId' AS inv FROM writ_idempotency k
     JOIN unnest($3::text[], $4::text[]) AS w(action, key) ON k.action = w.action AND k.idempotency_key = w.key ${HOLDER}
    WHERE k.tenant_id = $1 AND k.space_id = $2 AND k.state IN ('succeeded', 'failed') AND (k.doc->>'updatedAt')::bigint < $5 AND h.held IS NULL
    ORDER BY k.action, k.idempotency_key FOR UPDATE OF k`,
);
/** Bare executions: their rows under the invocation ids $3, then their records ($4 actions, $5 keys). */
const DELETE_BARE = statement(
  "prune_bare_executions_2",
  `WITH ${EXECUTION_CTES},
   ik AS (DELETE FROM writ_idempotency k USING unnest($4::text[], $5::text[]) AS w(action, key)
       WHERE k.tenant_id = $1 AND k.space_id = $2 AND k.action = w.action AND k.idempotency_key = w.key RETURNING 1)
   SELECT ${EXECUTION_COUNTS}, (SELECT count(*) FROM ik) AS idempotency`,
);

const DONE_DELIVERY = "status <> 'pending' AND writ_doc_text(doc, '{updatedAt}')::bigint < $1";
/** As the partial indexes writ_notify_deliveries_done_2 and writ_completions_expired_2 (migration 24) read them. */
const EXPIRED_COMPLETION = "writ_doc_text(doc, '{disposition}') = 'expired' AND coalesce(writ_doc_text(doc, '{expiredAt}')::bigint, received_at) < $1";
export const AGED: Record<AgedRecordKind, { del: Statement; count: Statement }> = {
  notify_deliveries: {
    del: statement(
      "prune_notify_deliveries_2",
      `DELETE FROM writ_notify_deliveries WHERE seq IN (SELECT seq FROM writ_notify_deliveries WHERE ${DONE_DELIVERY} ORDER BY writ_doc_text(doc, '{updatedAt}')::bigint LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_notify_deliveries_done_2", `SELECT count(*) AS n FROM writ_notify_deliveries WHERE ${DONE_DELIVERY}`),
  },
  expired_completions: {
    del: statement(
      "prune_expired_completions_2",
      `DELETE FROM writ_completions WHERE id IN (SELECT id FROM writ_completions WHERE ${EXPIRED_COMPLETION} ORDER BY writ_doc_text(doc, '{expiredAt}')::bigint LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_expired_completions_2", `SELECT count(*) AS n FROM writ_completions WHERE ${EXPIRED_COMPLETION}`),
  },
  webhook_deliveries: {
    del: statement(
      "prune_webhook_deliveries",
      `DELETE FROM writ_deliveries WHERE ctid IN (SELECT ctid FROM writ_deliveries WHERE received_at < $1 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
    ),
    count: statement("count_webhook_deliveries", "SELECT count(*) AS n FROM writ_deliveries WHERE received_at < $1"),
  },
};

export async function listEndedInvocations(x: Exec, opts: { endedBefore: number; limit: number; after?: EndedCursor }): Promise<EndedCursor[]> {
  const a = opts.after;
  const rows =
    a === undefined
      ? await x.rows<EndedCursor & { updatedAt: string | number }>(LIST_ENDED, [opts.endedBefore, opts.limit])
      : await x.rows<EndedCursor & { updatedAt: string | number }>(LIST_ENDED_AFTER, [opts.endedBefore, opts.limit, a.updatedAt, a.tenantId, a.spaceId, a.invocationId]);
  return rows.map((r) => ({ updatedAt: Number(r.updatedAt), tenantId: r.tenantId, spaceId: r.spaceId, invocationId: r.invocationId }));
}

export async function journalNamesAbove(x: Exec, scope: Scope, aboveSeq: number, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await x.rows<{ inv: string }>(NAMES_ABOVE, [scope.tenantId, scope.spaceId, aboveSeq, ids]);
  return new Set(rows.map((r) => r.inv));
}

export async function journalNamedSince(x: Exec, scope: Scope, aboveSeq: number): Promise<{ named: Set<string>; through: number }> {
  const [r] = await x.rows<{ through: string | number | null; named: string[] }>(NAMED_SINCE, [scope.tenantId, scope.spaceId, aboveSeq]);
  return { named: new Set(r?.named ?? []), through: r?.through == null ? aboveSeq : Math.max(aboveSeq, Number(r.through)) };
}

type Check = { id: string; status: string; hold: InvocationHold | null };
type Counts = Record<keyof PrunedInvocationRows, string | undefined>;

function rowsOf(c: Partial<Counts> | undefined): PrunedInvocationRows {
  const n = (k: keyof PrunedInvocationRows): number => Number(c?.[k] ?? 0);
  return { invocations: n("invocations"), steps: n("steps"), attempts: n("attempts"), decisions: n("decisions"), idempotency: n("idempotency"), reconciliations: n("reconciliations"), approvals: n("approvals"), completions: n("completions") };
}

export async function invocationHolds(x: Exec, scope: Scope, ids: string[]): Promise<Map<string, InvocationHold>> {
  const out = new Map<string, InvocationHold>();
  if (ids.length === 0) return out;
  for (const c of await x.rows<Check>(INVOCATION_HOLDS, [scope.tenantId, scope.spaceId, ids])) if (c.hold !== null) out.set(c.id, c.hold);
  return out;
}

/** Two statements: lock and check every member (in invocation id order), then delete those that go, one delete per table. */
export async function deleteEndedInvocations(x: Exec, scope: Scope, ids: string[]): Promise<PrunedInvocations> {
  const out: PrunedInvocations = { rows: rowsOf(undefined), deleted: [], skipped: [] };
  if (ids.length === 0) return out;
  for (const c of await x.rows<Check>(LOCK_FOR_DELETE, [scope.tenantId, scope.spaceId, ids])) {
    const reason = ENDED_SET.has(c.status) ? c.hold : "not_ended";
    if (reason === null) out.deleted.push(c.id);
    else out.skipped.push({ invocationId: c.id, reason });
  }
  if (out.deleted.length > 0) out.rows = rowsOf((await x.rows<Counts>(DELETE_INVOCATIONS, [scope.tenantId, scope.spaceId, out.deleted]))[0]);
  return out;
}

export async function listBareIdempotency(x: Exec, opts: { before: number; limit: number; after?: BareCursor }): Promise<{ bare: IdempotencyRecord[]; next?: BareCursor }> {
  const a = opts.after;
  const rows =
    a === undefined
      ? await x.rows<{ doc: IdempotencyRecord; t: string; s: string; bare: boolean }>(LIST_SETTLED, [opts.before, opts.limit])
      : await x.rows<{ doc: IdempotencyRecord; t: string; s: string; bare: boolean }>(LIST_SETTLED_AFTER, [opts.before, opts.limit, a.updatedAt, a.tenantId, a.spaceId, a.action, a.idempotencyKey]);
  const looked = rows.map((r) => ({ rec: { ...r.doc, tenantId: r.t, spaceId: r.s }, bare: r.bare }));
  const bare = looked.filter((l) => l.bare).map((l) => l.rec);
  const last = looked[looked.length - 1]?.rec;
  if (looked.length < opts.limit || last === undefined) return { bare };
  return { bare, next: { updatedAt: last.updatedAt, tenantId: last.tenantId, spaceId: last.spaceId, action: last.action, idempotencyKey: last.idempotencyKey } };
}

/** Two statements: lock the records still bare, then delete their executions' rows and the records. */
export async function deleteBareExecutions(x: Exec, scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number): Promise<PrunedInvocationRows> {
  if (keys.length === 0) return rowsOf(undefined);
  const found = await x.rows<{ action: string; key: string; inv: string }>(LOCK_BARE, [scope.tenantId, scope.spaceId, keys.map((k) => k.action), keys.map((k) => k.idempotencyKey), before]);
  if (found.length === 0) return rowsOf(undefined);
  const invs = [...new Set(found.map((f) => f.inv))];
  const [c] = await x.rows<Counts>(DELETE_BARE, [scope.tenantId, scope.spaceId, invs, found.map((f) => f.action), found.map((f) => f.key)]);
  return rowsOf(c);
}

export async function deleteAgedRecords(x: Exec, kind: AgedRecordKind, before: number, limit: number): Promise<number> {
  return x.count(AGED[kind].del, [before, limit]);
}

export async function countAgedRecords(x: Exec, kind: AgedRecordKind, before: number): Promise<number> {
  const [row] = await x.rows<{ n: string }>(AGED[kind].count, [before]);
  return Number(row?.n ?? 0);
}
