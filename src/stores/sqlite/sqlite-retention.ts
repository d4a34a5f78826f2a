/**
 * Retention (docs/retention.md): ended invocations oldest first across scopes (an expression index
 * on the document's updatedAt, migration 10), the journal's hold on them, batch deletes of whole
 * invocations (one statement per table over a JSON list of ids, children first, the rows last, in
 * the caller's transaction), bare executions' idempotency records past the replay window (migration
 * 11) and the age-only deletes.
 */
import type Database from "better-sqlite3";
import type { AgedRecordKind, BareCursor, EndedCursor, InvocationHold, PrunedInvocationRows, PrunedInvocations } from "../../core/store.js";
import { UNDO_MARK } from "../../core/invocation.js";
import { TERMINAL_INVOCATION_STATUSES, type IdempotencyRecord } from "../../core/types.js";
import { SCOPE, type Prepare } from "./sqlite-sql.js";

/** The retention statements, by name. */
export interface SqliteRetentionStatements {
  listEnded: Database.Statement;
  listEndedAfter: Database.Statement;
  journalNamesAbove: Database.Statement;
  journalNamedSince: Database.Statement;
  invocationChecks: Database.Statement;
  /** The children of the executions filed under the invocation ids `@ids` (a JSON list), one statement per table, in this order. */
  deleteExecutions: Database.Statement[];
  deleteIdempotencyOf: Database.Statement;
  deleteReconciliations: Database.Statement;
  deleteApprovals: Database.Statement;
  deleteInvocationRows: Database.Statement;
  listSettled: Database.Statement;
  listSettledAfter: Database.Statement;
  bareOf: Database.Statement;
  deleteIdempotencyKeys: Database.Statement;
  aged: Record<AgedRecordKind, { del: Database.Statement; count: Database.Statement }>;
}

const ENDED_SET: ReadonlySet<string> = new Set(TERMINAL_INVOCATION_STATUSES);
const ENDED = `status IN (${TERMINAL_INVOCATION_STATUSES.map((s) => `'${s}'`).join(", ")})`;
const UPDATED = "json_extract(doc, '$.updatedAt')";
/** What the index of ended invocations holds (migration 10): read from it alone. */
const ENDED_FIELDS = `${UPDATED} AS updatedAt, tenant_id AS tenantId, space_id AS spaceId, invocation_id AS invocationId`;
const ENDED_ORDER = `ORDER BY ${UPDATED}, tenant_id, space_id, invocation_id LIMIT @limit`;
const DONE_DELIVERY = "status <> 'pending' AND json_extract(doc, '$.updatedAt') < @before";
const EXPIRED_COMPLETION = "json_extract(doc, '$.disposition') = 'expired' AND coalesce(json_extract(doc, '$.expiredAt'), received_at) < @before";

/** `col` is one of the JSON list `@ids`. */
const IN_IDS = (col: string): string => `${col} IN (SELECT value FROM json_each(@ids))`;
const IN_KEYS = "(action, idempotency_key) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(@keys))";
const SETTLED = "state IN ('succeeded', 'failed') AND json_extract(doc, '$.updatedAt') < @before";
const SETTLED_ORDER = "ORDER BY json_extract(doc, '$.updatedAt'), tenant_id, space_id, action, idempotency_key LIMIT @limit";
/**
 * The record of row `k` is held by no invocation of its scope (by its invocationId, by the invocation
 * a compensation `<invocation>:undo:<i>` undoes, or by its action and key).
 */
const NO_INVOCATION =
  "NOT EXISTS (SELECT 1 FROM invocations v WHERE v.tenant_id = k.tenant_id AND v.space_id = k.space_id AND v.invocation_id = json_extract(k.doc, '$.invocationId')) " +
  `AND NOT EXISTS (SELECT 1 FROM invocations v WHERE v.tenant_id = k.tenant_id AND v.space_id = k.space_id AND instr(json_extract(k.doc, '$.invocationId'), '${UNDO_MARK}') > 0 ` +
  `AND v.invocation_id = substr(json_extract(k.doc, '$.invocationId'), 1, instr(json_extract(k.doc, '$.invocationId'), '${UNDO_MARK}') - 1)) ` +
  "AND NOT EXISTS (SELECT 1 FROM invocations v WHERE v.tenant_id = k.tenant_id AND v.space_id = k.space_id AND v.action = k.action AND v.idempotency_key = k.idempotency_key)";

export function prepareRetentionStatements(p: Prepare): SqliteRetentionStatements {
  const page = (cursor: string): string =>
    `SELECT k.doc, k.tenant_id AS t, k.space_id AS s, (${NO_INVOCATION}) AS bare FROM (SELECT tenant_id, space_id, action, idempotency_key, doc FROM idempotency WHERE ${SETTLED}${cursor} ${SETTLED_ORDER}) k ` +
    "ORDER BY json_extract(k.doc, '$.updatedAt'), k.tenant_id, k.space_id, k.action, k.idempotency_key";
  return {
    listEnded: p(`SELECT ${ENDED_FIELDS} FROM invocations WHERE ${ENDED} AND ${UPDATED} < @before ${ENDED_ORDER}`),
    listEndedAfter: p(
      `SELECT ${ENDED_FIELDS} FROM invocations WHERE ${ENDED} AND ${UPDATED} < @before AND (${UPDATED}, tenant_id, space_id, invocation_id) > (@at, @at_t, @at_s, @at_id) ${ENDED_ORDER}`,
    ),
    journalNamesAbove: p(
      `SELECT DISTINCT json_extract(doc, '$.refs.invocationId') FROM journal WHERE ${SCOPE} AND (seq IS NULL OR seq > @above) ` +
        "AND json_extract(doc, '$.refs.invocationId') IN (SELECT value FROM json_each(@ids))",
    ).pluck(),
    // By journal_by_seq and journal_unsealed: the entries above @above and the unsealed ones.
    journalNamedSince: p(
      `SELECT seq, json_extract(doc, '$.refs.invocationId') AS inv FROM journal WHERE ${SCOPE} AND seq > @above ` +
        `UNION ALL SELECT NULL, json_extract(doc, '$.refs.invocationId') FROM journal WHERE ${SCOPE} AND seq IS NULL`,
    ),
    invocationChecks: p(
      "SELECT v.invocation_id AS id, v.status, CASE " +
        "WHEN EXISTS (SELECT 1 FROM reconciliations r WHERE r.tenant_id = v.tenant_id AND r.space_id = v.space_id AND r.invocation_id = v.invocation_id AND r.status = 'open') THEN 'open_reconciliation' " +
        "WHEN EXISTS (SELECT 1 FROM approvals a WHERE a.tenant_id = v.tenant_id AND a.space_id = v.space_id AND a.approval_id = json_extract(v.doc, '$.approvalId') AND a.status = 'pending') THEN 'pending_approval' " +
        `END AS hold FROM invocations v WHERE v.tenant_id = @t AND v.space_id = @s AND ${IN_IDS("v.invocation_id")}`,
    ),
    deleteExecutions: [
      p(
        "DELETE FROM completions WHERE rowid IN (SELECT c.rowid FROM steps st JOIN completions c ON c.tenant_id = st.tenant_id AND c.space_id = st.space_id " +
          "AND c.connector = json_extract(st.doc, '$.connector') AND c.external_ref = json_extract(st.doc, '$.externalRef') AND json_extract(c.doc, '$.invocationId') = st.invocation_id " +
          `WHERE st.tenant_id = @t AND st.space_id = @s AND ${IN_IDS("st.invocation_id")})`,
      ),
      p(`DELETE FROM steps WHERE ${SCOPE} AND ${IN_IDS("invocation_id")}`),
      p(
        `DELETE FROM consumed_decisions WHERE ${SCOPE} AND (decision_id, attempt_id) IN ` +
          `(SELECT json_extract(a.doc, '$.decisionId'), a.attempt_id FROM attempts a WHERE a.tenant_id = @t AND a.space_id = @s AND ${IN_IDS("a.invocation_id")})`,
      ),
      p(`DELETE FROM attempts WHERE ${SCOPE} AND ${IN_IDS("invocation_id")}`),
    ],
    deleteIdempotencyOf: p(
      `DELETE FROM idempotency WHERE ${SCOPE} AND (action, idempotency_key, json_extract(doc, '$.invocationId')) IN ` +
        `(SELECT action, idempotency_key, invocation_id FROM invocations WHERE ${SCOPE} AND ${IN_IDS("invocation_id")})`,
    ),
    deleteReconciliations: p(`DELETE FROM reconciliations WHERE ${SCOPE} AND ${IN_IDS("invocation_id")}`),
    deleteApprovals: p(`DELETE FROM approvals WHERE ${SCOPE} AND approval_id IN (SELECT json_extract(doc, '$.approvalId') FROM invocations WHERE ${SCOPE} AND ${IN_IDS("invocation_id")})`),
    deleteInvocationRows: p(`DELETE FROM invocations WHERE ${SCOPE} AND ${IN_IDS("invocation_id")}`),
    listSettled: p(page("")),
    listSettledAfter: p(page(" AND (json_extract(doc, '$.updatedAt'), tenant_id, space_id, action, idempotency_key) > (@at, @at_t, @at_s, @at_a, @at_k)")),
    bareOf: p(`SELECT k.action, k.idempotency_key AS key, json_extract(k.doc, '$.invocationId') AS inv FROM idempotency k WHERE k.tenant_id = @t AND k.space_id = @s AND ${IN_KEYS} AND ${SETTLED} AND ${NO_INVOCATION}`),
    deleteIdempotencyKeys: p(`DELETE FROM idempotency WHERE ${SCOPE} AND ${IN_KEYS}`),
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

export function listEndedInvocations(q: SqliteRetentionStatements, opts: { endedBefore: number; limit: number; after?: EndedCursor }): EndedCursor[] {
  const a = opts.after;
  return (
    a === undefined
      ? q.listEnded.all({ before: opts.endedBefore, limit: opts.limit })
      : q.listEndedAfter.all({ before: opts.endedBefore, limit: opts.limit, at: a.updatedAt, at_t: a.tenantId, at_s: a.spaceId, at_id: a.invocationId })
  ) as EndedCursor[];
}

export function journalNamesAbove(q: SqliteRetentionStatements, sp: ScopeParams, aboveSeq: number, ids: string[]): Set<string> {
  if (ids.length === 0) return new Set();
  return new Set(q.journalNamesAbove.all({ ...sp, above: aboveSeq, ids: JSON.stringify(ids) }) as string[]);
}

export function journalNamedSince(q: SqliteRetentionStatements, sp: ScopeParams, aboveSeq: number): { named: Set<string>; through: number } {
  const named = new Set<string>();
  let through = aboveSeq;
  for (const r of q.journalNamedSince.all({ ...sp, above: aboveSeq }) as Array<{ seq: number | null; inv: string | null }>) {
    if (r.seq !== null) through = Math.max(through, r.seq);
    if (r.inv !== null) named.add(r.inv);
  }
  return { named, through };
}

function noRows(): PrunedInvocationRows {
  return { invocations: 0, steps: 0, attempts: 0, decisions: 0, idempotency: 0, reconciliations: 0, approvals: 0, completions: 0 };
}

/** Deletes the completions, steps, consumed decisions and attempts filed under the invocation ids `ids` (a JSON list). */
function deleteExecutions(q: SqliteRetentionStatements, sp: ScopeParams, ids: string, n: PrunedInvocationRows): void {
  const [completions, steps, decisions, attempts] = q.deleteExecutions.map((st) => st.run({ ...sp, ids }).changes);
  n.completions += completions ?? 0;
  n.steps += steps ?? 0;
  n.decisions += decisions ?? 0;
  n.attempts += attempts ?? 0;
}

type Check = { id: string; status: string; hold: InvocationHold | null };

export function invocationHolds(q: SqliteRetentionStatements, sp: ScopeParams, invocationIds: string[]): Map<string, InvocationHold> {
  const out = new Map<string, InvocationHold>();
  if (invocationIds.length === 0) return out;
  for (const c of q.invocationChecks.all({ ...sp, ids: JSON.stringify(invocationIds) }) as Check[]) if (c.hold !== null) out.set(c.id, c.hold);
  return out;
}

/** One check of every member, then one statement per table for those that go (the caller's transaction; SQLite's are serial). */
export function deleteEndedInvocations(q: SqliteRetentionStatements, sp: ScopeParams, invocationIds: string[]): PrunedInvocations {
  const out: PrunedInvocations = { rows: noRows(), deleted: [], skipped: [] };
  if (invocationIds.length === 0) return out;
  for (const c of q.invocationChecks.all({ ...sp, ids: JSON.stringify(invocationIds) }) as Check[]) {
    const reason = ENDED_SET.has(c.status) ? c.hold : "not_ended";
    if (reason === null) out.deleted.push(c.id);
    else out.skipped.push({ invocationId: c.id, reason });
  }
  if (out.deleted.length === 0) return out;
  const n = out.rows;
  const p = { ...sp, ids: JSON.stringify(out.deleted) };
  deleteExecutions(q, sp, p.ids, n);
  n.idempotency = q.deleteIdempotencyOf.run(p).changes;
  n.reconciliations = q.deleteReconciliations.run(p).changes;
  n.approvals = q.deleteApprovals.run(p).changes;
  n.invocations = q.deleteInvocationRows.run(p).changes;
  return out;
}

export function listBareIdempotency(q: SqliteRetentionStatements, opts: { before: number; limit: number; after?: BareCursor }): { bare: IdempotencyRecord[]; next?: BareCursor } {
  const a = opts.after;
  const rows = (
    a === undefined
      ? q.listSettled.all({ before: opts.before, limit: opts.limit })
      : q.listSettledAfter.all({ before: opts.before, limit: opts.limit, at: a.updatedAt, at_t: a.tenantId, at_s: a.spaceId, at_a: a.action, at_k: a.idempotencyKey })
  ) as Array<{ doc: string; t: string; s: string; bare: number }>;
  const looked = rows.map((r) => ({ rec: { ...(JSON.parse(r.doc) as IdempotencyRecord), tenantId: r.t, spaceId: r.s }, bare: r.bare === 1 }));
  const bare = looked.filter((x) => x.bare).map((x) => x.rec);
  const last = looked[looked.length - 1]?.rec;
  if (looked.length < opts.limit || last === undefined) return { bare };
  return { bare, next: { updatedAt: last.updatedAt, tenantId: last.tenantId, spaceId: last.spaceId, action: last.action, idempotencyKey: last.idempotencyKey } };
}

export function deleteBareExecutions(q: SqliteRetentionStatements, sp: ScopeParams, keys: Array<{ action: string; idempotencyKey: string }>, before: number): PrunedInvocationRows {
  const n = noRows();
  if (keys.length === 0) return n;
  const found = q.bareOf.all({ ...sp, before, keys: JSON.stringify(keys.map((k) => [k.action, k.idempotencyKey])) }) as Array<{ action: string; key: string; inv: string }>;
  if (found.length === 0) return n;
  deleteExecutions(q, sp, JSON.stringify([...new Set(found.map((f) => f.inv))]), n);
  n.idempotency = q.deleteIdempotencyKeys.run({ ...sp, keys: JSON.stringify(found.map((f) => [f.action, f.key])) }).changes;
  return n;
}

export function deleteAgedRecords(q: SqliteRetentionStatements, kind: AgedRecordKind, before: number, limit: number): number {
  return q.aged[kind].del.run({ before, limit }).changes;
}

export function countAgedRecords(q: SqliteRetentionStatements, kind: AgedRecordKind, before: number): number {
  return q.aged[kind].count.get({ before }) as number;
}
