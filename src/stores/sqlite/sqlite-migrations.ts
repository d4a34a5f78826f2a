/**
 * Numbered schema migrations for the SQLite store. SQL is the source of truth: each entry is one
 * version, applied once, in order, inside the migration lock (see `sqlite-migrate.ts`).
 *
 * Layout is hybrid: every record is kept whole as a JSON `doc`, and the fields the store filters,
 * orders or constrains on are copied into indexed columns. Every table starts with the scope
 * (`tenant_id`, `space_id`), and every key includes it. Tables keep their rowid: lists without a
 * natural order (authorities, approvals, reconciliations) come back in insertion order by rowid,
 * which an upsert keeps.
 *
 * Never edit an applied migration: add a new one.
 */

/** One numbered migration. */
export interface SqliteMigration {
  version: number;
  name: string;
  sql: string;
}

/** All migrations, ascending by version (1, 2, 3, … without gaps). */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: "initial_schema",
    sql: `
CREATE TABLE invocations (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  action TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  status TEXT NOT NULL,
  run_at INTEGER NOT NULL,
  lease_owner TEXT,
  lease_token TEXT,
  lease_expires_at INTEGER,
  attempt_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, invocation_id),
  UNIQUE (tenant_id, space_id, action, idempotency_key)
);
CREATE INDEX invocations_by_created ON invocations (tenant_id, space_id, created_at, invocation_id);
CREATE INDEX invocations_by_status ON invocations (tenant_id, space_id, status, created_at, invocation_id);
CREATE INDEX invocations_queued ON invocations (run_at, created_at, invocation_id, tenant_id, space_id) WHERE status = 'queued';
CREATE INDEX invocations_running ON invocations (lease_expires_at) WHERE status = 'running';
CREATE INDEX invocations_lease_owner ON invocations (lease_owner, lease_expires_at) WHERE status = 'running';

CREATE TABLE steps (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  step_index INTEGER NOT NULL,
  status TEXT NOT NULL,
  attempt_id TEXT NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, invocation_id, step_index)
);

CREATE TABLE attempts (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  invocation_id TEXT,
  state TEXT NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, attempt_id),
  UNIQUE (tenant_id, space_id, seq)
);
CREATE INDEX attempts_by_invocation ON attempts (tenant_id, space_id, invocation_id, seq);

CREATE TABLE consumed_decisions (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  decision_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL,
  consumed_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, decision_id)
);

CREATE TABLE idempotency (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  action TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  state TEXT NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, action, idempotency_key)
);

CREATE TABLE approvals (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  approval_id TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, approval_id)
);
CREATE INDEX approvals_by_status ON approvals (tenant_id, space_id, status);

CREATE TABLE authorities (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  authority_ref TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, authority_ref)
);

CREATE TABLE reconciliations (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  reconciliation_id TEXT NOT NULL,
  invocation_id TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, reconciliation_id)
);
CREATE INDEX reconciliations_by_invocation ON reconciliations (tenant_id, space_id, invocation_id);
CREATE INDEX reconciliations_by_status ON reconciliations (tenant_id, space_id, status);

CREATE TABLE journal (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  id TEXT NOT NULL,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  hash TEXT NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, seq),
  UNIQUE (tenant_id, space_id, id)
);

-- Several checkpoints may state the same seq (e.g. signed again with a new key).
CREATE TABLE journal_checkpoints (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  head_hash TEXT NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX journal_checkpoints_by_seq ON journal_checkpoints (tenant_id, space_id, seq);
`,
  },
  {
    version: 2,
    name: "policy_versions_completions_sweeps",
    sql: `
CREATE TABLE policy_versions (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  version INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, version)
);

CREATE TABLE completions (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  connector TEXT NOT NULL,
  completion_id TEXT NOT NULL,
  external_ref TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, completion_id)
);
CREATE INDEX completions_by_ref ON completions (tenant_id, space_id, connector, external_ref, received_at);

CREATE TABLE deliveries (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  connector TEXT NOT NULL,
  delivery_id TEXT NOT NULL,
  seen_at INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, delivery_id)
);

CREATE INDEX steps_by_external_ref ON steps (tenant_id, space_id, json_extract(doc, '$.connector'), json_extract(doc, '$.externalRef'));
CREATE INDEX invocations_parked_deadline ON invocations (json_extract(doc, '$.deadlineAt')) WHERE status = 'parked';
CREATE INDEX approvals_pending_expiry ON approvals (json_extract(doc, '$.expiresAt')) WHERE status = 'pending';
`,
  },
  {
    version: 3,
    name: "api_keys",
    sql: `
-- Tenant-level records: looked up by key id when a request arrives, never by secret.
CREATE TABLE api_keys (
  key_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, created_at);
`,
  },
  {
    version: 4,
    name: "unsealed_journal",
    sql: `
-- Journal entries are written unsealed by their transition (seq and hash NULL) and sealed later
-- by the sequencer (docs/journal.md). rowid keeps the order entries were written in.
CREATE TABLE journal_v4 (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  seq INTEGER,
  id TEXT NOT NULL,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  hash TEXT,
  doc TEXT NOT NULL,
  UNIQUE (tenant_id, space_id, id),
  CHECK ((seq IS NULL) = (hash IS NULL))
);
INSERT INTO journal_v4 (tenant_id, space_id, seq, id, type, at, hash, doc)
  SELECT tenant_id, space_id, seq, id, type, at, hash, doc FROM journal ORDER BY tenant_id, space_id, seq;
DROP TABLE journal;
ALTER TABLE journal_v4 RENAME TO journal;
CREATE UNIQUE INDEX journal_by_seq ON journal (tenant_id, space_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX journal_unsealed ON journal (tenant_id, space_id) WHERE seq IS NULL;
`,
  },
  {
    version: 5,
    name: "row_revisions",
    sql: `
-- Row revisions (docs/stores.md, "Conditional writes"): every write of these rows is conditional
-- on the revision its writer read and moves it on. Existing rows start at 0.
ALTER TABLE invocations ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE reconciliations ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
ALTER TABLE completions ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
`,
  },
  {
    version: 6,
    name: "breakers",
    sql: `
-- Circuit breakers (docs/host.md, "Circuit breakers"): one row per (scope, connector, operation),
-- shared by every worker and process on this file; written only with a conditional rev.
CREATE TABLE breakers (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  connector TEXT NOT NULL,
  operation TEXT NOT NULL,
  doc TEXT NOT NULL,
  rev INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, space_id, connector, operation)
);
`,
  },
  {
    version: 7,
    name: "unknown_keys",
    sql: `
-- Keys left unknown by bare executions, listed for operators (docs/boundary.md, Interrupted
-- executions): a partial index holds only the few keys in that state.
CREATE INDEX idempotency_unknown ON idempotency (tenant_id, space_id) WHERE state = 'unknown';
`,
  },
  {
    version: 8,
    name: "notifications",
    sql: `
-- Notification subscriptions, their cursors into the sealed journal and their deliveries (the
-- outbox; docs/notifications.md). A delivery's seq is its place in its subscription's order.
CREATE TABLE notify_subscriptions (
  subscription_id TEXT PRIMARY KEY,
  tenant_id TEXT NOT NULL,
  enabled INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  doc TEXT NOT NULL,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0,
  lease_turn INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX notify_subscriptions_by_tenant ON notify_subscriptions (tenant_id, created_at);
CREATE TABLE notify_cursors (
  subscription_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (subscription_id, space_id)
);
CREATE TABLE notify_deliveries (
  seq INTEGER PRIMARY KEY,
  delivery_id TEXT NOT NULL UNIQUE,
  tenant_id TEXT NOT NULL,
  subscription_id TEXT NOT NULL,
  event_id TEXT NOT NULL,
  status TEXT NOT NULL,
  doc TEXT NOT NULL,
  UNIQUE (subscription_id, event_id)
);
CREATE INDEX notify_deliveries_pending ON notify_deliveries (subscription_id, seq) WHERE status = 'pending';
CREATE INDEX notify_deliveries_by_tenant ON notify_deliveries (tenant_id, seq);
`,
  },
  {
    version: 9,
    name: "journal_archive_state",
    sql: `
-- Per scope, the highest seq whose journal segment is archived and verified (docs/journal.md, "The archive watermark");
-- a scope without a row has archived nothing.
CREATE TABLE journal_archive_state (
  tenant_id TEXT NOT NULL,
  space_id TEXT NOT NULL,
  archived_through INTEGER NOT NULL,
  PRIMARY KEY (tenant_id, space_id)
) WITHOUT ROWID;
`,
  },
  {
    version: 10,
    name: "retention",
    sql: `
-- Retention (docs/retention.md): the pruner finds ended invocations oldest first across scopes, and
-- delivered or dead notification deliveries, expired completions and remembered webhook delivery
-- ids by age, each through an index that holds only those rows.
CREATE INDEX invocations_ended ON invocations (json_extract(doc, '$.updatedAt'), tenant_id, space_id, invocation_id)
  WHERE status IN ('succeeded', 'failed', 'denied', 'cancelled');
CREATE INDEX notify_deliveries_done ON notify_deliveries (json_extract(doc, '$.updatedAt')) WHERE status <> 'pending';
CREATE INDEX completions_expired ON completions (json_extract(doc, '$.expiredAt')) WHERE json_extract(doc, '$.disposition') = 'expired';
CREATE INDEX deliveries_by_age ON deliveries (seen_at);
`,
  },
  {
    version: 11,
    name: "bare_retention",
    sql: `
-- Retention of bare executions (docs/retention.md, "Bare executions"): the pruner finds settled
-- idempotency records oldest first across scopes through an index holding only those.
CREATE INDEX idempotency_settled ON idempotency (json_extract(doc, '$.updatedAt'), tenant_id, space_id, action, idempotency_key)
  WHERE state IN ('succeeded', 'failed');
`,
  },
];

/** The schema version this build creates and expects. */
export const SQLITE_SCHEMA_VERSION: number = SQLITE_MIGRATIONS.length;
