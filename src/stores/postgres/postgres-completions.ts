/** External completions (SPEC 4.7) and the webhook delivery ids already seen. */
import { WritError } from "../../core/errors.js";
import type { CompletionRecord, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, type DocRow } from "./postgres-rows.js";

const INSERT = statement(
  "insert_completion",
  "INSERT INTO writ_completions (tenant_id, space_id, connector, completion_id, external_ref, received_at, doc, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, 1) " +
    "ON CONFLICT DO NOTHING",
);
const UPDATE = statement(
  "update_completion",
  "UPDATE writ_completions SET external_ref = $5, received_at = $6, doc = $7, rev = rev + 1 " +
    "WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND completion_id = $4 AND rev = $8",
);
const EXISTS = statement("completion_exists", "SELECT 1 FROM writ_completions WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND completion_id = $4");
const LIST = statement(
  "list_completions",
  "SELECT doc FROM writ_completions WHERE tenant_id = $1 AND space_id = $2 AND connector = $3 AND external_ref = $4 ORDER BY received_at, id",
);
/** The primary key decides: the first delivery inserts, a repeat inserts nothing. */
const REMEMBER = statement(
  "remember_delivery",
  "INSERT INTO writ_deliveries (tenant_id, space_id, connector, delivery_id, received_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
);

function params(scope: Scope, c: CompletionRecord): unknown[] {
  return [scope.tenantId, scope.spaceId, c.connector, c.completionId, c.externalRef, c.receivedAt, docOf(c)];
}

/** Inserts; CONFLICT (nothing written) when (connector, completionId) exists in the scope. */
export async function insertCompletion(x: Exec, scope: Scope, c: CompletionRecord): Promise<void> {
  if ((await x.count(INSERT, params(scope, { ...c, rev: 1 }))) === 0) throw new WritError("CONFLICT", `completion ${c.completionId} of ${c.connector} already exists`);
  c.rev = 1;
}

/** Replaces, conditional on `c.rev`: STALE when the row moved on, NOT_FOUND when there is none. Stamps the new rev. */
export async function updateCompletion(x: Exec, scope: Scope, c: CompletionRecord): Promise<void> {
  const expected = c.rev ?? 0;
  if ((await x.count(UPDATE, [...params(scope, { ...c, rev: expected + 1 }), expected])) === 0) {
    if ((await x.rows(EXISTS, [scope.tenantId, scope.spaceId, c.connector, c.completionId])).length === 0) throw new WritError("NOT_FOUND", `no completion ${c.completionId} of ${c.connector} in this scope`);
    throw new WritError("STALE", `completion ${c.completionId} of ${c.connector} changed since it was read (rev ${expected})`);
  }
  c.rev = expected + 1;
}

/** Completions for (connector, externalRef) in arrival order. */
export async function listCompletions(x: Exec, scope: Scope, connector: string, externalRef: string): Promise<CompletionRecord[]> {
  return (await x.rows<DocRow<CompletionRecord>>(LIST, [scope.tenantId, scope.spaceId, connector, externalRef])).map((r) => r.doc);
}

/** True the first time (scope, connector, deliveryId) is seen; false (nothing written) after. */
export async function rememberDelivery(x: Exec, scope: Scope, connector: string, deliveryId: string, at: number): Promise<boolean> {
  return (await x.count(REMEMBER, [scope.tenantId, scope.spaceId, connector, deliveryId, at])) === 1;
}
