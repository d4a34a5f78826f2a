/**
 * The in-process cache of verified API keys (docs/security.md, "API key verification cache"):
 * per store, keyed by the hash of the presented key text (never the text itself). Its own module
 * so that every writer of key records can forget a key without importing the key functions.
 */
import type { Store } from "../core/store.js";
import type { ApiKeyRecord } from "../core/types.js";

/** The most verified keys one store's cache holds; when full it starts over (a reset only costs reads). */
const MAX_ENTRIES = 10_000;

interface CachedKey {
  rec: ApiKeyRecord;
  until: number;
}

const verified = new WeakMap<Store, Map<string, CachedKey>>();
/** Bumped by every forget: a verification whose read began before a forget is not remembered. */
const generations = new WeakMap<Store, number>();

function generationOf(store: Store): number {
  return generations.get(store) ?? 0;
}

/**
 * Call before a verification's store read: follows the store's key changes from then on (see
 * {@link followApiKeyChanges}) and answers the store's forget count now, to pass to
 * {@link rememberApiKey} with what the read found.
 */
export function apiKeyReadBegins(store: Store): number {
  followApiKeyChanges(store);
  return generationOf(store);
}

/** The record verified for `hash` before `now`'s deadline, or undefined (an expired entry is dropped). */
export function cachedApiKey(store: Store, hash: string, now: number): ApiKeyRecord | undefined {
  const cache = verified.get(store);
  const hit = cache?.get(hash);
  if (hit === undefined) return undefined;
  if (now < hit.until) return hit.rec;
  cache!.delete(hash);
  return undefined;
}

/**
 * Remembers that the key text hashing to `hash` verified as `rec`, until `until`, unless a key
 * was forgotten since `generation` (the read may predate a revocation that has committed since).
 */
export function rememberApiKey(store: Store, generation: number, hash: string, rec: ApiKeyRecord, until: number): void {
  if (generationOf(store) !== generation) return;
  let cache = verified.get(store);
  if (cache === undefined) verified.set(store, (cache = new Map()));
  if (cache.size >= MAX_ENTRIES) cache.clear();
  cache.set(hash, { rec, until });
}

/** Stores whose key changes this cache follows. */
const following = new WeakSet<Store>();

/**
 * Has the store tell this cache about key changes other processes commit (PostgreSQL), so a key
 * revoked elsewhere is refused at once rather than within the time bound. Once per store; the
 * subscription ends when the store closes. Called before a verification's read, not after it: a
 * change committed once the read began (and its notification) would otherwise reach no one, and
 * the key would stay cached for the whole bound.
 */
function followApiKeyChanges(store: Store): void {
  if (following.has(store) || typeof store.onApiKeyChange !== "function") return;
  following.add(store);
  try {
    store.onApiKeyChange((keyId) => (keyId === null ? forgetAllVerifiedApiKeys(store) : forgetVerifiedApiKey(store, keyId)));
  } catch {
    // A closed store: nothing to follow; the time bound still holds.
  }
}

/** Forgets every cached verification of the store in this process (key changes may have been missed). */
export function forgetAllVerifiedApiKeys(store: Store): void {
  generations.set(store, generationOf(store) + 1);
  verified.get(store)?.clear();
}

/**
 * Forgets the cached verifications of a key id in this process: revocation and delegation changes
 * call it after their commit, so this process refuses (or re-reads) the key at once.
 */
export function forgetVerifiedApiKey(store: Store, keyId: string): void {
  generations.set(store, generationOf(store) + 1);
  const cache = verified.get(store);
  if (!cache) return;
  for (const [hash, entry] of cache) if (entry.rec.keyId === keyId) cache.delete(hash);
}
