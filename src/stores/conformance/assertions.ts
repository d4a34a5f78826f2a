/** Assertion helpers of the conformance suite (node:assert based, no test framework). */
import assert from "node:assert/strict";
import { LeaseLostError, WritError, type ErrorCode } from "../../core/errors.js";
import type { Store } from "../../core/store.js";

/**
 * A JSON round trip: optional fields a store leaves absent and fields set to `undefined` compare
 * equal, as they do once stored.
 */
export function plain<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Deep equality of records as stored. */
export function assertRecord<T>(actual: T | null | undefined, expected: T, what: string): void {
  assert.notEqual(actual, null, `${what}: expected a record, got none`);
  assert.deepStrictEqual(plain(actual), plain(expected), `${what}: stored record differs`);
}

/** Asserts that `p` rejects with a `WritError` whose code is one of `codes`; returns the error. */
export async function rejectsWithCode(p: Promise<unknown>, codes: ErrorCode | ErrorCode[], what: string): Promise<WritError> {
  const allowed = Array.isArray(codes) ? codes : [codes];
  let outcome: { ok: true } | { ok: false; error: unknown };
  try {
    await p;
    outcome = { ok: true };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (outcome.ok) assert.fail(`${what}: expected a rejection with ${allowed.join(" or ")}, but it succeeded`);
  const { error } = outcome;
  if (!(error instanceof WritError)) assert.fail(`${what}: expected a WritError with ${allowed.join(" or ")}, got ${String(error)}`);
  assert.ok(allowed.includes(error.code), `${what}: expected code ${allowed.join(" or ")}, got ${error.code} (${error.message})`);
  return error;
}

/** Asserts that `p` rejects with a `LeaseLostError` (code `LEASE_LOST`). */
export async function rejectsLeaseLost(p: Promise<unknown>, what: string): Promise<void> {
  const error = await rejectsWithCode(p, "LEASE_LOST", what);
  assert.ok(error instanceof LeaseLostError, `${what}: expected a LeaseLostError instance`);
}

/** The codes a write into a record of another scope may be refused with. */
export const CROSS_SCOPE_CODES: ErrorCode[] = ["SCOPE_VIOLATION", "NOT_FOUND"];

/**
 * Opens a migrated store, runs `fn`, closes the store whatever happens.
 */
export async function withStore<T>(makeStore: () => Promise<Store>, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await makeStore();
  try {
    await store.migrate();
    return await fn(store);
  } finally {
    await store.close();
  }
}
