/**
 * API keys over HTTP: `Authorization: Bearer writ_<id>_<secret>`, verified against the stored hash
 * (`verifyApiKey`; a key verified less than the app's `apiKeyCacheMs` ago is answered from an
 * in-process cache, docs/security.md), then checked for the space and the route's roles. The key
 * text is never logged, echoed or put in an error.
 */
import type { CryptoPort } from "../core/ports.js";
import type { Store } from "../core/store.js";
import { API_ROLES, type Actor, type ApiKeyRecord, type ApiRole, type Scope } from "../core/types.js";
import { keyAllows, verifyApiKeyCached, type ApiKeyCacheOptions } from "../runtime/api-keys.js";
import { keyPrincipal } from "../runtime/principals.js";
import { ApiError } from "./errors.js";

/** Who is calling a keyed route, once authenticated and authorised. */
export interface Caller {
  key: ApiKeyRecord;
  /** The tenant comes from the key; the space from the path. */
  scope: Scope;
  /**
   * The key's principal (approver, operator, canceller, and the default submitting actor); keys
   * from before principals act as the `user` named after the key (`key:<keyId>` without a name).
   */
  actor: Actor;
  /** The key's roles; `admin` holds every role. */
  roles: ApiRole[];
}

const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i;
const UNAUTHORIZED_HEADERS = { "www-authenticate": 'Bearer realm="writ"' };

function unauthorized(message: string): ApiError {
  return new ApiError("UNAUTHORIZED", message, undefined, UNAUTHORIZED_HEADERS);
}

/** The key record for an Authorization header, or 401; `cache` as in `verifyApiKeyCached` (off by default). */
export async function authenticate(store: Store, crypto: CryptoPort, header: string | undefined, cache: ApiKeyCacheOptions = { maxAgeMs: 0 }): Promise<ApiKeyRecord> {
  if (header === undefined || header.length === 0) throw unauthorized("an API key is required: Authorization: Bearer writ_<id>_<secret>");
  if (header.length > 512) throw unauthorized("the Authorization header is not a Writ API key");
  const m = BEARER.exec(header);
  if (!m) throw unauthorized("the Authorization header must be: Bearer writ_<id>_<secret>");
  const rec = await verifyApiKeyCached(store, crypto, m[1]!, cache);
  if (!rec) throw unauthorized("the API key is not valid (unknown, revoked or mistyped)");
  return rec;
}

/** The key as an actor, i.e. its principal: see {@link Caller.actor} and `keyPrincipal`. */
export function keyActor(key: ApiKeyRecord): Actor {
  return keyPrincipal(key);
}

/** 403 unless the key may act in `spaceId` with one of `roles`. */
export function authorize(key: ApiKeyRecord, spaceId: string, roles: readonly ApiRole[]): Caller {
  if (!key.spaces.includes("*") && !key.spaces.includes(spaceId)) {
    throw new ApiError("FORBIDDEN", "this API key may not act in this space");
  }
  if (!roles.some((r) => keyAllows(key, spaceId, r))) {
    throw new ApiError("FORBIDDEN", `this API key lacks the role this route needs (one of: ${roles.join(", ")})`, { needs: [...roles] });
  }
  return {
    key,
    scope: { tenantId: key.tenantId, spaceId },
    actor: keyPrincipal(key),
    roles: key.roles.includes("admin") ? [...API_ROLES] : [...key.roles],
  };
}

/**
 * 403 unless the key may act on the whole tenant: it covers every space (`*`) and holds one of
 * `roles`. The caller's scope names the tenant with the space `*`.
 */
export function authorizeTenant(key: ApiKeyRecord, roles: readonly ApiRole[]): Caller {
  if (!key.spaces.includes("*")) throw new ApiError("FORBIDDEN", "this route acts on the whole tenant: it needs an API key for every space (*)");
  return authorize(key, "*", roles);
}
