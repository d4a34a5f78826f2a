/**
 * Worker statements across all scopes (the port's exceptions to a scope in every WHERE): claims,
 * heartbeats, next run time, and the sweeps (overdue parked invocations, expired pending
 * approvals). A claim then writes each picked row by its scope and id.
 */
import type Database from "better-sqlite3";
import { SCOPE, type Prepare } from "./sqlite-sql.js";

const CLAIMABLE_ORDER = "ORDER BY run_at, created_at, invocation_id, tenant_id, space_id";

/** The claim statements, by name. */
export interface SqliteClaimStatements {
  claimable: Database.Statement;
  claim: Database.Statement;
  heartbeat: Database.Statement;
  nextRunAt: Database.Statement;
  listOverdueParked: Database.Statement;
  listExpiredPendingApprovals: Database.Statement;
  listEarlyCompletions: Database.Statement;
}

/** Prepares the claim statements; the schema must be migrated first. */
export function prepareClaimStatements(p: Prepare): SqliteClaimStatements {
  return {
    claimable: p(
      "SELECT doc FROM (" +
        `SELECT * FROM (SELECT * FROM invocations WHERE status = 'queued' AND run_at <= @now ${CLAIMABLE_ORDER} LIMIT @limit) ` +
        "UNION ALL " +
        `SELECT * FROM (SELECT * FROM invocations WHERE status = 'running' AND lease_expires_at <= @now ${CLAIMABLE_ORDER} LIMIT @limit)` +
        `) ${CLAIMABLE_ORDER} LIMIT @limit`,
    ).pluck(),
    claim: p(
      "UPDATE invocations SET status = 'running', lease_owner = @owner, lease_token = @token, lease_expires_at = @leaseExpiresAt, " +
        `attempt_count = @attemptCount, doc = @doc, rev = rev + 1 WHERE ${SCOPE} AND invocation_id = @id`,
    ),
    heartbeat: p(
      "UPDATE invocations SET lease_expires_at = @leaseExpiresAt, doc = json_set(doc, '$.leaseExpiresAt', @leaseExpiresAt) " +
        "WHERE status = 'running' AND lease_owner = @owner AND lease_expires_at > @now",
    ),
    nextRunAt: p("SELECT MIN(run_at) FROM invocations WHERE status = 'queued'").pluck(),
    listOverdueParked: p(
      "SELECT doc FROM invocations WHERE status = 'parked' AND json_extract(doc, '$.deadlineAt') <= @now " +
        "AND json_extract(doc, '$.overdueAt') IS NULL ORDER BY json_extract(doc, '$.deadlineAt') LIMIT @limit",
    ).pluck(),
    listExpiredPendingApprovals: p(
      "SELECT doc FROM approvals WHERE status = 'pending' AND json_extract(doc, '$.expiresAt') <= @now ORDER BY json_extract(doc, '$.expiresAt') LIMIT @limit",
    ).pluck(),
    listEarlyCompletions: p(
      "SELECT doc FROM completions WHERE json_extract(doc, '$.disposition') = 'early' AND received_at < @before " +
        "AND (@t IS NULL OR (tenant_id = @t AND space_id = @s)) ORDER BY received_at, rowid LIMIT @limit",
    ).pluck(),
  };
}
