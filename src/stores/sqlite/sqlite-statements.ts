/**
 * Every SQL statement of the SQLite store, prepared once per connection. Scope columns are in
 * every key and every WHERE, except in the cross-scope worker operations the port defines
 * (claim, heartbeat, next run time, the sequencer's unsealed scopes).
 */
import type Database from "better-sqlite3";

const SCOPE = "tenant_id = @t AND space_id = @s";
const INV_COLUMNS = "tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, created_at, doc";
const INV_VALUES = "@t, @s, @id, @action, @key, @status, @runAt, @leaseOwner, @leaseToken, @leaseExpiresAt, @attemptCount, @createdAt, @doc";
const INV_SET =
  "action = @action, idempotency_key = @key, status = @status, run_at = @runAt, lease_owner = @leaseOwner, lease_token = @leaseToken, " +
  "lease_expires_at = @leaseExpiresAt, attempt_count = @attemptCount, created_at = @createdAt, doc = @doc";
const HOLDS_LEASE = "status = 'running' AND lease_owner = @owner AND lease_token = @token";
/**
 * A settled step (`succeeded`, `failed`, `unknown`) never returns to `started`, except a `failed`
 * one restarted by a new attempt (another attemptId: a retry under a new decision).
 */
const STEP_MONOTONIC =
  "NOT (excluded.status = 'started' AND (steps.status IN ('succeeded', 'unknown') OR (steps.status = 'failed' AND steps.attempt_id = excluded.attempt_id)))";
const STEP_UPSERT =
  "ON CONFLICT (tenant_id, space_id, invocation_id, step_index) DO UPDATE SET status = excluded.status, attempt_id = excluded.attempt_id, doc = excluded.doc " +
  `WHERE ${STEP_MONOTONIC}`;
const CLAIMABLE_ORDER = "ORDER BY run_at, created_at, invocation_id, tenant_id, space_id";

/** The fixed statements, by name. */
export interface SqliteStatements {
  consumeDecision: Database.Statement;
  getConsumedDecision: Database.Statement;
  getIdempotency: Database.Statement;
  putIdempotency: Database.Statement;
  insertAttempt: Database.Statement;
  updateAttempt: Database.Statement;
  getAttempt: Database.Statement;
  journalHead: Database.Statement;
  journalIdsPresent: Database.Statement;
  insertJournal: Database.Statement;
  insertUnsealed: Database.Statement;
  listUnsealed: Database.Statement;
  journalSeqOf: Database.Statement;
  sealJournal: Database.Statement;
  unsealedScopes: Database.Statement;
  readJournal: Database.Statement;
  insertCheckpoint: Database.Statement;
  listCheckpoints: Database.Statement;
  insertInvocation: Database.Statement;
  getInvocation: Database.Statement;
  findInvocationByKey: Database.Statement;
  updateInvocation: Database.Statement;
  updateInvocationFenced: Database.Statement;
  holdsLease: Database.Statement;
  claimable: Database.Statement;
  claim: Database.Statement;
  heartbeat: Database.Statement;
  nextRunAt: Database.Statement;
  getSteps: Database.Statement;
  putStep: Database.Statement;
  putStepFenced: Database.Statement;
  insertReconciliation: Database.Statement;
  updateReconciliation: Database.Statement;
  getReconciliation: Database.Statement;
  putAuthority: Database.Statement;
  getAuthority: Database.Statement;
  listAuthorities: Database.Statement;
  putApproval: Database.Statement;
  getApproval: Database.Statement;
  putPolicyVersion: Database.Statement;
  listPolicyVersions: Database.Statement;
  insertCompletion: Database.Statement;
  updateCompletion: Database.Statement;
  listCompletions: Database.Statement;
  findStepByExternalRef: Database.Statement;
  rememberDelivery: Database.Statement;
  listOverdueParked: Database.Statement;
  listExpiredPendingApprovals: Database.Statement;
  putApiKey: Database.Statement;
  getApiKey: Database.Statement;
  listApiKeys: Database.Statement;
}

/** Prepares the fixed statements; the schema must be migrated first. */
export function prepareStatements(db: Database.Database): SqliteStatements {
  const p = (sql: string): Database.Statement => db.prepare(sql);
  return {
    consumeDecision: p(
      "INSERT INTO consumed_decisions (tenant_id, space_id, decision_id, attempt_id, consumed_at, doc) VALUES (@t, @s, @id, @attemptId, @consumedAt, @doc) " +
        "ON CONFLICT (tenant_id, space_id, decision_id) DO NOTHING",
    ),
    getConsumedDecision: p(`SELECT doc FROM consumed_decisions WHERE ${SCOPE} AND decision_id = @id`).pluck(),

    getIdempotency: p(`SELECT doc FROM idempotency WHERE ${SCOPE} AND action = @action AND idempotency_key = @key`).pluck(),
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

    journalHead: p(`SELECT seq, hash FROM journal WHERE ${SCOPE} AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1`),
    journalIdsPresent: p(`SELECT id FROM journal WHERE ${SCOPE} AND id IN (SELECT value FROM json_each(@ids))`).pluck(),
    insertJournal: p("INSERT INTO journal (tenant_id, space_id, seq, id, type, at, hash, doc) VALUES (@t, @s, @seq, @id, @type, @at, @hash, @doc)"),
    insertUnsealed: p(
      "INSERT INTO journal (tenant_id, space_id, seq, id, type, at, hash, doc) VALUES (@t, @s, NULL, @id, @type, @at, NULL, @doc) ON CONFLICT (tenant_id, space_id, id) DO NOTHING",
    ),
    // rowid is the order entries were written in; SQLite transactions are serial, so it is commit order.
    listUnsealed: p(`SELECT doc FROM journal WHERE ${SCOPE} AND seq IS NULL ORDER BY rowid LIMIT @limit`).pluck(),
    journalSeqOf: p(`SELECT seq FROM journal WHERE ${SCOPE} AND id = @id`),
    sealJournal: p(`UPDATE journal SET seq = @seq, hash = @hash, doc = @doc WHERE ${SCOPE} AND id = @id AND seq IS NULL`),
    // The sequencer's cross-scope look-up: which scopes hold unsealed entries.
    unsealedScopes: p("SELECT tenant_id AS tenantId, space_id AS spaceId, MIN(at) AS oldestAt FROM journal WHERE seq IS NULL GROUP BY tenant_id, space_id LIMIT @limit"),
    readJournal: p(`SELECT doc FROM journal WHERE ${SCOPE} AND seq >= @fromSeq ORDER BY seq LIMIT @limit`).pluck(),
    insertCheckpoint: p("INSERT INTO journal_checkpoints (tenant_id, space_id, seq, head_hash, doc) VALUES (@t, @s, @seq, @headHash, @doc)"),
    listCheckpoints: p(`SELECT doc FROM journal_checkpoints WHERE ${SCOPE} ORDER BY seq, rowid`).pluck(),

    insertInvocation: p(`INSERT INTO invocations (${INV_COLUMNS}) VALUES (${INV_VALUES})`),
    getInvocation: p(`SELECT doc FROM invocations WHERE ${SCOPE} AND invocation_id = @id`).pluck(),
    findInvocationByKey: p(`SELECT doc FROM invocations WHERE ${SCOPE} AND action = @action AND idempotency_key = @key`).pluck(),
    updateInvocation: p(`UPDATE invocations SET ${INV_SET} WHERE ${SCOPE} AND invocation_id = @id`),
    updateInvocationFenced: p(`UPDATE invocations SET ${INV_SET} WHERE ${SCOPE} AND invocation_id = @id AND ${HOLDS_LEASE}`),
    holdsLease: p(`SELECT 1 FROM invocations WHERE ${SCOPE} AND invocation_id = @id AND ${HOLDS_LEASE}`).pluck(),
    claimable: p(
      "SELECT doc FROM (" +
        `SELECT * FROM (SELECT * FROM invocations WHERE status = 'queued' AND run_at <= @now ${CLAIMABLE_ORDER} LIMIT @limit) ` +
        "UNION ALL " +
        `SELECT * FROM (SELECT * FROM invocations WHERE status = 'running' AND lease_expires_at <= @now ${CLAIMABLE_ORDER} LIMIT @limit)` +
        `) ${CLAIMABLE_ORDER} LIMIT @limit`,
    ).pluck(),
    claim: p(
      "UPDATE invocations SET status = 'running', lease_owner = @owner, lease_token = @token, lease_expires_at = @leaseExpiresAt, " +
        `attempt_count = @attemptCount, doc = @doc WHERE ${SCOPE} AND invocation_id = @id`,
    ),
    heartbeat: p(
      "UPDATE invocations SET lease_expires_at = @leaseExpiresAt, doc = json_set(doc, '$.leaseExpiresAt', @leaseExpiresAt) " +
        "WHERE status = 'running' AND lease_owner = @owner AND lease_expires_at > @now",
    ),
    nextRunAt: p("SELECT MIN(run_at) FROM invocations WHERE status = 'queued'").pluck(),

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

    insertReconciliation: p(
      "INSERT INTO reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc) " +
        "VALUES (@t, @s, @id, @invocationId, @status, @createdAt, @doc)",
    ),
    updateReconciliation: p(
      `UPDATE reconciliations SET invocation_id = @invocationId, status = @status, created_at = @createdAt, doc = @doc WHERE ${SCOPE} AND reconciliation_id = @id`,
    ),
    getReconciliation: p(`SELECT doc FROM reconciliations WHERE ${SCOPE} AND reconciliation_id = @id`).pluck(),

    putAuthority: p(
      "INSERT INTO authorities (tenant_id, space_id, authority_ref, status, created_at, doc) VALUES (@t, @s, @id, @status, @createdAt, @doc) " +
        "ON CONFLICT (tenant_id, space_id, authority_ref) DO UPDATE SET status = excluded.status, created_at = excluded.created_at, doc = excluded.doc",
    ),
    getAuthority: p(`SELECT doc FROM authorities WHERE ${SCOPE} AND authority_ref = @id`).pluck(),
    listAuthorities: p(`SELECT doc FROM authorities WHERE ${SCOPE} ORDER BY rowid LIMIT @limit`).pluck(),
    putApproval: p(
      "INSERT INTO approvals (tenant_id, space_id, approval_id, status, created_at, doc) VALUES (@t, @s, @id, @status, @createdAt, @doc) " +
        "ON CONFLICT (tenant_id, space_id, approval_id) DO UPDATE SET status = excluded.status, created_at = excluded.created_at, doc = excluded.doc",
    ),
    getApproval: p(`SELECT doc FROM approvals WHERE ${SCOPE} AND approval_id = @id`).pluck(),

    putPolicyVersion: p(
      "INSERT INTO policy_versions (tenant_id, space_id, version, doc) VALUES (@t, @s, @version, @doc) " +
        "ON CONFLICT (tenant_id, space_id, version) DO UPDATE SET doc = excluded.doc",
    ),
    listPolicyVersions: p(`SELECT doc FROM policy_versions WHERE ${SCOPE} ORDER BY version`).pluck(),
    insertCompletion: p(
      "INSERT INTO completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc) VALUES (@t, @s, @connector, @id, @ref, @receivedAt, @doc)",
    ),
    updateCompletion: p(`UPDATE completions SET external_ref = @ref, received_at = @receivedAt, doc = @doc WHERE ${SCOPE} AND connector = @connector AND completion_id = @id`),
    listCompletions: p(`SELECT doc FROM completions WHERE ${SCOPE} AND connector = @connector AND external_ref = @ref ORDER BY received_at, rowid`).pluck(),
    findStepByExternalRef: p(
      `SELECT doc FROM steps WHERE ${SCOPE} AND json_extract(doc, '$.connector') = @connector AND json_extract(doc, '$.externalRef') = @ref LIMIT 1`,
    ).pluck(),
    rememberDelivery: p(
      "INSERT INTO deliveries (tenant_id, space_id, connector, delivery_id, seen_at) VALUES (@t, @s, @connector, @id, @at) " +
        "ON CONFLICT (tenant_id, space_id, connector, delivery_id) DO NOTHING",
    ),
    listOverdueParked: p(
      "SELECT doc FROM invocations WHERE status = 'parked' AND json_extract(doc, '$.deadlineAt') <= @now " +
        "AND json_extract(doc, '$.overdueAt') IS NULL ORDER BY json_extract(doc, '$.deadlineAt') LIMIT @limit",
    ).pluck(),
    putApiKey: p(
      "INSERT INTO api_keys (key_id, tenant_id, created_at, doc) VALUES (@id, @tenant, @createdAt, @doc) " +
        "ON CONFLICT (key_id) DO UPDATE SET doc = excluded.doc WHERE api_keys.tenant_id = excluded.tenant_id",
    ),
    getApiKey: p("SELECT doc FROM api_keys WHERE key_id = @id").pluck(),
    listApiKeys: p("SELECT doc FROM api_keys WHERE tenant_id = @tenant ORDER BY created_at, key_id").pluck(),
    listExpiredPendingApprovals: p(
      "SELECT doc FROM approvals WHERE status = 'pending' AND json_extract(doc, '$.expiresAt') <= @now ORDER BY json_extract(doc, '$.expiresAt') LIMIT @limit",
    ).pluck(),
  };
}

/**
 * Statements whose WHERE clause depends on which optional filters a list call uses, prepared on
 * first use per combination and cached (a handful of variants each).
 */
export class ListStatements {
  readonly #db: Database.Database;
  readonly #cache = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.#db = db;
  }

  /**
   * Newest first: (createdAt, invocationId) descending. `after` is a page cursor: only rows that
   * come after it in this order (older ones); an unknown cursor yields nothing.
   */
  invocations(status: boolean, after: boolean): Database.Statement {
    return this.#get(`inv:${status}:${after}`, () => {
      let where = SCOPE;
      if (status) where += " AND status = @status";
      if (after) {
        where += ` AND (created_at, invocation_id) < (SELECT created_at, invocation_id FROM invocations WHERE ${SCOPE} AND invocation_id = @after)`;
      }
      return `SELECT doc FROM invocations WHERE ${where} ORDER BY created_at DESC, invocation_id DESC LIMIT @limit`;
    });
  }

  /** In scope order (seq). */
  attempts(invocation: boolean): Database.Statement {
    return this.#get(`att:${invocation}`, () => {
      const where = `${SCOPE} AND seq > @afterSeq` + (invocation ? " AND invocation_id = @invocationId" : "");
      return `SELECT seq, doc FROM attempts WHERE ${where} ORDER BY seq LIMIT @limit`;
    }, false);
  }

  /** In insertion order. */
  reconciliations(status: boolean, invocation: boolean): Database.Statement {
    return this.#get(`rec:${status}:${invocation}`, () => {
      const where = SCOPE + (status ? " AND status = @status" : "") + (invocation ? " AND invocation_id = @invocationId" : "");
      return `SELECT doc FROM reconciliations WHERE ${where} ORDER BY rowid LIMIT @limit`;
    });
  }

  /** In insertion order. */
  approvals(status: boolean): Database.Statement {
    return this.#get(`apr:${status}`, () => {
      const where = SCOPE + (status ? " AND status = @status" : "");
      return `SELECT doc FROM approvals WHERE ${where} ORDER BY rowid LIMIT @limit`;
    });
  }

  #get(key: string, sql: () => string, pluck = true): Database.Statement {
    let stmt = this.#cache.get(key);
    if (stmt === undefined) {
      stmt = this.#db.prepare(sql()).pluck(pluck);
      this.#cache.set(key, stmt);
    }
    return stmt;
  }
}
