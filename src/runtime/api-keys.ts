/**
 * API keys per tenant with roles (docs/security.md, docs/http-api.md). The key text is `writ_<keyId>_<secret>`; only
 * `sha256(key text)` is stored. Lookups go by key id, then compare hashes in constant time.
 */
import { base64url, utf8 } from "../core/encoding.js";
import { WritError } from "../core/errors.js";
import type { CryptoPort, Random } from "../core/ports.js";
import { readCommitted, type Store } from "../core/store.js";
import { appendJournal, draft } from "../core/journal.js";
import { tenantJournalScope } from "../core/reserved.js";
import { API_ROLES, type Actor, type ApiKeyRecord, type ApiRole } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { apiKeyReadBegins, cachedApiKey, forgetVerifiedApiKey, rememberApiKey } from "./api-key-cache.js";
import { actorJson, checkActorList, keyPrincipal } from "./principals.js";

const KEY_RE = /^writ_([A-Za-z0-9]{8,40})_([A-Za-z0-9_-]{20,100})$/;

export interface NewApiKey {
  tenantId: string;
  spaces?: string[];
  roles: ApiRole[];
  /** Policy approver roles (e.g. `finance`) the holder may approve as. */
  approverRoles?: string[];
  name: string;
  /**
   * The principal the key belongs to (submits and votes act as it).
   * @defaultValue `user:<name>` (or `user:key:<keyId>` without a name)
   */
  principal?: Actor;
  /** Actors the key may also submit for (a delegation list). @defaultValue none */
  actsFor?: Actor[];
}

function hashOf(crypto: CryptoPort, text: string): string {
  return "sha256:" + base64url(crypto.sha256(utf8(text)));
}

/** Creates a key; the returned `key` text is shown once and never stored. */
export async function createApiKey(store: Store, crypto: CryptoPort, random: Random, input: NewApiKey, now: number): Promise<{ key: string; record: ApiKeyRecord }> {
  if (typeof input.tenantId !== "string" || !/^[A-Za-z0-9_.:-]{1,200}$/.test(input.tenantId)) throw new WritError("INVALID_ARGUMENT", "tenantId must be 1-200 characters of letters, digits, _ . : -");
  if (!Array.isArray(input.roles) || input.roles.length === 0 || !input.roles.every((r) => (API_ROLES as readonly string[]).includes(r))) {
    throw new WritError("INVALID_ARGUMENT", `roles must be a non-empty list of ${API_ROLES.join(", ")}`);
  }
  const spaces = input.spaces ?? ["*"];
  if (!Array.isArray(spaces) || spaces.length === 0 || !spaces.every((s) => typeof s === "string" && s.length > 0 && s.length <= 200)) throw new WritError("INVALID_ARGUMENT", "spaces must be a non-empty list");
  const approverRoles = input.approverRoles ?? [];
  if (!Array.isArray(approverRoles) || approverRoles.length > 20 || !approverRoles.every((r) => typeof r === "string" && /^[A-Za-z0-9_.:-]{1,100}$/.test(r))) {
    throw new WritError("INVALID_ARGUMENT", "approverRoles must be at most 20 names of letters, digits, _ . : -");
  }
  if (input.principal !== undefined) {
    const problems = checkActor(input.principal, "principal");
    if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
  }
  const actsFor = input.actsFor === undefined ? [] : checkActorList(input.actsFor, "actsFor");
  const keyId = base64url(random.bytes(12)).replace(/[-_]/g, "x");
  const key = `writ_${keyId}_${base64url(random.bytes(24))}`;
  const record: ApiKeyRecord = { keyId, tenantId: input.tenantId, spaces, roles: [...new Set(input.roles)], hash: hashOf(crypto, key), name: String(input.name ?? "").slice(0, 200), createdAt: now };
  if (approverRoles.length > 0) record.approverRoles = [...new Set(approverRoles)];
  // Every new key has an explicit principal (the default is the name-derived user).
  const principal = input.principal ? { type: input.principal.type, id: input.principal.id } : keyPrincipal(record);
  record.principal = principal;
  if (actsFor.length > 0) record.actsFor = actsFor;
  await store.transact(async (tx) => {
    await tx.putApiKey(record);
    await appendJournal(tx, crypto, tenantJournalScope(record.tenantId), [
      draft("api_key.created", [keyId], now, { keyId }, { name: record.name, roles: record.roles, spaces: record.spaces, principal: actorJson(principal), actsFor: (record.actsFor ?? []).map(actorJson) }),
    ]);
  });
  return { key, record };
}

/** The live record for a presented key, or null (malformed, unknown, wrong secret, revoked). */
export async function verifyApiKey(store: Store, crypto: CryptoPort, text: string): Promise<ApiKeyRecord | null> {
  const m = KEY_RE.exec(text);
  if (!m) return null;
  const rec = await readCommitted(store, (tx) => tx.getApiKey(m[1]!));
  if (!rec || rec.revokedAt !== undefined) return null;
  const a = utf8(rec.hash);
  const b = utf8(hashOf(crypto, text));
  return crypto.timingSafeEqual(a, b) ? rec : null;
}

/** How a {@link verifyApiKeyCached} cache behaves: see docs/security.md ("API key verification cache"). */
export interface ApiKeyCacheOptions {
  /** How long a verified key is answered from memory; 0 reads the store on every call. */
  maxAgeMs: number;
  /** Monotonic milliseconds. @defaultValue performance.now */
  now?: () => number;
}

/**
 * {@link verifyApiKey} with a short-lived cache of successful verifications (docs/security.md):
 * a key verified less than `maxAgeMs` ago is answered without reading the store. A revocation or
 * delegation change made through this process is seen at once; one made by another process (the
 * CLI, another server) within `maxAgeMs`. Failures are never cached.
 */
export async function verifyApiKeyCached(store: Store, crypto: CryptoPort, text: string, o: ApiKeyCacheOptions): Promise<ApiKeyRecord | null> {
  if (o.maxAgeMs <= 0) return verifyApiKey(store, crypto, text);
  if (!KEY_RE.test(text)) return null;
  const hash = hashOf(crypto, text);
  const now = o.now ? o.now() : performance.now();
  const hit = cachedApiKey(store, hash, now);
  if (hit !== undefined) return hit;
  // Told of key changes from before the read on: one committed meanwhile bumps the generation.
  const generation = apiKeyReadBegins(store);
  const rec = await verifyApiKey(store, crypto, text);
  if (rec !== null) rememberApiKey(store, generation, hash, rec, now + o.maxAgeMs);
  return rec;
}

export async function revokeApiKey(store: Store, keyId: string, tenantId: string, now: number): Promise<ApiKeyRecord> {
  const next = await store.transact(async (tx) => {
    const rec = await tx.getApiKey(keyId);
    if (!rec || rec.tenantId !== tenantId) throw new WritError("NOT_FOUND", `no API key ${keyId} for this tenant`);
    const next = { ...rec, revokedAt: rec.revokedAt ?? now };
    await tx.putApiKey(next);
    return next;
  });
  forgetVerifiedApiKey(store, keyId);
  return next;
}

/** True when the key may act in `spaceId` with `role` (admin implies every role). */
export function keyAllows(rec: ApiKeyRecord, spaceId: string, role: ApiRole): boolean {
  const space = rec.spaces.includes("*") || rec.spaces.includes(spaceId);
  return space && (rec.roles.includes(role) || rec.roles.includes("admin"));
}

/**
 * Whether the store holds any API key at all (of any tenant), or null when it cannot tell. The
 * Store port lists keys per tenant only, so a SQLite file is asked directly, read-only; other
 * stores answer null. For the message of an unknown key in an empty store (`writ mcp`).
 */
export async function storeHoldsApiKeys(store: Store): Promise<boolean | null> {
  const s = store as Partial<{ kind: string; path: string }>;
  if (s.kind !== "sqlite" || typeof s.path !== "string" || s.path === ":memory:") return null;
  try {
    const { default: Database } = await import("better-sqlite3");
    const db = new Database(s.path, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare("SELECT EXISTS (SELECT 1 FROM api_keys) AS found").get() as { found: number }).found === 1;
    } finally {
      db.close();
    }
  } catch {
    return null;
  }
}
