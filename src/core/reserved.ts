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

/**
 * The unscoped journal: boundary refusals of requests that are not well-formed, under a decision
 * token that does not verify, are recorded here, so no unverified input chooses the scope (and
 * the tenant's journal and attempt list) it is written into.
 */
export const UNSCOPED_JOURNAL: Scope = Object.freeze({ tenantId: "~unscoped", spaceId: "~unscoped" });

/**
 * Where a boundary refusal is recorded: the request's scope when the request is well-formed; the
 * decision's scope when only the decision can name one and its signature verifies; otherwise the
 * unscoped journal.
 */
export function refusalScope(request: Scope | null, verifiedDecision: Scope | null): Scope {
  if (request) return { tenantId: request.tenantId, spaceId: request.spaceId };
  if (verifiedDecision) return { tenantId: verifiedDecision.tenantId, spaceId: verifiedDecision.spaceId };
  return UNSCOPED_JOURNAL;
}
