/**
 * Record statements: reconciliations, authorities, approvals, policy versions, external completions
 * and delivery ids, API keys, circuit breakers. Lists that vary with their filters: {@link reconciliationListSql},
 * {@link approvalListSql}.
 */
import type Database from "better-sqlite3";
import { SCOPE, type Prepare } from "./sqlite-sql.js";

/** The record statements, by name. */
export interface SqliteRecordStatements {
  insertReconciliation: Database.Statement;
  updateReconciliation: Database.Statement;
  getReconciliation: Database.Statement;
  /** Stored revisions (docs/stores.md, "Conditional writes"): reconciliationRev, approvalRev, completionRev. */
  reconciliationRev: Database.Statement;
  putAuthority: Database.Statement;
  getAuthority: Database.Statement;
  listAuthorities: Database.Statement;
  insertApproval: Database.Statement;
  updateApproval: Database.Statement;
  approvalRev: Database.Statement;
  getApproval: Database.Statement;
  putPolicyVersion: Database.Statement;
  listPolicyVersions: Database.Statement;
  insertCompletion: Database.Statement;
  updateCompletion: Database.Statement;
  completionRev: Database.Statement;
  listCompletions: Database.Statement;
  rememberDelivery: Database.Statement;
  putApiKey: Database.Statement;
  getApiKey: Database.Statement;
  listApiKeys: Database.Statement;
  insertBreaker: Database.Statement;
  updateBreaker: Database.Statement;
  breakerRev: Database.Statement;
  getBreaker: Database.Statement;
  listBreakers: Database.Statement;
}

/** Prepares the record statements; the schema must be migrated first. */
export function prepareRecordStatements(p: Prepare): SqliteRecordStatements {
  return {
    insertReconciliation: p(
      "INSERT INTO reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc, rev) " +
        "VALUES (@t, @s, @id, @invocationId, @status, @createdAt, @doc, 1)",
    ),
    updateReconciliation: p(
      `UPDATE reconciliations SET invocation_id = @invocationId, status = @status, created_at = @createdAt, doc = @doc, rev = @rev WHERE ${SCOPE} AND reconciliation_id = @id AND rev = @expected`,
    ),
    getReconciliation: p(`SELECT doc FROM reconciliations WHERE ${SCOPE} AND reconciliation_id = @id`).pluck(),
    reconciliationRev: p(`SELECT rev FROM reconciliations WHERE ${SCOPE} AND reconciliation_id = @id`).pluck(),
    putAuthority: p(
      "INSERT INTO authorities (tenant_id, space_id, authority_ref, status, created_at, doc) VALUES (@t, @s, @id, @status, @createdAt, @doc) " +
        "ON CONFLICT (tenant_id, space_id, authority_ref) DO UPDATE SET status = excluded.status, created_at = excluded.created_at, doc = excluded.doc",
    ),
    getAuthority: p(`SELECT doc FROM authorities WHERE ${SCOPE} AND authority_ref = @id`).pluck(),
    listAuthorities: p(`SELECT doc FROM authorities WHERE ${SCOPE} ORDER BY rowid LIMIT @limit`).pluck(),
    insertApproval: p("INSERT INTO approvals (tenant_id, space_id, approval_id, status, created_at, doc, rev) VALUES (@t, @s, @id, @status, @createdAt, @doc, 1)"),
    updateApproval: p(`UPDATE approvals SET status = @status, created_at = @createdAt, doc = @doc, rev = @rev WHERE ${SCOPE} AND approval_id = @id AND rev = @expected`),
    approvalRev: p(`SELECT rev FROM approvals WHERE ${SCOPE} AND approval_id = @id`).pluck(),
    getApproval: p(`SELECT doc FROM approvals WHERE ${SCOPE} AND approval_id = @id`).pluck(),
    putPolicyVersion: p(
      "INSERT INTO policy_versions (tenant_id, space_id, version, doc) VALUES (@t, @s, @version, @doc) " +
        "ON CONFLICT (tenant_id, space_id, version) DO UPDATE SET doc = excluded.doc",
    ),
    listPolicyVersions: p(`SELECT doc FROM policy_versions WHERE ${SCOPE} ORDER BY version`).pluck(),
    insertCompletion: p(
      "INSERT INTO completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc, rev) VALUES (@t, @s, @connector, @id, @ref, @receivedAt, @doc, 1)",
    ),
    updateCompletion: p(
      `UPDATE completions SET external_ref = @ref, received_at = @receivedAt, doc = @doc, rev = @rev WHERE ${SCOPE} AND connector = @connector AND completion_id = @id AND rev = @expected`,
    ),
    completionRev: p(`SELECT rev FROM completions WHERE ${SCOPE} AND connector = @connector AND completion_id = @id`).pluck(),
    listCompletions: p(`SELECT doc FROM completions WHERE ${SCOPE} AND connector = @connector AND external_ref = @ref ORDER BY received_at, rowid`).pluck(),
    rememberDelivery: p(
      "INSERT INTO deliveries (tenant_id, space_id, connector, delivery_id, seen_at) VALUES (@t, @s, @connector, @id, @at) " +
        "ON CONFLICT (tenant_id, space_id, connector, delivery_id) DO NOTHING",
    ),
    putApiKey: p(
      "INSERT INTO api_keys (key_id, tenant_id, created_at, doc) VALUES (@id, @tenant, @createdAt, @doc) " +
        "ON CONFLICT (key_id) DO UPDATE SET doc = excluded.doc WHERE api_keys.tenant_id = excluded.tenant_id",
    ),
    getApiKey: p("SELECT doc FROM api_keys WHERE key_id = @id").pluck(),
    listApiKeys: p("SELECT doc FROM api_keys WHERE tenant_id = @tenant ORDER BY created_at, key_id").pluck(),
    insertBreaker: p("INSERT INTO breakers (tenant_id, space_id, connector, operation, doc, rev) VALUES (@t, @s, @connector, @operation, @doc, 1)"),
    updateBreaker: p(`UPDATE breakers SET doc = @doc, rev = @rev WHERE ${SCOPE} AND connector = @connector AND operation = @operation AND rev = @expected`),
    breakerRev: p(`SELECT rev FROM breakers WHERE ${SCOPE} AND connector = @connector AND operation = @operation`).pluck(),
    getBreaker: p(`SELECT doc FROM breakers WHERE ${SCOPE} AND connector = @connector AND operation = @operation`).pluck(),
    listBreakers: p(`SELECT doc FROM breakers WHERE ${SCOPE} ORDER BY connector, operation LIMIT @limit`).pluck(),
  };
}

/** The SQL of `ListStatements.reconciliations`: in insertion order. */
export function reconciliationListSql(status: boolean, invocation: boolean): string {
  const where = SCOPE + (status ? " AND status = @status" : "") + (invocation ? " AND invocation_id = @invocationId" : "");
  return `SELECT doc FROM reconciliations WHERE ${where} ORDER BY rowid LIMIT @limit`;
}

/** The SQL of `ListStatements.approvals`: in insertion order. */
export function approvalListSql(status: boolean): string {
  const where = SCOPE + (status ? " AND status = @status" : "");
  return `SELECT doc FROM approvals WHERE ${where} ORDER BY rowid LIMIT @limit`;
}
