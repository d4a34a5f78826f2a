/**
 * Between records and rows: documents out (`json` text), records back in. Reads parse the stored
 * text, so every record handed out is a fresh copy.
 */
import { WritError } from "../../core/errors.js";
import type { AttemptRecord, Invocation } from "../../core/types.js";

/** A row that carries a record's document (parsed by the driver). */
export interface DocRow<T> {
  doc: T;
}

/** A record as its `json` document; INVALID_ARGUMENT for what JSON cannot hold. */
export function docOf(rec: object): string {
  try {
    return JSON.stringify(rec);
  } catch (e) {
    throw new WritError("INVALID_ARGUMENT", `record is not JSON data: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** bigint columns arrive as strings (int8 exceeds a double); store values are safe integers. */
function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}

/** The invocation columns workers write without rewriting the document. */
export interface InvocationRow extends DocRow<Invocation> {
  status: Invocation["status"];
  run_at: string | number;
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: string | number | null;
  attempt_count: number;
  updated_at: string | number;
  rev: string | number;
}

/** Columns selected for an invocation. */
export const INVOCATION_READ = "status, run_at, lease_owner, lease_token, lease_expires_at, attempt_count, updated_at, rev, doc";

/** The invocation, with its columns (authoritative) over the document's copy of them. */
export function invocationFromRow(row: InvocationRow): Invocation {
  const inv = row.doc;
  inv.status = row.status;
  inv.runAt = num(row.run_at);
  inv.attemptCount = row.attempt_count;
  inv.updatedAt = num(row.updated_at);
  inv.rev = num(row.rev);
  if (row.lease_owner === null) delete inv.leaseOwner;
  else inv.leaseOwner = row.lease_owner;
  if (row.lease_token === null) delete inv.leaseToken;
  else inv.leaseToken = row.lease_token;
  if (row.lease_expires_at === null) delete inv.leaseExpiresAt;
  else inv.leaseExpiresAt = num(row.lease_expires_at);
  return inv;
}

/** Parameters of an invocation's columns, in the order the statements use ($3 …). */
export function invocationParams(inv: Invocation): unknown[] {
  return [
    inv.invocationId,
    inv.action,
    inv.idempotencyKey,
    inv.status,
    inv.runAt,
    inv.leaseOwner ?? null,
    inv.leaseToken ?? null,
    inv.leaseExpiresAt ?? null,
    inv.attemptCount,
    inv.createdAt,
    inv.updatedAt,
    inv.deadlineAt ?? null,
    inv.overdueAt ?? null,
    docOf(inv),
  ];
}

/** An attempt row: the store-assigned seq over the document's. */
export interface AttemptRow extends DocRow<AttemptRecord> {
  seq: string | number;
}

export function attemptFromRow(row: AttemptRow): AttemptRecord {
  const rec = row.doc;
  rec.seq = num(row.seq);
  return rec;
}

/** A number column (bigint text or number) as a number; null stays null. */
export function numOrNull(v: string | number | null | undefined): number | null {
  return v === null || v === undefined ? null : num(v);
}

/** A `limit` as a SQL parameter (NULL: no limit); INVALID_ARGUMENT unless a non-negative integer. */
export function limitParam(limit: number | undefined): number | null {
  if (limit === undefined) return null;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "limit must be a non-negative integer");
  return limit;
}
