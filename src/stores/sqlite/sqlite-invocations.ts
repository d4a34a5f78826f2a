/**
 * Invocation statements: inserts, reads, conditional and fenced updates, the lease check and the
 * stored revision. The list statement varies with its filters: {@link invocationListSql}.
 */
import type Database from "better-sqlite3";
import { HOLDS_LEASE, SCOPE, type Prepare } from "./sqlite-sql.js";

const INV_COLUMNS = "tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, created_at, doc, rev";
const INV_VALUES = "@t, @s, @id, @action, @key, @status, @runAt, @leaseOwner, @leaseToken, @leaseExpiresAt, @attemptCount, @createdAt, @doc, @rev";
const INV_SET =
  "action = @action, idempotency_key = @key, status = @status, run_at = @runAt, lease_owner = @leaseOwner, lease_token = @leaseToken, " +
  "lease_expires_at = @leaseExpiresAt, attempt_count = @attemptCount, created_at = @createdAt, doc = @doc, rev = @rev";

/** The invocation statements, by name. */
export interface SqliteInvocationStatements {
  insertInvocation: Database.Statement;
  getInvocation: Database.Statement;
  findInvocationByKey: Database.Statement;
  updateInvocation: Database.Statement;
  updateInvocationFenced: Database.Statement;
  holdsLease: Database.Statement;
  /** The stored revision of the row (docs/stores.md, "Conditional writes"). */
  invocationRev: Database.Statement;
}

/** Prepares the invocation statements; the schema must be migrated first. */
export function prepareInvocationStatements(p: Prepare): SqliteInvocationStatements {
  return {
    insertInvocation: p(`INSERT INTO invocations (${INV_COLUMNS}) VALUES (${INV_VALUES})`),
    getInvocation: p(`SELECT doc FROM invocations WHERE ${SCOPE} AND invocation_id = @id`).pluck(),
    findInvocationByKey: p(`SELECT doc FROM invocations WHERE ${SCOPE} AND action = @action AND idempotency_key = @key`).pluck(),
    updateInvocation: p(`UPDATE invocations SET ${INV_SET} WHERE ${SCOPE} AND invocation_id = @id AND rev = @expected`),
    updateInvocationFenced: p(`UPDATE invocations SET ${INV_SET} WHERE ${SCOPE} AND invocation_id = @id AND ${HOLDS_LEASE}`),
    holdsLease: p(`SELECT 1 FROM invocations WHERE ${SCOPE} AND invocation_id = @id AND ${HOLDS_LEASE}`).pluck(),
    invocationRev: p(`SELECT rev FROM invocations WHERE ${SCOPE} AND invocation_id = @id`).pluck(),
  };
}

/** The SQL of `ListStatements.invocations`: newest first, optionally by status and after a page cursor. */
export function invocationListSql(status: boolean, after: boolean): string {
  let where = SCOPE;
  if (status) where += " AND status = @status";
  if (after) {
    where += ` AND (created_at, invocation_id) < (SELECT created_at, invocation_id FROM invocations WHERE ${SCOPE} AND invocation_id = @after)`;
  }
  return `SELECT doc FROM invocations WHERE ${where} ORDER BY created_at DESC, invocation_id DESC LIMIT @limit`;
}
