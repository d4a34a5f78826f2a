/**
 * Who an MCP client is: the principal of its API key, in one space. The actor of every tool call
 * is this principal, never an argument (docs/mcp.md, "Who the agent is").
 */
import { WritError } from "../core/errors.js";
import type { CryptoPort } from "../core/ports.js";
import type { Store } from "../core/store.js";
import type { Actor, ApiKeyRecord, Scope, Submitter } from "../core/types.js";
import { keyAllows, verifyApiKey } from "../runtime/api-keys.js";
import { defaultSpace, tenantSpacesOf } from "../runtime/default-space.js";
import { keyPrincipal, submitterOf } from "../runtime/principals.js";

/** An authenticated MCP caller: the key, the scope it acts in and its principal. */
export interface McpCaller {
  key: ApiKeyRecord;
  scope: Scope;
  principal: Actor;
  /** What the invocation records about who submitted it (principal and key id). */
  submittedBy: Submitter;
  /** The key holds `submit` in the space: tool calls are allowed (tools/list is empty otherwise). */
  canSubmit: boolean;
}

/**
 * The principal a key belongs to: the security work's `keyPrincipal` (docs/security.md), the key's
 * bound principal, or for keys made before principals existed the user named after the key.
 */
export function principalOf(key: ApiKeyRecord): Actor {
  return keyPrincipal(key);
}

/** The space a key acts in when it names one: a valid id the key covers. */
export function spaceFor(key: ApiKeyRecord, asked: string): string {
  if (!/^[A-Za-z0-9_.:-]{1,200}$/.test(asked)) throw new WritError("INVALID_ARGUMENT", "the space must be 1-200 characters of letters, digits, _ . : -");
  if (!key.spaces.includes("*") && !key.spaces.includes(asked)) throw new WritError("FORBIDDEN", "this API key may not act in this space");
  return asked;
}

/**
 * The space of an MCP client by the one default-space rule (src/runtime/default-space.ts): the
 * one it named, else the key's only space, else the tenant's only space, else the config's demo
 * space (`demoSpace`); an error naming the ways to pick one when none applies.
 */
export async function resolveSpace(store: Store, key: ApiKeyRecord, asked: string | undefined, demoSpace: string | undefined): Promise<string> {
  if (asked !== undefined) return spaceFor(key, asked);
  const chosen = await defaultSpace({ key, tenantSpaces: () => tenantSpacesOf(store, key.tenantId), demoSpace });
  if (chosen === null) throw new WritError("INVALID_ARGUMENT", "this API key covers several spaces and none is the default: name one (HTTP: the writ-space header or ?space=; stdio: --space or $WRIT_SPACE)");
  return spaceFor(key, chosen.spaceId);
}

/** The caller for a presented key text, or null when the key is not valid (unknown, revoked, mistyped). */
export async function callerForKey(store: Store, crypto: CryptoPort, keyText: string, space: string | undefined, demoSpace?: string): Promise<McpCaller | null> {
  const key = await verifyApiKey(store, crypto, keyText);
  if (!key) return null;
  return callerOf(key, await resolveSpace(store, key, space, demoSpace));
}

/** The caller of a verified key in a space it covers (see {@link resolveSpace} for the default). */
export function callerOf(key: ApiKeyRecord, spaceId: string): McpCaller {
  spaceFor(key, spaceId);
  const canRead = (["submit", "approve", "operate"] as const).some((r) => keyAllows(key, spaceId, r));
  if (!canRead) throw new WritError("FORBIDDEN", "this API key holds no role in this space");
  return { key, scope: { tenantId: key.tenantId, spaceId }, principal: principalOf(key), submittedBy: submitterOf(key), canSubmit: keyAllows(key, spaceId, "submit") };
}
