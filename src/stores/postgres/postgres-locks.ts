/**
 * Logical locks as PostgreSQL advisory transaction locks: one 64-bit key per (tenant, space, key),
 * taken in ascending key order so two transactions locking overlapping sets cannot deadlock, and
 * released by PostgreSQL when the transaction ends (commit, rollback or a lost connection).
 */
import { createHash } from "node:crypto";
import type { Scope } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";

// unnest yields the (already sorted) keys in array order, and each row takes its lock as it flows.
const LOCK = statement("lock", "SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k");

/**
 * A stable signed 64-bit key for (tenant, space, key): the first 8 bytes of SHA-256 over an
 * unambiguous encoding. A collision between two keys only makes them share a lock (extra
 * waiting), never lets two holders in.
 */
export function advisoryKey(scope: Scope, key: string): bigint {
  const digest = createHash("sha256").update(JSON.stringify(["writ.lock", scope.tenantId, scope.spaceId, key])).digest();
  return digest.readBigInt64BE(0);
}

/** The distinct advisory keys of `keys`, ascending. */
export function advisoryKeys(scope: Scope, keys: readonly string[]): bigint[] {
  const unique = [...new Set(keys.map((k) => advisoryKey(scope, k)))];
  return unique.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Waits for, then holds until the transaction ends, the locks of `keys` in `scope`. */
export async function lockKeys(x: Exec, scope: Scope, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await x.count(LOCK, [advisoryKeys(scope, keys).map(String)]);
}
