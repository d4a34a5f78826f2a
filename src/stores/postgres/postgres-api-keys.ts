/**
 * API keys (SPEC 8): per tenant, looked up by key id when a request arrives (before any scope is
 * known), so the key id is unique across tenants and a key never moves to another tenant.
 */
import { WritError } from "../../core/errors.js";
import type { ApiKeyRecord } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { docOf, type DocRow } from "./postgres-rows.js";

/** Replaces only within the same tenant: a key id of another tenant writes no row. */
const PUT = statement(
  "put_api_key",
  "INSERT INTO writ_api_keys AS k (key_id, tenant_id, created_at, doc) VALUES ($1, $2, $3, $4) " +
    "ON CONFLICT (key_id) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc WHERE k.tenant_id = excluded.tenant_id",
);
const GET = statement("get_api_key", "SELECT doc FROM writ_api_keys WHERE key_id = $1");
const LIST = statement("list_api_keys", "SELECT doc FROM writ_api_keys WHERE tenant_id = $1 ORDER BY created_at, key_id");

/** Inserts or replaces by keyId; SCOPE_VIOLATION (nothing written) when the id is another tenant's. */
export async function putApiKey(x: Exec, key: ApiKeyRecord): Promise<void> {
  if ((await x.count(PUT, [key.keyId, key.tenantId, key.createdAt, docOf(key)])) === 0) {
    throw new WritError("SCOPE_VIOLATION", "this API key id belongs to another tenant");
  }
}

export async function getApiKey(x: Exec, keyId: string): Promise<ApiKeyRecord | null> {
  const [row] = await x.rows<DocRow<ApiKeyRecord>>(GET, [keyId]);
  return row?.doc ?? null;
}

/** The tenant's keys, oldest first. */
export async function listApiKeys(x: Exec, tenantId: string): Promise<ApiKeyRecord[]> {
  return (await x.rows<DocRow<ApiKeyRecord>>(LIST, [tenantId])).map((r) => r.doc);
}
