/**
 * Numbered schema migrations for the PostgreSQL store. SQL is the source of truth: each entry is
 * one version, applied once, in order, in its own transaction, under the migration lock (see
 * `postgres-migrate.ts`). Never edit an applied migration: add a new one.
 *
 * Layout: every record is kept whole as a `json` document (`doc`), and the fields the store
 * filters, orders, constrains or fences on are indexed columns. Every table starts with the scope
 * (`tenant_id`, `space_id`) and every key includes it. Times are epoch milliseconds (`bigint`).
 *
 * `json`, not `jsonb`: documents are read back exactly as written. `jsonb` refuses `\u0000` and
 * lone surrogates in strings (which JSON and the other stores accept) and rewrites number text;
 * the store never queries inside a document, so `jsonb`'s operators would buy nothing.
 *
 * Text columns use the "C" collation: ids order by code point on every server, as in the other
 * stores, whatever the database's locale.
 *
 * Invocation columns that workers change without rewriting the document (status, lease, attempt
 * count, run time, updatedAt) are authoritative over the copy inside `doc`.
 */

import { BATCHABLE, DOC_TEXT, admitClaimedSql, batchFunctionsSql, claimInBatchSql, claimNextSql, keysOnceSql, literalBatchSql } from "./postgres-calls.js";

/** One numbered migration. */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

/** The channel `onWake` listens on; the trigger below notifies it when work becomes runnable. */
export const WAKE_CHANNEL = "writ_wake";

/**
 * The end of `writ_claim` after its picks (a CTE `picked` of the rows to claim): number them, stamp
 * the leases, write the claims' journal entries (the same document as claimedEntry in
 * core/transitions.ts) and answer the claimed rows in claim order. Shared by migrations 6 and 8,
 * whose text it is part of: changing it changes what a fresh database gets from those migrations,
 * so it stays as it is; a later change of the claim goes in a new migration.
 */
const CLAIM_FUNCTION_TAIL = `   ), numbered AS (
     SELECT tenant_id, space_id, invocation_id, row_number() OVER (ORDER BY run_at, created_at, invocation_id, tenant_id, space_id) AS rn FROM picked
   ), claimed AS (
     UPDATE writ_invocations i
        SET status = 'running', lease_owner = p_owner, lease_token = t.token, lease_expires_at = p_now + p_lease_ms,
            attempt_count = i.attempt_count + 1, updated_at = p_now, rev = i.rev + 1
       FROM numbered n JOIN unnest(p_tokens) WITH ORDINALITY AS t(token, ord) ON t.ord = n.rn
      WHERE i.tenant_id = n.tenant_id AND i.space_id = n.space_id AND i.invocation_id = n.invocation_id
     RETURNING n.rn, i.tenant_id, i.space_id, i.invocation_id, i.status, i.run_at, i.lease_owner, i.lease_token, i.lease_expires_at, i.attempt_count, i.updated_at, i.rev, i.doc
   ), journaled AS (
     INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc)
     SELECT c.tenant_id, c.space_id, 'invocation.claimed:' || c.invocation_id || ':' || c.lease_token, 'invocation.claimed', p_now,
            json_build_object('tenantId', c.tenant_id, 'spaceId', c.space_id, 'id', 'invocation.claimed:' || c.invocation_id || ':' || c.lease_token,
                              'at', p_now, 'type', 'invocation.claimed', 'refs', json_build_object('invocationId', c.invocation_id),
                              'data', json_build_object('owner', p_owner, 'attemptCount', c.attempt_count))
       FROM claimed c ORDER BY c.tenant_id, c.space_id, c.rn
     ON CONFLICT (tenant_id, space_id, id) DO NOTHING
   )
  SELECT coalesce(json_agg(json_build_object('status', status, 'run_at', run_at, 'lease_owner', lease_owner, 'lease_token', lease_token,
                                             'lease_expires_at', lease_expires_at, 'attempt_count', attempt_count, 'updated_at', updated_at,
                                             'rev', rev, 'doc', doc) ORDER BY rn), '[]')
    INTO v_out FROM claimed;
  RETURN v_out;
END
$$;
`;

const INITIAL_SCHEMA = `
CREATE TABLE writ_invocations (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  invocation_id text COLLATE "C" NOT NULL,
  action text COLLATE "C" NOT NULL,
  idempotency_key text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  run_at bigint NOT NULL,
  lease_owner text COLLATE "C",
  lease_token text COLLATE "C",
  lease_expires_at bigint,
  attempt_count integer NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, invocation_id),
  UNIQUE (tenant_id, space_id, action, idempotency_key)
);
CREATE INDEX writ_invocations_by_created ON writ_invocations (tenant_id, space_id, created_at DESC, invocation_id DESC);
CREATE INDEX writ_invocations_by_status ON writ_invocations (tenant_id, space_id, status, created_at DESC, invocation_id DESC);
CREATE INDEX writ_invocations_queued ON writ_invocations (run_at, created_at, invocation_id) WHERE status = 'queued';
CREATE INDEX writ_invocations_leases ON writ_invocations (lease_expires_at) WHERE status = 'running';
CREATE INDEX writ_invocations_lease_owner ON writ_invocations (lease_owner) WHERE status = 'running';

CREATE TABLE writ_steps (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  invocation_id text COLLATE "C" NOT NULL,
  step_index integer NOT NULL,
  status text COLLATE "C" NOT NULL,
  attempt_id text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, invocation_id, step_index)
);

-- id: one global order of all attempts; seq: the scope's own gap-free numbering (1, 2, 3, ...).
CREATE TABLE writ_attempts (
  id bigserial NOT NULL UNIQUE,
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  attempt_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  invocation_id text COLLATE "C",
  state text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, attempt_id),
  UNIQUE (tenant_id, space_id, seq)
);
CREATE INDEX writ_attempts_by_invocation ON writ_attempts (tenant_id, space_id, invocation_id, seq);

-- The last attempt seq handed out per scope; its row lock orders concurrent inserts of one scope.
CREATE TABLE writ_attempt_seqs (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  last_seq bigint NOT NULL,
  PRIMARY KEY (tenant_id, space_id)
);

CREATE TABLE writ_consumed_decisions (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  decision_id text COLLATE "C" NOT NULL,
  attempt_id text COLLATE "C" NOT NULL,
  consumed_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, decision_id)
);

CREATE TABLE writ_idempotency (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  action text COLLATE "C" NOT NULL,
  idempotency_key text COLLATE "C" NOT NULL,
  state text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, action, idempotency_key)
);

CREATE TABLE writ_approvals (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  approval_id text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  invocation_id text COLLATE "C",
  created_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, approval_id)
);
CREATE INDEX writ_approvals_by_status ON writ_approvals (tenant_id, space_id, status, created_at);

CREATE TABLE writ_authorities (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  authority_ref text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, authority_ref)
);

CREATE TABLE writ_reconciliations (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  reconciliation_id text COLLATE "C" NOT NULL,
  invocation_id text COLLATE "C" NOT NULL,
  status text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, reconciliation_id)
);
CREATE INDEX writ_reconciliations_by_invocation ON writ_reconciliations (tenant_id, space_id, invocation_id);
CREATE INDEX writ_reconciliations_by_status ON writ_reconciliations (tenant_id, space_id, status, created_at);

CREATE TABLE writ_journal (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  hash text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, seq),
  UNIQUE (tenant_id, space_id, id)
);

-- Several checkpoints may state the same seq (e.g. signed again with a new key); id keeps their order.
CREATE TABLE writ_journal_checkpoints (
  id bigserial PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  head_hash text COLLATE "C" NOT NULL,
  doc json NOT NULL
);
CREATE INDEX writ_journal_checkpoints_by_seq ON writ_journal_checkpoints (tenant_id, space_id, seq, id);

-- Wake-up hint for workers (LISTEN ${WAKE_CHANNEL}): sent at commit when an invocation is queued,
-- whether by admission, a retry, a resume or an operator. PostgreSQL folds identical
-- notifications of one transaction into one.
CREATE FUNCTION writ_notify_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('${WAKE_CHANNEL}', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER writ_invocations_wake
  AFTER INSERT OR UPDATE OF status, run_at ON writ_invocations
  FOR EACH ROW WHEN (NEW.status = 'queued')
  EXECUTE FUNCTION writ_notify_wake();
`;

/**
 * External completions (docs/completions.md), webhook delivery ids, policy versions (docs/approvals.md, Versions per scope), and the
 * columns the sweeps and completion matching search by. Existing rows get the new columns from
 * their documents.
 */
const COMPLETIONS_POLICIES_SWEEPS = `
CREATE TABLE writ_policy_versions (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  status text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, version)
);

-- id keeps arrival order among completions received in the same millisecond.
CREATE TABLE writ_completions (
  id bigserial NOT NULL UNIQUE,
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  connector text COLLATE "C" NOT NULL,
  completion_id text COLLATE "C" NOT NULL,
  external_ref text COLLATE "C" NOT NULL,
  received_at bigint NOT NULL,
  doc json NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, completion_id)
);
CREATE INDEX writ_completions_by_ref ON writ_completions (tenant_id, space_id, connector, external_ref, received_at, id);

CREATE TABLE writ_deliveries (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  connector text COLLATE "C" NOT NULL,
  delivery_id text COLLATE "C" NOT NULL,
  received_at bigint NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, delivery_id)
);

ALTER TABLE writ_steps ADD COLUMN connector text COLLATE "C", ADD COLUMN external_ref text COLLATE "C";
UPDATE writ_steps SET connector = doc->>'connector', external_ref = doc->>'externalRef';
CREATE INDEX writ_steps_by_ref ON writ_steps (tenant_id, space_id, connector, external_ref) WHERE external_ref IS NOT NULL;

ALTER TABLE writ_invocations ADD COLUMN deadline_at bigint, ADD COLUMN overdue_at bigint;
UPDATE writ_invocations SET deadline_at = (doc->>'deadlineAt')::bigint, overdue_at = (doc->>'overdueAt')::bigint;
CREATE INDEX writ_invocations_parked ON writ_invocations (deadline_at, created_at, invocation_id) WHERE status = 'parked' AND overdue_at IS NULL;

ALTER TABLE writ_approvals ADD COLUMN expires_at bigint;
UPDATE writ_approvals SET expires_at = (doc->>'expiresAt')::bigint;
ALTER TABLE writ_approvals ALTER COLUMN expires_at SET NOT NULL;
CREATE INDEX writ_approvals_pending ON writ_approvals (expires_at, created_at, approval_id) WHERE status = 'pending';
`;

/** Tenant-level API keys (docs/http-api.md, Authentication and roles), found by key id; only a hash of the secret is stored. */
const API_KEYS = `
CREATE TABLE writ_api_keys (
  key_id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  doc json NOT NULL
);
CREATE INDEX writ_api_keys_by_tenant ON writ_api_keys (tenant_id, created_at, key_id);
`;

/**
 * The journal off the commit path (docs/journal.md): a transition inserts its entries unsealed
 * (seq and hash NULL, \`pos\` from a sequence: the order they were written in, not the order they
 * commit in) and never takes the chain lock; the sequencer later sets seq, hash and the sealed
 * document under the scope's advisory lock. Ids stay unique per scope across sealed and unsealed
 * entries; seqs are unique among sealed ones.
 */
const UNSEALED_JOURNAL = `
ALTER TABLE writ_journal DROP CONSTRAINT writ_journal_pkey;
ALTER TABLE writ_journal ALTER COLUMN seq DROP NOT NULL, ALTER COLUMN hash DROP NOT NULL;
ALTER TABLE writ_journal ADD COLUMN pos bigserial NOT NULL;
ALTER TABLE writ_journal ADD CONSTRAINT writ_journal_sealed_whole CHECK ((seq IS NULL) = (hash IS NULL));
CREATE UNIQUE INDEX writ_journal_by_seq ON writ_journal (tenant_id, space_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX writ_journal_unsealed ON writ_journal (tenant_id, space_id, pos) WHERE seq IS NULL;
`;

/**
 * Row revisions (docs/stores.md, "Conditional writes"): every write of an invocation, approval,
 * reconciliation or completion is conditional on the revision its writer read, and moves it on.
 * Existing rows start at 0 (their documents carry no rev; readers take a missing one as 0).
 */
const ROW_REVISIONS = `
ALTER TABLE writ_invocations ADD COLUMN rev bigint NOT NULL DEFAULT 0;
ALTER TABLE writ_approvals ADD COLUMN rev bigint NOT NULL DEFAULT 0;
ALTER TABLE writ_reconciliations ADD COLUMN rev bigint NOT NULL DEFAULT 0;
ALTER TABLE writ_completions ADD COLUMN rev bigint NOT NULL DEFAULT 0;
`;

/**
 * `writ_admit`: the admission, or the invocation already admitted under its key (migration 6;
 * `lockFound` locks the found row, migration 26, ADMIT_REPLAY_DURABLE below).
 */
function admitFunctionSql(create: "CREATE" | "CREATE OR REPLACE", lockFound: string): string {
  return `${create} FUNCTION writ_admit(p_t text, p_s text, p_inv text, p_action text, p_key text, p_status text, p_run_at bigint, p_lease_owner text, p_lease_token text,
    p_lease_expires_at bigint, p_attempt_count integer, p_created_at bigint, p_updated_at bigint, p_deadline_at bigint, p_overdue_at bigint, p_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE v_found json;
BEGIN
  INSERT INTO writ_invocations (tenant_id, space_id, invocation_id, action, idempotency_key, status, run_at, lease_owner, lease_token, lease_expires_at,
                                attempt_count, created_at, updated_at, deadline_at, overdue_at, doc, rev)
  VALUES (p_t, p_s, p_inv, p_action, p_key, p_status, p_run_at, p_lease_owner, p_lease_token, p_lease_expires_at,
          p_attempt_count, p_created_at, p_updated_at, p_deadline_at, p_overdue_at, p_doc, 1)
  ON CONFLICT DO NOTHING;
  IF FOUND THEN
    PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
    RETURN NULL;
  END IF;
  SELECT row_to_json(r) INTO v_found FROM (
    SELECT status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, updated_at, rev, doc
      FROM writ_invocations WHERE tenant_id = p_t AND space_id = p_s AND action = p_action AND idempotency_key = p_key${lockFound}) r;
  IF v_found IS NULL THEN
    RAISE EXCEPTION 'invocation % already exists', p_inv USING ERRCODE = 'WRCNF';
  END IF;
  RETURN v_found;
END
$$;
`;
}

/**
 * The hot transitions as server-side functions (docs/stores.md, "Transitions"): each one whole
 * state change in one statement, so a client pays one round trip and one commit for it. They
 * check and lock in the store's one lock order (invocation row, logical keys, attempt counter;
 * unsealed journal entries take no lock), decide nothing a caller did not ask (the core decides
 * and says what it expects), and raise only for what must roll back:
 *   WRLSE lease lost, WRCNF a settled step asked to go back, WRSTL a row that moved on.
 * A `begin` whose expectation fails writes nothing and answers what it found instead.
 */
const TRANSITIONS = `
CREATE FUNCTION writ_put_unsealed(p_t text, p_s text, p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc)
  SELECT p_t, p_s, e.id, e.type, e.at, e.doc
    FROM unnest(p_ids, p_types, p_ats, p_docs) WITH ORDINALITY AS e(id, type, at, doc, n)
   ORDER BY e.n
  ON CONFLICT (tenant_id, space_id, id) DO NOTHING
$$;

CREATE FUNCTION writ_hold_lease(p_t text, p_s text, p_inv text, p_owner text, p_token text) RETURNS boolean
LANGUAGE sql AS $$
  SELECT EXISTS (SELECT 1 FROM writ_invocations
                  WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_inv
                    AND status = 'running' AND lease_owner = p_owner AND lease_token = p_token
                    FOR UPDATE)
$$;

-- The monotonic step upsert of the store (a settled step never returns to started, except a failed
-- one restarted by a new attempt); raises WRCNF when refused.
CREATE FUNCTION writ_put_step(p_t text, p_s text, p_inv text, p_index integer, p_status text, p_attempt text, p_connector text, p_ref text, p_doc json) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO writ_steps (tenant_id, space_id, invocation_id, step_index, status, attempt_id, connector, external_ref, doc)
  VALUES (p_t, p_s, p_inv, p_index, p_status, p_attempt, p_connector, p_ref, p_doc)
  ON CONFLICT (tenant_id, space_id, invocation_id, step_index) DO UPDATE
     SET status = excluded.status, attempt_id = excluded.attempt_id, connector = excluded.connector, external_ref = excluded.external_ref, doc = excluded.doc
   WHERE NOT (excluded.status = 'started' AND (writ_steps.status IN ('succeeded', 'unknown')
              OR (writ_steps.status = 'failed' AND writ_steps.attempt_id = excluded.attempt_id)));
  IF NOT FOUND THEN
    RAISE EXCEPTION 'step % of invocation % is settled and cannot return to started in this attempt', p_index, p_inv USING ERRCODE = 'WRCNF';
  END IF;
END
$$;

-- Numbers the attempt (the scope's counter row, locked until commit) and inserts it; its seq.
CREATE FUNCTION writ_add_attempt(p_t text, p_s text, p_attempt text, p_inv text, p_state text, p_doc json) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_seq bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM writ_attempts WHERE tenant_id = p_t AND space_id = p_s AND attempt_id = p_attempt) THEN
    RAISE EXCEPTION 'attempt % already exists', p_attempt USING ERRCODE = 'WRCNF';
  END IF;
  INSERT INTO writ_attempt_seqs AS c (tenant_id, space_id, last_seq) VALUES (p_t, p_s, 1)
  ON CONFLICT (tenant_id, space_id) DO UPDATE SET last_seq = c.last_seq + 1
  RETURNING last_seq INTO v_seq;
  INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc) VALUES (p_t, p_s, p_attempt, v_seq, p_inv, p_state, p_doc);
  RETURN v_seq;
END
$$;

${admitFunctionSql("CREATE", "")}
CREATE FUNCTION writ_begin(p_t text, p_s text, p_inv text, p_owner text, p_token text, p_lease_inv text, p_locks bigint[],
    p_expect_idem boolean, p_idem_state text, p_idem_attempt text, p_idem_updated bigint, p_expect_steps text,
    p_authority text, p_authority_seen text, p_approval text, p_approval_seen bigint,
    p_decision text, p_consumed_at bigint, p_consumed_doc json,
    p_action text, p_key text, p_new_idem_state text, p_idem_doc json,
    p_step_index integer, p_step_status text, p_step_connector text, p_step_ref text, p_step_doc json,
    p_attempt text, p_attempt_state text, p_attempt_doc json,
    p_sup_attempt text, p_sup_state text, p_sup_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_idem_state text; v_idem json; v_consumed boolean; v_steps text; v_auth json; v_ap_rev bigint; v_ok boolean; v_seq bigint;
BEGIN
  IF p_owner IS NOT NULL AND NOT writ_hold_lease(p_t, p_s, p_lease_inv, p_owner, p_token) THEN
    RETURN json_build_object('lease', false);
  END IF;
  PERFORM pg_advisory_xact_lock(k) FROM unnest(p_locks) AS k;
  SELECT state, doc INTO v_idem_state, v_idem FROM writ_idempotency WHERE tenant_id = p_t AND space_id = p_s AND action = p_action AND idempotency_key = p_key;
  v_consumed := EXISTS (SELECT 1 FROM writ_consumed_decisions WHERE tenant_id = p_t AND space_id = p_s AND decision_id = p_decision);
  SELECT coalesce(string_agg(step_index || ':' || status || ':' || attempt_id, ',' ORDER BY step_index), '') INTO v_steps
    FROM writ_steps WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_inv;
  v_ok := NOT v_consumed AND v_steps = p_expect_steps;
  IF p_expect_idem THEN
    v_ok := v_ok AND v_idem IS NOT NULL AND v_idem_state = p_idem_state AND (v_idem->>'attemptId') = p_idem_attempt AND (v_idem->>'updatedAt')::bigint = p_idem_updated;
  ELSE
    v_ok := v_ok AND v_idem IS NULL;
  END IF;
  IF p_authority IS NOT NULL THEN
    SELECT doc INTO v_auth FROM writ_authorities WHERE tenant_id = p_t AND space_id = p_s AND authority_ref = p_authority;
    v_ok := v_ok AND ((v_auth->>'status') || ':' || coalesce(v_auth->>'expiresAt', '') || ':' || (v_auth->>'updatedAt')) IS NOT DISTINCT FROM p_authority_seen;
  END IF;
  IF p_approval IS NOT NULL THEN
    SELECT rev INTO v_ap_rev FROM writ_approvals WHERE tenant_id = p_t AND space_id = p_s AND approval_id = p_approval;
    v_ok := v_ok AND v_ap_rev IS NOT DISTINCT FROM p_approval_seen;
  END IF;
  IF NOT v_ok THEN
    RETURN json_build_object(
      'lease', true, 'started', false, 'idempotency', v_idem, 'consumed', v_consumed,
      'steps', (SELECT coalesce(json_agg(doc ORDER BY step_index), '[]') FROM writ_steps WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_inv),
      'authority', v_auth,
      'approval', (SELECT json_build_object('rev', rev, 'doc', doc) FROM writ_approvals WHERE tenant_id = p_t AND space_id = p_s AND approval_id = p_approval),
      'attempts', (SELECT coalesce(json_agg(json_build_object('seq', seq, 'doc', doc)), '[]') FROM writ_attempts
                    WHERE tenant_id = p_t AND space_id = p_s AND attempt_id IN (v_idem->>'attemptId', v_idem->>'resultAttemptId')));
  END IF;
  IF p_sup_attempt IS NOT NULL THEN
    UPDATE writ_attempts SET state = p_sup_state, doc = p_sup_doc WHERE tenant_id = p_t AND space_id = p_s AND attempt_id = p_sup_attempt AND state = 'EXECUTING';
    IF NOT FOUND THEN
      RAISE EXCEPTION 'attempt % is no longer executing', p_sup_attempt USING ERRCODE = 'WRSTL';
    END IF;
  END IF;
  INSERT INTO writ_consumed_decisions (tenant_id, space_id, decision_id, attempt_id, consumed_at, doc) VALUES (p_t, p_s, p_decision, p_attempt, p_consumed_at, p_consumed_doc);
  INSERT INTO writ_idempotency (tenant_id, space_id, action, idempotency_key, state, doc) VALUES (p_t, p_s, p_action, p_key, p_new_idem_state, p_idem_doc)
  ON CONFLICT (tenant_id, space_id, action, idempotency_key) DO UPDATE SET state = excluded.state, doc = excluded.doc;
  PERFORM writ_put_step(p_t, p_s, p_inv, p_step_index, p_step_status, p_attempt, p_step_connector, p_step_ref, p_step_doc);
  v_seq := writ_add_attempt(p_t, p_s, p_attempt, p_inv, p_attempt_state, p_attempt_doc);
  PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
  RETURN json_build_object('lease', true, 'started', true, 'seq', v_seq);
END
$$;

CREATE FUNCTION writ_record_attempt(p_t text, p_s text, p_inv text, p_owner text, p_token text, p_attempt text, p_attempt_inv text, p_state text, p_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_seq bigint;
BEGIN
  IF p_owner IS NOT NULL AND NOT writ_hold_lease(p_t, p_s, p_inv, p_owner, p_token) THEN
    RAISE EXCEPTION 'lease lost on invocation %', p_inv USING ERRCODE = 'WRLSE';
  END IF;
  v_seq := writ_add_attempt(p_t, p_s, p_attempt, p_attempt_inv, p_state, p_doc);
  PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
  RETURN v_seq;
END
$$;

CREATE FUNCTION writ_advance(p_t text, p_s text, p_inv text, p_owner text, p_token text, p_lease_inv text,
    p_done_index integer, p_done_status text, p_done_attempt text, p_done_connector text, p_done_ref text, p_done_doc json,
    p_next_index integer, p_next_status text, p_next_attempt text, p_next_connector text, p_next_ref text, p_next_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_owner IS NOT NULL AND NOT writ_hold_lease(p_t, p_s, p_lease_inv, p_owner, p_token) THEN
    RAISE EXCEPTION 'lease lost on invocation %', p_lease_inv USING ERRCODE = 'WRLSE';
  END IF;
  PERFORM writ_put_step(p_t, p_s, p_inv, p_done_index, p_done_status, p_done_attempt, p_done_connector, p_done_ref, p_done_doc);
  PERFORM writ_put_step(p_t, p_s, p_inv, p_next_index, p_next_status, p_next_attempt, p_next_connector, p_next_ref, p_next_doc);
  PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
END
$$;

-- The claim and its journal entries (the same document as claimedEntry in core/transitions.ts).
CREATE FUNCTION writ_claim(p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_tokens text[]) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE v_out json;
BEGIN
  WITH picked AS MATERIALIZED (
     SELECT tenant_id, space_id, invocation_id, run_at, created_at FROM writ_invocations
      WHERE (status = 'queued' AND run_at <= p_now) OR (status = 'running' AND lease_expires_at <= p_now)
      ORDER BY run_at, created_at, invocation_id, tenant_id, space_id
      LIMIT p_limit
      FOR UPDATE SKIP LOCKED
${CLAIM_FUNCTION_TAIL}
-- A seal that applies only while the sealed head is still p_head (the sequencer read it without a
-- lock); 0 rows (nothing written) when another sequencer sealed first.
CREATE FUNCTION writ_seal_if_head(p_t text, p_s text, p_lock bigint, p_head bigint, p_ids text[], p_seqs bigint[], p_hashes text[], p_docs json[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE v_n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock);
  IF (SELECT coalesce(max(seq), 0) FROM writ_journal WHERE tenant_id = p_t AND space_id = p_s AND seq IS NOT NULL) <> p_head THEN
    RETURN 0;
  END IF;
  UPDATE writ_journal j SET seq = b.seq, hash = b.hash, doc = b.doc
    FROM unnest(p_ids, p_seqs, p_hashes, p_docs) AS b(id, seq, hash, doc)
   WHERE j.tenant_id = p_t AND j.space_id = p_s AND j.id = b.id AND j.seq IS NULL;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> coalesce(array_length(p_ids, 1), 0) THEN
    RAISE EXCEPTION 'journal seal names an entry that is not unsealed' USING ERRCODE = 'WRCNF';
  END IF;
  RETURN v_n;
END
$$;

CREATE FUNCTION writ_settle(p_t text, p_s text, p_inv text, p_owner text, p_token text, p_lease_inv text, p_locks bigint[],
    p_step_index integer, p_step_status text, p_step_attempt text, p_step_connector text, p_step_ref text, p_step_doc json,
    p_attempt text, p_attempt_inv text, p_attempt_state text, p_attempt_doc json,
    p_action text, p_key text, p_idem_state text, p_idem_doc json,
    p_write_inv boolean, p_status text, p_run_at bigint, p_lease_owner text, p_lease_token text, p_lease_expires_at bigint, p_attempt_count integer,
    p_created_at bigint, p_updated_at bigint, p_deadline_at bigint, p_overdue_at bigint, p_inv_doc json,
    p_rec text, p_rec_status text, p_rec_created_at bigint, p_rec_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_rev bigint;
BEGIN
  IF p_owner IS NOT NULL AND NOT writ_hold_lease(p_t, p_s, p_lease_inv, p_owner, p_token) THEN
    RAISE EXCEPTION 'lease lost on invocation %', p_lease_inv USING ERRCODE = 'WRLSE';
  END IF;
  PERFORM pg_advisory_xact_lock(k) FROM unnest(p_locks) AS k;
  PERFORM writ_put_step(p_t, p_s, p_inv, p_step_index, p_step_status, p_step_attempt, p_step_connector, p_step_ref, p_step_doc);
  UPDATE writ_attempts SET invocation_id = p_attempt_inv, state = p_attempt_state, doc = p_attempt_doc WHERE tenant_id = p_t AND space_id = p_s AND attempt_id = p_attempt;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no attempt % in this scope', p_attempt USING ERRCODE = 'WRNFD';
  END IF;
  INSERT INTO writ_idempotency (tenant_id, space_id, action, idempotency_key, state, doc) VALUES (p_t, p_s, p_action, p_key, p_idem_state, p_idem_doc)
  ON CONFLICT (tenant_id, space_id, action, idempotency_key) DO UPDATE SET state = excluded.state, doc = excluded.doc;
  IF p_write_inv THEN
    UPDATE writ_invocations SET status = p_status, run_at = p_run_at, lease_owner = p_lease_owner, lease_token = p_lease_token, lease_expires_at = p_lease_expires_at,
           attempt_count = p_attempt_count, created_at = p_created_at, updated_at = p_updated_at, deadline_at = p_deadline_at, overdue_at = p_overdue_at,
           doc = p_inv_doc, rev = rev + 1
     WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_lease_inv AND status = 'running' AND lease_owner = p_owner AND lease_token = p_token
    RETURNING rev INTO v_rev;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'lease lost on invocation %', p_lease_inv USING ERRCODE = 'WRLSE';
    END IF;
  END IF;
  IF p_rec IS NOT NULL THEN
    INSERT INTO writ_reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc, rev)
    VALUES (p_t, p_s, p_rec, p_lease_inv, p_rec_status, p_rec_created_at, p_rec_doc, 1);
  END IF;
  PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
  RETURN v_rev;
END
$$;
`;

/** Circuit breakers (docs/host.md, "Circuit breakers"): one row per (scope, connector, operation). */
const BREAKERS = `
CREATE TABLE writ_breakers (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  connector text COLLATE "C" NOT NULL,
  operation text COLLATE "C" NOT NULL,
  doc json NOT NULL,
  rev bigint NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, operation)
);
`;

/**
 * The hot path as history grows (docs/stores.md, "Hot statements and history"):
 * - the claim picks due queued rows and lapsed leases apart, each by a plain scan of its own
 *   partial index in index order (an OR of both was a bitmap scan over every entry of both
 *   indexes, dead ones included: its cost grew with every ended invocation until vacuum ran);
 * - the tables every invocation writes are vacuumed and analyzed by autovacuum after 2% of their
 *   rows changed (PostgreSQL's default is 20% for vacuum and 10% for analyze: on a large history
 *   that lets dead rows of the live work pile up for hours).
 */
const HOT_PATH_HISTORY = `
CREATE OR REPLACE FUNCTION writ_claim(p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_tokens text[]) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE v_out json;
BEGIN
  WITH due AS MATERIALIZED (
     SELECT tenant_id, space_id, invocation_id, run_at, created_at FROM writ_invocations
      WHERE status = 'queued' AND run_at <= p_now
      ORDER BY run_at, created_at, invocation_id
      LIMIT p_limit
      FOR UPDATE SKIP LOCKED
   ), lapsed AS MATERIALIZED (
     SELECT tenant_id, space_id, invocation_id, run_at, created_at FROM writ_invocations
      WHERE status = 'running' AND lease_expires_at <= p_now
      ORDER BY lease_expires_at
      LIMIT p_limit
      FOR UPDATE SKIP LOCKED
   ), picked AS (
     SELECT * FROM (SELECT * FROM due UNION ALL SELECT * FROM lapsed) AS runnable
      ORDER BY run_at, created_at, invocation_id, tenant_id, space_id
      LIMIT p_limit
${CLAIM_FUNCTION_TAIL}
ALTER TABLE writ_invocations SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_journal SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_attempts SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_steps SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_idempotency SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_attempt_seqs SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000);
`;

/**
 * Batched transitions (docs/stores.md, "Batches"): `writ_batch` applies several write transitions
 * in one statement and one commit, each member in a subtransaction of its own, so one member's
 * lost lease or refusal fails that member alone; `writ_call` is its dispatcher.
 */
const BATCHED_TRANSITIONS = batchFunctionsSql(BATCHABLE);

/**
 * Keys left unknown by bare executions, listed for operators (docs/boundary.md, Interrupted
 * executions): a partial index holds only the few keys in that state.
 */
const UNKNOWN_KEYS = `
CREATE INDEX writ_idempotency_unknown ON writ_idempotency (tenant_id, space_id) WHERE state = 'unknown';
`;

/**
 * The journal written once (docs/journal.md, "Storage on PostgreSQL"): an entry's row in
 * `writ_journal` is inserted by its transition and never updated again. Sealing no longer rewrites
 * it (a new version of the whole document and an entry in every index, left behind as a dead row
 * for vacuum); it deletes the entry's small row from `writ_journal_pending` (the unsealed entries,
 * in the order written) and inserts a narrow row into `writ_journal_chain` (seq, id, prev_hash,
 * hash): the chain is that table, read by seq, joined to the entries by id. Existing sealed rows
 * keep their documents and get their chain rows here; existing unsealed rows become pending.
 *
 * A statement-level trigger with a transition table queues every unsealed row any statement
 * inserts (the transition functions, the claim, the generic path), so the writers are unchanged.
 * \`writ_seal_if_head\` keeps its signature; of each document in p_docs it now reads only
 * \`prevHash\` (callers send just that).
 */
const JOURNAL_WRITTEN_ONCE = `
CREATE TABLE writ_journal_chain (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  id text COLLATE "C" NOT NULL,
  prev_hash text COLLATE "C",
  hash text COLLATE "C" NOT NULL,
  PRIMARY KEY (tenant_id, space_id, seq)
);
CREATE TABLE writ_journal_pending (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  pos bigint NOT NULL,
  id text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (tenant_id, space_id, pos)
);
INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
  SELECT tenant_id, space_id, seq, id, doc->>'prevHash', hash FROM writ_journal WHERE seq IS NOT NULL;
INSERT INTO writ_journal_pending (tenant_id, space_id, pos, id, at)
  SELECT tenant_id, space_id, pos, id, at FROM writ_journal WHERE seq IS NULL;
DROP INDEX writ_journal_unsealed;
DROP INDEX writ_journal_by_seq;

CREATE FUNCTION writ_journal_queue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO writ_journal_pending (tenant_id, space_id, pos, id, at)
  SELECT tenant_id, space_id, pos, id, at FROM writ_journal_new WHERE seq IS NULL;
  RETURN NULL;
END
$$;
CREATE TRIGGER writ_journal_queue AFTER INSERT ON writ_journal
  REFERENCING NEW TABLE AS writ_journal_new
  FOR EACH STATEMENT EXECUTE FUNCTION writ_journal_queue();

CREATE OR REPLACE FUNCTION writ_seal_if_head(p_t text, p_s text, p_lock bigint, p_head bigint, p_ids text[], p_seqs bigint[], p_hashes text[], p_docs json[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE v_n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(p_lock);
  IF coalesce((SELECT seq FROM writ_journal_chain WHERE tenant_id = p_t AND space_id = p_s ORDER BY seq DESC LIMIT 1), 0) <> p_head THEN
    RETURN 0;
  END IF;
  DELETE FROM writ_journal_pending p USING unnest(p_ids) AS b(id)
   WHERE p.tenant_id = p_t AND p.space_id = p_s AND p.id = b.id;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n <> coalesce(array_length(p_ids, 1), 0) THEN
    RAISE EXCEPTION 'journal seal names an entry that is not unsealed' USING ERRCODE = 'WRCNF';
  END IF;
  INSERT INTO writ_journal_chain (tenant_id, space_id, seq, id, prev_hash, hash)
  SELECT p_t, p_s, b.seq, b.id, b.doc->>'prevHash', b.hash FROM unnest(p_ids, p_seqs, p_hashes, p_docs) AS b(id, seq, hash, doc);
  RETURN v_n;
END
$$;

-- The queue's reads and the seal's delete go through its primary key even when the table is
-- bloated: after a backlog was sealed, its heap keeps the backlog's (empty) pages and its index
-- statistics overstate every index scan, and the planner would read every page of the heap.
ALTER FUNCTION writ_seal_if_head(text, text, bigint, bigint, text[], bigint[], text[], json[]) SET enable_seqscan = off;
CREATE FUNCTION writ_unsealed(p_t text, p_s text, p_limit integer) RETURNS TABLE (doc json, pos bigint)
LANGUAGE sql STABLE SET enable_seqscan = off AS $$
  SELECT j.doc, p.pos FROM writ_journal_pending p JOIN writ_journal j ON j.tenant_id = p.tenant_id AND j.space_id = p.space_id AND j.id = p.id
   WHERE p.tenant_id = p_t AND p.space_id = p_s ORDER BY p.pos LIMIT p_limit
$$;
CREATE FUNCTION writ_unsealed_scopes(p_limit integer) RETURNS TABLE (tenant_id text, space_id text, oldest_at bigint)
LANGUAGE sql STABLE SET enable_seqscan = off AS $$
  SELECT tenant_id, space_id, min(at) FROM writ_journal_pending GROUP BY tenant_id, space_id LIMIT p_limit
$$;

ALTER TABLE writ_journal_pending SET (autovacuum_vacuum_scale_factor = 0.0, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0.0, autovacuum_analyze_threshold = 1000);
ALTER TABLE writ_journal_chain SET (autovacuum_vacuum_insert_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
`;

/**
 * Per scope, the highest seq whose journal segment is archived and verified (docs/journal.md, "The archive watermark"); a
 * scope without a row has archived nothing.
 */
const JOURNAL_ARCHIVE_STATE = `
CREATE TABLE writ_journal_archive_state (
  tenant_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  archived_through bigint NOT NULL,
  PRIMARY KEY (tenant_id, space_id)
);
`;

/**
 * Retention (docs/retention.md): the pruner finds ended invocations oldest first across scopes,
 * and delivered or dead notification deliveries, expired completions and remembered webhook
 * delivery ids by age, each through a partial index that holds only those rows. The tables it
 * deletes from churn: autovacuum visits them after 2% of their rows died (default 20%), and
 * analyzes them as often, so the space pruning frees is reused rather than the tables growing.
 */
const RETENTION = `
CREATE INDEX writ_invocations_ended ON writ_invocations (updated_at, tenant_id, space_id, invocation_id)
  WHERE status IN ('succeeded', 'failed', 'denied', 'cancelled');
CREATE INDEX writ_notify_deliveries_done ON writ_notify_deliveries (((doc->>'updatedAt')::bigint)) WHERE status <> 'pending';
CREATE INDEX writ_completions_expired ON writ_completions (((doc->>'expiredAt')::bigint)) WHERE doc->>'disposition' = 'expired';
CREATE INDEX writ_deliveries_by_age ON writ_deliveries (received_at);
ALTER TABLE writ_consumed_decisions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_approvals SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_reconciliations SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_completions SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
ALTER TABLE writ_notify_deliveries SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 500, autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 500);
`;

/**
 * Retention of bare executions (docs/retention.md, "Bare executions"): the pruner finds settled
 * idempotency records oldest first across scopes through a partial index holding only the
 * succeeded and failed ones (a record's state already changes when it settles, so that update was
 * never a HOT one; the index adds one entry per settled record).
 */
const BARE_RETENTION = `
CREATE INDEX writ_idempotency_settled ON writ_idempotency (((doc->>'updatedAt')::bigint), tenant_id, space_id, action, idempotency_key)
  WHERE state IN ('succeeded', 'failed');
`;

/**
 * Notification subscriptions, their cursors into the sealed journal and their deliveries (the
 * outbox; docs/notifications.md). A delivery's seq is its place in its subscription's order.
 */
const NOTIFICATIONS = `
CREATE TABLE writ_notify_subscriptions (
  subscription_id text COLLATE "C" PRIMARY KEY,
  tenant_id text COLLATE "C" NOT NULL,
  enabled boolean NOT NULL,
  created_at bigint NOT NULL,
  doc json NOT NULL,
  lease_owner text COLLATE "C",
  lease_until bigint NOT NULL DEFAULT 0,
  lease_turn bigint NOT NULL DEFAULT 0
);
CREATE SEQUENCE writ_notify_lease_turn;
CREATE INDEX writ_notify_subscriptions_by_tenant ON writ_notify_subscriptions (tenant_id, created_at);
CREATE INDEX writ_notify_subscriptions_free ON writ_notify_subscriptions (lease_turn, subscription_id) WHERE enabled;
CREATE TABLE writ_notify_cursors (
  subscription_id text COLLATE "C" NOT NULL,
  space_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  PRIMARY KEY (subscription_id, space_id)
);
CREATE TABLE writ_notify_deliveries (
  seq bigserial PRIMARY KEY,
  delivery_id text COLLATE "C" NOT NULL UNIQUE,
  tenant_id text COLLATE "C" NOT NULL,
  subscription_id text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  status text NOT NULL,
  doc json NOT NULL,
  UNIQUE (subscription_id, event_id)
);
CREATE INDEX writ_notify_deliveries_pending ON writ_notify_deliveries (subscription_id, seq) WHERE status = 'pending';
CREATE INDEX writ_notify_deliveries_by_tenant ON writ_notify_deliveries (tenant_id, seq);
`;

/**
 * The claim as a batch member (docs/stores.md, "Batches"): a worker's claim, with each claimed
 * invocation's prepare read, can travel in the same `writ_batch` statement and commit as the
 * admissions, starts and settlements queued at that moment, instead of a commit of its own.
 */
const CLAIM_IN_BATCH = claimInBatchSql();

/**
 * The hot path's small SQL functions in PL/pgSQL (docs/stores.md, "Hot statements and history").
 * A SQL-language function that cannot be inlined (a `SET` clause, a sublink with `FOR UPDATE`) is
 * parsed and planned again on every call; a PL/pgSQL function caches its plans for the session.
 * Measured with pg_stat_user_functions on the host loop: `writ_unsealed` took about 2.6 ms of server
 * time per call for a few pending entries (the same query alone: 0.1 ms), and `writ_hold_lease`,
 * checked at every start and settlement, about 0.7 ms. Same arguments, same answers, same locks.
 */
const PLPGSQL_HOT_FUNCTIONS = `
CREATE OR REPLACE FUNCTION writ_hold_lease(p_t text, p_s text, p_inv text, p_owner text, p_token text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM writ_invocations
   WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_inv
     AND status = 'running' AND lease_owner = p_owner AND lease_token = p_token
     FOR UPDATE;
  RETURN FOUND;
END
$$;
CREATE OR REPLACE FUNCTION writ_unsealed(p_t text, p_s text, p_limit integer) RETURNS TABLE (doc json, pos bigint)
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY SELECT j.doc, p.pos FROM writ_journal_pending p JOIN writ_journal j ON j.tenant_id = p.tenant_id AND j.space_id = p.space_id AND j.id = p.id
   WHERE p.tenant_id = p_t AND p.space_id = p_s ORDER BY p.pos LIMIT p_limit;
END
$$;
CREATE OR REPLACE FUNCTION writ_unsealed_scopes(p_limit integer) RETURNS TABLE (tenant_id text, space_id text, oldest_at bigint)
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY SELECT q.tenant_id::text, q.space_id::text, min(q.at) FROM writ_journal_pending q GROUP BY q.tenant_id, q.space_id LIMIT p_limit;
END
$$;
`;

/**
 * The unsealed-entry read probes each pending entry's document by its id (docs/stores.md, "Hot
 * statements and history"). Written as a join, with `enable_seqscan = off` and a pending queue the
 * planner believed to hold one row, it chose an index scan of the scope's whole journal with the
 * id as a filter: every seal read walked the scope's history (400-500 ms on a 150,000-entry
 * journal, seen with auto_explain on the lifecycle bench). A scalar subquery per pending row can
 * only be planned as one probe of the (tenant, space, id) key.
 */
const UNSEALED_BY_ID = `
CREATE OR REPLACE FUNCTION writ_unsealed(p_t text, p_s text, p_limit integer) RETURNS TABLE (doc json, pos bigint)
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY SELECT x.doc, x.pos FROM (
    SELECT (SELECT j.doc FROM writ_journal j WHERE j.tenant_id = p_t AND j.space_id = p_s AND j.id = p.id) AS doc, p.pos
      FROM writ_journal_pending p WHERE p.tenant_id = p_t AND p.space_id = p_s ORDER BY p.pos LIMIT p_limit
  ) x WHERE x.doc IS NOT NULL;
END
$$;
`;

/**
 * Lease checks by the primary key alone (docs/stores.md, "Hot statements and history"). The lease
 * check of every start and settlement (`writ_hold_lease`) and the settlement's update of the
 * invocation named the row by its key and by `status = 'running' AND lease_owner = ... AND
 * lease_token = ...`. On statistics taken when (almost) nothing was running, the planner answered
 * that from the partial index of running invocations' owners, believed nearly empty. That index
 * keeps an entry for every invocation an owner ran until a vacuum removes it, and all of one
 * worker's entries share one key, so each check walked every invocation the worker ran since the
 * table's last vacuum, twice per invocation. On 1,000,000 ended invocations (where a vacuum pass
 * takes minutes) the check's buffers per call grew by about 35 every 10 s and the host loop fell
 * from 373/s to 107/s in 160 s (bench/prof-growth.ts). Both now name the row by its key alone,
 * which no partial index can answer, and compare the lease on the locked row. The owners' index
 * goes: only the heartbeat and a worker's release (a few statements a minute, not two per
 * invocation) looked running invocations up by owner, and the lease-expiry index serves them.
 */
const LEASE_BY_KEY = `
DROP INDEX writ_invocations_lease_owner;
CREATE OR REPLACE FUNCTION writ_hold_lease(p_t text, p_s text, p_inv text, p_owner text, p_token text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE v_status text; v_owner text; v_token text;
BEGIN
  SELECT status, lease_owner, lease_token INTO v_status, v_owner, v_token FROM writ_invocations
   WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_inv
     FOR UPDATE;
  RETURN FOUND AND v_status = 'running' AND v_owner = p_owner AND v_token = p_token;
END
$$;
-- The settlement's update: writ_hold_lease checked the lease on the row it locked, so the row is
-- found by its key alone; its lease cannot have moved since.
CREATE OR REPLACE FUNCTION writ_settle(p_t text, p_s text, p_inv text, p_owner text, p_token text, p_lease_inv text, p_locks bigint[],
    p_step_index integer, p_step_status text, p_step_attempt text, p_step_connector text, p_step_ref text, p_step_doc json,
    p_attempt text, p_attempt_inv text, p_attempt_state text, p_attempt_doc json,
    p_action text, p_key text, p_idem_state text, p_idem_doc json,
    p_write_inv boolean, p_status text, p_run_at bigint, p_lease_owner text, p_lease_token text, p_lease_expires_at bigint, p_attempt_count integer,
    p_created_at bigint, p_updated_at bigint, p_deadline_at bigint, p_overdue_at bigint, p_inv_doc json,
    p_rec text, p_rec_status text, p_rec_created_at bigint, p_rec_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_rev bigint;
BEGIN
  IF p_owner IS NOT NULL AND NOT writ_hold_lease(p_t, p_s, p_lease_inv, p_owner, p_token) THEN
    RAISE EXCEPTION 'lease lost on invocation %', p_lease_inv USING ERRCODE = 'WRLSE';
  END IF;
  PERFORM pg_advisory_xact_lock(k) FROM unnest(p_locks) AS k;
  PERFORM writ_put_step(p_t, p_s, p_inv, p_step_index, p_step_status, p_step_attempt, p_step_connector, p_step_ref, p_step_doc);
  UPDATE writ_attempts SET invocation_id = p_attempt_inv, state = p_attempt_state, doc = p_attempt_doc WHERE tenant_id = p_t AND space_id = p_s AND attempt_id = p_attempt;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'no attempt % in this scope', p_attempt USING ERRCODE = 'WRNFD';
  END IF;
  INSERT INTO writ_idempotency (tenant_id, space_id, action, idempotency_key, state, doc) VALUES (p_t, p_s, p_action, p_key, p_idem_state, p_idem_doc)
  ON CONFLICT (tenant_id, space_id, action, idempotency_key) DO UPDATE SET state = excluded.state, doc = excluded.doc;
  IF p_write_inv THEN
    UPDATE writ_invocations SET status = p_status, run_at = p_run_at, lease_owner = p_lease_owner, lease_token = p_lease_token, lease_expires_at = p_lease_expires_at,
           attempt_count = p_attempt_count, created_at = p_created_at, updated_at = p_updated_at, deadline_at = p_deadline_at, overdue_at = p_overdue_at,
           doc = p_inv_doc, rev = rev + 1
     WHERE tenant_id = p_t AND space_id = p_s AND invocation_id = p_lease_inv AND p_owner IS NOT NULL
    RETURNING rev INTO v_rev;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'lease lost on invocation %', p_lease_inv USING ERRCODE = 'WRLSE';
    END IF;
  END IF;
  IF p_rec IS NOT NULL THEN
    INSERT INTO writ_reconciliations (tenant_id, space_id, reconciliation_id, invocation_id, status, created_at, doc, rev)
    VALUES (p_t, p_s, p_rec, p_lease_inv, p_rec_status, p_rec_created_at, p_rec_doc, 1);
  END IF;
  PERFORM writ_put_unsealed(p_t, p_s, p_ids, p_types, p_ats, p_docs);
  RETURN v_rev;
END
$$;
`;

/**
 * The journal's unsealed insert in PL/pgSQL (docs/stores.md, "Hot statements and history"). It was
 * the last SQL-language function on the hot path: an `INSERT` cannot be inlined, so each of its
 * three calls per invocation (admission, start, settlement) parsed and planned the insert again.
 * Measured with `bench/prof-pg-functions.ts` on the host loop: 0.32 ms of the function's own server
 * time per invocation beside 0.17 ms in the insert itself. Same arguments, same rows, same
 * conflict rule; a call with no entries returns before any statement.
 */
const PLPGSQL_PUT_UNSEALED = `
CREATE OR REPLACE FUNCTION writ_put_unsealed(p_t text, p_s text, p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF coalesce(array_length(p_ids, 1), 0) = 0 THEN
    RETURN;
  END IF;
  INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc)
  SELECT p_t, p_s, e.id, e.type, e.at, e.doc
    FROM unnest(p_ids, p_types, p_ats, p_docs) WITH ORDINALITY AS e(id, type, at, doc, n)
   ORDER BY e.n
  ON CONFLICT (tenant_id, space_id, id) DO NOTHING;
END
$$;
`;

/**
 * An admission handed to an idle worker of the admitting process (docs/host.md, "Hand-off to an
 * idle worker"): admitted already claimed and read for its decision in one statement and one
 * commit, where it took an admission's commit, a wake-up, and a claim's round trip and commit.
 */
const ADMIT_CLAIMED = admitClaimedSql();

/**
 * A claim that comes back short answers the next run time itself (docs/host.md, "Workers, leases,
 * fencing"): the worker going to sleep after it no longer spends a round trip of its own to read
 * it, on every lone invocation's path.
 */
const CLAIM_NEXT = claimNextSql();

/**
 * The prepare reads take their keys from each document parsed once, leniently (docs/stores.md,
 * "Documents that hold NUL" and "Hot statements and history"): an invocation whose params hold NUL
 * or an unpaired surrogate failed every claim that picked it, and so every other invocation the
 * claim would have taken, in every scope; and each key was parsed out of the document anew at
 * every use.
 */
const KEYS_ONCE = keysOnceSql();

/**
 * `writ_begin` (migration 6) with its authority check read through `writ_doc_text`: the authority's
 * document holds its constraints, which an administrator fills, and the plain `->>` refused one
 * holding NUL, so every start under that authority failed (docs/stores.md, "Documents that hold
 * NUL"). Derived from migration 6's text with that one expression replaced, so the rest of the
 * function stays exactly as it was; a mismatch stops the module from loading.
 */
function beginLenientAuthority(): string {
  const start = TRANSITIONS.indexOf("CREATE FUNCTION writ_begin(");
  const end = TRANSITIONS.indexOf("$$;", start);
  const plain = "((v_auth->>'status') || ':' || coalesce(v_auth->>'expiresAt', '') || ':' || (v_auth->>'updatedAt'))";
  const fn = start < 0 || end < 0 ? "" : TRANSITIONS.slice(start, end + 3);
  if (fn.split(plain).length !== 2) throw new Error("postgres migrations: writ_begin's authority check was not found once in migration 6");
  return fn
    .replace("CREATE FUNCTION writ_begin(", "CREATE OR REPLACE FUNCTION writ_begin(")
    .replace(plain, "(writ_doc_text(v_auth, '{status}') || ':' || coalesce(writ_doc_text(v_auth, '{expiresAt}'), '') || ':' || writ_doc_text(v_auth, '{updatedAt}'))");
}

/**
 * Every other read of a field out of a document an outside party fills goes through
 * `writ_doc_text(doc, path)` (postgres-calls.ts, docs/stores.md, "Documents that hold NUL"). The
 * partial indexes that read documents are built again with it; the old ones are dropped last,
 * since a drop's exclusive lock on the table lasts to the migration's commit and should cover no
 * build (a build blocks writes to its table, not reads). The expired completions' condition read
 * each new completion's disposition, so a completion whose result held NUL was refused; the
 * finished deliveries' read each finished delivery's time, and a delivery whose log held NUL
 * (written by earlier versions) could never finish. Early completions, whose sweep read every
 * completion's document each second, get a partial index of their own.
 */
const LENIENT_DOCUMENTS = `${DOC_TEXT}
CREATE INDEX writ_completions_expired_2 ON writ_completions ((writ_doc_text(doc, '{expiredAt}')::bigint)) WHERE writ_doc_text(doc, '{disposition}') = 'expired';
CREATE INDEX writ_completions_early ON writ_completions (received_at, id) WHERE writ_doc_text(doc, '{disposition}') = 'early';
CREATE INDEX writ_notify_deliveries_done_2 ON writ_notify_deliveries ((writ_doc_text(doc, '{updatedAt}')::bigint)) WHERE status <> 'pending';
${beginLenientAuthority()}
DROP INDEX writ_completions_expired;
DROP INDEX writ_notify_deliveries_done;
`;

/**
 * The batch dispatcher with arrays as array literals (docs/stores.md, "Batches"): `writ_batch_2`
 * and `writ_call_2` take the calls of `writ_batch` with each array argument as the text of a
 * PostgreSQL array literal, cast at once, where `writ_call` took a JSON array apart in a subquery
 * per argument (five per start and settlement), which the executor set up at every call. The old
 * pair stays for processes of the previous version.
 */
const LITERAL_BATCH = literalBatchSql();

/**
 * An admission that finds its key already used answers the invocation it found only once that
 * invocation is as durable as a fresh admission would be (docs/deploying-postgres.md, "What holds
 * per fault"). The found row could be committed on this server but not yet on its synchronous
 * standby: a commit whose wait for the standby was cancelled, or one that crash recovery replayed
 * after the server was killed in that wait, is visible here at once. `ON CONFLICT DO NOTHING`
 * writes nothing when the key is taken, so the replay's own commit had no reason to wait for the
 * standby, and a failover right after could lose what it had just acknowledged (the cluster
 * nemesis found one, C7). The replay now locks the found row (`FOR KEY SHARE`, the weakest row
 * lock: it waits only for a transaction that holds the row `FOR UPDATE`, changes its key or
 * deletes it). The lock is written to the WAL under a transaction id, so
 * the replay's commit waits for the synchronous standby up to its own commit record, which comes
 * after the found row's. Without synchronous replication the commit only flushes locally. The
 * answer is the same; only a replay pays (a lock record and a commit that flushes).
 */
const ADMIT_REPLAY_DURABLE = `
${admitFunctionSql("CREATE OR REPLACE", "\n       FOR KEY SHARE")}`;

/** All migrations, ascending by version. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  { version: 1, name: "initial_schema", sql: INITIAL_SCHEMA },
  { version: 2, name: "completions_policies_sweeps", sql: COMPLETIONS_POLICIES_SWEEPS },
  { version: 3, name: "api_keys", sql: API_KEYS },
  { version: 4, name: "unsealed_journal", sql: UNSEALED_JOURNAL },
  { version: 5, name: "row_revisions", sql: ROW_REVISIONS },
  { version: 6, name: "transitions", sql: TRANSITIONS },
  { version: 7, name: "breakers", sql: BREAKERS },
  { version: 8, name: "hot_path_history", sql: HOT_PATH_HISTORY },
  { version: 9, name: "batched_transitions", sql: BATCHED_TRANSITIONS },
  { version: 10, name: "unknown_keys", sql: UNKNOWN_KEYS },
  { version: 11, name: "journal_written_once", sql: JOURNAL_WRITTEN_ONCE },
  { version: 12, name: "notifications", sql: NOTIFICATIONS },
  { version: 13, name: "journal_archive_state", sql: JOURNAL_ARCHIVE_STATE },
  { version: 14, name: "retention", sql: RETENTION },
  { version: 15, name: "bare_retention", sql: BARE_RETENTION },
  { version: 16, name: "claim_in_batch", sql: CLAIM_IN_BATCH },
  { version: 17, name: "plpgsql_hot_functions", sql: PLPGSQL_HOT_FUNCTIONS },
  { version: 18, name: "unsealed_by_id", sql: UNSEALED_BY_ID },
  { version: 19, name: "lease_by_key", sql: LEASE_BY_KEY },
  { version: 20, name: "plpgsql_put_unsealed", sql: PLPGSQL_PUT_UNSEALED },
  { version: 21, name: "admit_claimed", sql: ADMIT_CLAIMED },
  { version: 22, name: "claim_next", sql: CLAIM_NEXT },
  { version: 23, name: "keys_once", sql: KEYS_ONCE },
  { version: 24, name: "lenient_documents", sql: LENIENT_DOCUMENTS },
  { version: 25, name: "literal_batch", sql: LITERAL_BATCH },
  { version: 26, name: "admit_replay_durable", sql: ADMIT_REPLAY_DURABLE },
];

/** The schema version this build creates and expects. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS.reduce((v, m) => Math.max(v, m.version), 0);
