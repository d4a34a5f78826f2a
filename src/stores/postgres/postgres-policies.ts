/** Policy versions (SPEC 7): one row per (scope, version). */
import type { PolicyVersion, Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, type DocRow } from "./postgres-rows.js";

const PUT = statement(
  "put_policy_version",
  "INSERT INTO writ_policy_versions (tenant_id, space_id, version, status, doc) VALUES ($1, $2, $3, $4, $5) " +
    "ON CONFLICT (tenant_id, space_id, version) DO UPDATE SET status = excluded.status, doc = excluded.doc",
);
const LIST = statement("list_policy_versions", "SELECT doc FROM writ_policy_versions WHERE tenant_id = $1 AND space_id = $2 ORDER BY version");

/** Inserts or replaces the version. */
export async function putPolicyVersion(x: Exec, scope: Scope, v: PolicyVersion): Promise<void> {
  await x.count(PUT, [scope.tenantId, scope.spaceId, v.version, v.status, docOf(v)]);
}

/** Ascending by version. */
export async function listPolicyVersions(x: Exec, scope: Scope): Promise<PolicyVersion[]> {
  return (await x.rows<DocRow<PolicyVersion>>(LIST, [scope.tenantId, scope.spaceId])).map((r) => r.doc);
}
