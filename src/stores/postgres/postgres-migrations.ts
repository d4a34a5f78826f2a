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

/** One numbered migration. */
export interface PostgresMigration {
  version: number;
  name: string;
  sql: string;
}

/** The channel `onWake` listens on; the trigger below notifies it when work becomes runnable. */
export const WAKE_CHANNEL = "writ_wake";

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
 * External completions (SPEC 4.7), webhook delivery ids, policy versions (SPEC 7), and the
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

/** Tenant-level API keys (SPEC 8), found by key id; only a hash of the secret is stored. */
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

/** All migrations, ascending by version (1, 2, 3, … without gaps). */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  { version: 1, name: "initial_schema", sql: INITIAL_SCHEMA },
  { version: 2, name: "completions_policies_sweeps", sql: COMPLETIONS_POLICIES_SWEEPS },
  { version: 3, name: "api_keys", sql: API_KEYS },
  { version: 4, name: "unsealed_journal", sql: UNSEALED_JOURNAL },
];

/** The schema version this build creates and expects. */
export const POSTGRES_SCHEMA_VERSION: number = POSTGRES_MIGRATIONS.length;
