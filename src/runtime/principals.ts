/**
 * Principals bound to API keys (docs/security.md). Every key belongs to one principal of its
 * tenant (a user, agent or service id). A submit acts as that principal, or as an actor on the
 * key's delegation list (`actsFor`, set by an admin and journaled in the tenant journal). Votes
 * are cast as the key's principal; the principal or key that submitted a request never approves
 * or denies it.
 *
 * @example
 * const actor = resolveActor(key, body.actor); // the principal, or 403 FORBIDDEN
 * await host.submit({ ...request, actor }, { submittedBy: submitterOf(key) });
 */
import { base64url, utf8 } from "../core/encoding.js";
import { WritError } from "../core/errors.js";
import { appendJournal, draft } from "../core/journal.js";
import type { CryptoPort } from "../core/ports.js";
import { tenantJournalScope } from "../core/reserved.js";
import type { Store } from "../core/store.js";
import type { Actor, ApiKeyRecord, Submitter } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { forgetVerifiedApiKey } from "./api-key-cache.js";

/** At most this many actors on one key's delegation list. */
export const MAX_ACTS_FOR = 50;

function same(a: Actor, b: Actor): boolean {
  return a.type === b.type && a.id === b.id;
}

/** An actor as journal data. */
export function actorJson(a: Actor): { type: string; id: string } {
  return { type: a.type, id: a.id };
}

/** `type:id`, the way actors are written in messages and the CLI. */
export function actorText(a: Actor): string {
  return `${a.type}:${a.id}`;
}

/**
 * The principal a key acts as. Keys created before principals existed act as the `user` named
 * after the key (or `key:<keyId>` when it has no printable name).
 */
export function keyPrincipal(key: ApiKeyRecord): Actor {
  if (key.principal) return { type: key.principal.type, id: key.principal.id };
  const name = key.name.trim();
  // eslint-disable-next-line no-control-regex -- a name with control characters is not shown as an identity
  return { type: "user", id: name.length > 0 && !/[\u0000-\u001f\u007f-\u009f]/.test(name) ? name : `key:${key.keyId}` };
}

/** The actors a key may submit as: its principal first, then its delegation list. */
export function keyActors(key: ApiKeyRecord): Actor[] {
  return [keyPrincipal(key), ...(key.actsFor ?? []).map((a) => ({ type: a.type, id: a.id }))];
}

/** True when the key may submit as `actor` (its principal, or one it was allowed to act for). */
export function keyMayActAs(key: ApiKeyRecord, actor: Actor): boolean {
  return keyActors(key).some((a) => same(a, actor));
}

/**
 * The actor of a request a key submits: the key's principal when the request names none, the
 * named actor when the key may act as it, otherwise `FORBIDDEN` (HTTP 403).
 */
export function resolveActor(key: ApiKeyRecord, requested: Actor | undefined): Actor {
  const principal = keyPrincipal(key);
  if (requested === undefined) return principal;
  const actor = { type: requested.type, id: requested.id };
  if (keyMayActAs(key, actor)) return actor;
  throw new WritError("FORBIDDEN", `this API key acts as ${actorText(principal)} and may not act for ${actorText(actor)} (an admin can add it to the key's delegation list)`, {
    details: { principal, actor },
  });
}

/** What the invocation records about who submitted it through `key`. */
export function submitterOf(key: ApiKeyRecord): Submitter {
  return { principal: keyPrincipal(key), keyId: key.keyId };
}

/** Checks a list of actors (for principals and delegation lists); throws INVALID_ARGUMENT. */
export function checkActorList(v: unknown, what: string): Actor[] {
  if (!Array.isArray(v) || v.length > MAX_ACTS_FOR) throw new WritError("INVALID_ARGUMENT", `${what} must be a list of at most ${MAX_ACTS_FOR} actors { type, id }`);
  const out: Actor[] = [];
  v.forEach((a: unknown, i) => {
    const problems = checkActor(a, `${what}[${i}]`);
    if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
    const x = a as Actor;
    if (!out.some((y) => same(x, y))) out.push({ type: x.type, id: x.id });
  });
  return out;
}

/**
 * Replaces a key's delegation list (an admin's act), journaled in the tenant journal as
 * `api_key.delegation_set` with who set it. An empty list removes every delegation.
 */
export async function setKeyDelegation(
  store: Store,
  crypto: CryptoPort,
  input: { tenantId: string; keyId: string; actsFor: Actor[]; by: Actor },
  now: number,
): Promise<ApiKeyRecord> {
  const actsFor = checkActorList(input.actsFor, "actsFor");
  const byProblems = checkActor(input.by, "by");
  if (byProblems.length > 0) throw new WritError("INVALID_ARGUMENT", byProblems.join("; "));
  const next = await store.transact(async (tx) => {
    const rec = await tx.getApiKey(input.keyId);
    if (!rec || rec.tenantId !== input.tenantId) throw new WritError("NOT_FOUND", `no API key ${input.keyId} for this tenant`);
    if (rec.revokedAt !== undefined) throw new WritError("INVALID_STATE", `API key ${input.keyId} is revoked`);
    const next: ApiKeyRecord = { ...rec };
    if (actsFor.length > 0) next.actsFor = actsFor;
    else delete next.actsFor;
    await tx.putApiKey(next);
    const by = { type: input.by.type, id: input.by.id };
    // Deterministic id: the same change written twice at the same instant is one entry.
    const tag = base64url(crypto.sha256(utf8(JSON.stringify({ actsFor, by })))).slice(0, 16);
    await appendJournal(tx, crypto, tenantJournalScope(rec.tenantId), [
      draft("api_key.delegation_set", [rec.keyId, now, tag], now, { keyId: rec.keyId }, { principal: actorJson(keyPrincipal(rec)), actsFor: actsFor.map(actorJson), by }),
    ]);
    return next;
  });
  // A server in this process must not act on the old delegation list from its key cache.
  forgetVerifiedApiKey(store, input.keyId);
  return next;
}
