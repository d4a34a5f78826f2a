/**
 * Reserved scopes (docs/security.md). Ids starting with `~` are never valid tenant or space ids of
 * a request, so these journals cannot be written through a request: the tenant journal
 * `{ tenantId, spaceId: "~tenant" }` records changes to a tenant's API keys (principals,
 * delegation lists).
 */
import type { Scope } from "./types.js";

export const RESERVED_ID_PREFIX = "~";

/** The reserved space of a tenant's own journal (API keys and their principals). */
export const TENANT_SPACE = "~tenant";

/** The journal of a tenant's key changes. */
export function tenantJournalScope(tenantId: string): Scope {
  return { tenantId, spaceId: TENANT_SPACE };
}

/** True for ids a request may not use (reserved for Writ's own journals). */
export function isReservedId(id: string): boolean {
  return id.startsWith(RESERVED_ID_PREFIX);
}
