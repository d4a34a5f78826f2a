/**
 * Who an MCP client is: the principal of its API key, in one space. The actor of every tool call
 * is this principal, never an argument (docs/mcp.md, "Who the agent is").
 */
import { WritError } from "../core/errors.js";
import type { CryptoPort } from "../core/ports.js";
import type { Store } from "../core/store.js";
import type { Actor, ApiKeyRecord, Scope, Submitter } from "../core/types.js";
import { keyAllows, verifyApiKey } from "../runtime/api-keys.js";
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

/** The space a key acts in: the one asked for (which the key must cover), else the key's only space. */
export function spaceFor(key: ApiKeyRecord, asked: string | undefined): string {
  if (asked !== undefined) {
    if (!/^[A-Za-z0-9_.:-]{1,200}$/.test(asked)) throw new WritError("INVALID_ARGUMENT", "the space must be 1-200 characters of letters, digits, _ . : -");
    if (!key.spaces.includes("*") && !key.spaces.includes(asked)) throw new WritError("FORBIDDEN", "this API key may not act in this space");
    return asked;
  }
  const only = key.spaces.length === 1 && key.spaces[0] !== "*" ? key.spaces[0] : undefined;
  if (only === undefined) throw new WritError("INVALID_ARGUMENT", "this API key covers several spaces: name one (HTTP: the writ-space header or ?space=; stdio: --space)");
  return only;
}

/** The caller for a presented key text, or null when the key is not valid (unknown, revoked, mistyped). */
export async function callerForKey(store: Store, crypto: CryptoPort, keyText: string, space: string | undefined): Promise<McpCaller | null> {
  const key = await verifyApiKey(store, crypto, keyText);
  if (!key) return null;
  return callerOf(key, space);
}

export function callerOf(key: ApiKeyRecord, space: string | undefined): McpCaller {
  const spaceId = spaceFor(key, space);
  const canRead = (["submit", "approve", "operate"] as const).some((r) => keyAllows(key, spaceId, r));
  if (!canRead) throw new WritError("FORBIDDEN", "this API key holds no role in this space");
  return { key, scope: { tenantId: key.tenantId, spaceId }, principal: principalOf(key), submittedBy: submitterOf(key), canSubmit: keyAllows(key, spaceId, "submit") };
}
