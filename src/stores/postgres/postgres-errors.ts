/**
 * Maps driver and server errors to `WritError` codes. Messages never carry a connection string or
 * password: URLs are masked, and the configured password (when known) is blanked out.
 */
import { WritError, type ErrorCode } from "../../core/errors.js";
import { parsePgUrl } from "./postgres-url.js";

/** SQLSTATE classes and codes the store treats specially. */
const UNIQUE_VIOLATION = "23505";
const UNDEFINED_TABLE = "42P01";
/** Serialization failure and deadlock: the transaction may succeed if run again. */
const RETRYABLE = new Set(["40001", "40P01"]);

/** read_only_sql_transaction: the server is (now) a standby, or read-only. */
const READ_ONLY_SQL_TRANSACTION = "25006";

/**
 * Whether `e` says the connection's server no longer takes writes (SQLSTATE 25006: a failover
 * turned it into a standby, or it was made read-only). Such a connection is discarded, so the pool
 * opens a new one, which a multi-host URL places on the new primary (docs/deploying-postgres.md).
 */
export function onReadOnlyServer(e: unknown): boolean {
  const details = (e as { details?: { sqlState?: unknown } } | null)?.details;
  return (details?.sqlState ?? sqlStateOf(e)) === READ_ONLY_SQL_TRANSACTION;
}

/** The WritError code for a SQLSTATE. */
export function codeForSqlState(sqlState: string | undefined): ErrorCode {
  if (sqlState === undefined) return "STORE_ERROR";
  if (sqlState === UNIQUE_VIOLATION) return "CONFLICT";
  if (sqlState === UNDEFINED_TABLE) return "INVALID_STATE";
  // 22: data exception (bad number, bad text), 23: other integrity violations (not null, check).
  if (sqlState.startsWith("22") || sqlState.startsWith("23")) return "INVALID_ARGUMENT";
  return "STORE_ERROR";
}

/** Masks `postgres://…` URLs and the given secrets in a message. */
export function redact(message: string, secrets: readonly string[] = []): string {
  let out = message.replace(/postgres(?:ql)?:\/\/\S*/gi, "postgres://[redacted]");
  for (const s of secrets) if (s.length > 0) out = out.split(s).join("[redacted]");
  return out;
}

function sqlStateOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * The error to throw for a failed driver call. `WritError`s pass through; anything else becomes
 * a `WritError` whose code follows the SQLSTATE (unique violation → `CONFLICT`, bad data →
 * `INVALID_ARGUMENT`, missing schema → `INVALID_STATE`, the rest → `STORE_ERROR`), with
 * `details.sqlState` and `details.retryable` (serialization failure, deadlock).
 */
export function toWritError(e: unknown, secrets: readonly string[] = []): WritError {
  if (e instanceof WritError) return e;
  const sqlState = sqlStateOf(e);
  const code = codeForSqlState(sqlState);
  const raw = e instanceof Error ? e.message : String(e);
  const hint = sqlState === UNDEFINED_TABLE ? " (is the schema migrated? run migrate())" : "";
  return new WritError(code, `postgres: ${redact(raw, secrets)}${hint}`, {
    details: { sqlState: sqlState ?? null, retryable: sqlState !== undefined && RETRYABLE.has(sqlState) },
  });
}

/** The password inside a connection URL, if any (to blank it out of messages); a multi-host URL's too. */
export function passwordOf(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    const p = decodeURIComponent(new URL(parsePgUrl(url).hostUrls[0] ?? url).password);
    return p.length > 0 ? [p] : [];
  } catch {
    return [];
  }
}
