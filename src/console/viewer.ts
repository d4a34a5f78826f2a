/** Who is looking: the session's API key, re-read on every request, with its roles and spaces. */
import type { ApiKeyRecord, ApiRole, Scope } from "../core/types.js";
import { keyAllows } from "../runtime/api-keys.js";
import { authorize, keyActor, type Caller } from "../server/auth.js";
import type { ConsoleData } from "./data.js";
import type { Nav, Who } from "./html.js";
import { isSpaceId, type ResolvedConsoleOptions } from "./options.js";
import type { Session } from "./session.js";

export interface Viewer {
  sessionId: string;
  session: Session;
  key: ApiKeyRecord;
  who: Who;
  /** Spaces in view: the key's own list, or the configured ones for a key valid everywhere. */
  spaces: string[];
  allows(spaceId: string, role: ApiRole): boolean;
  /** Caller for host calls in `spaceId` (throws FORBIDDEN without one of `roles`). */
  caller(spaceId: string, roles: readonly ApiRole[]): Caller;
  scope(spaceId: string): Scope;
  /** Spaces in view where the key holds `role`. */
  spacesWith(role: ApiRole): string[];
}

export function viewerOf(sessionId: string, session: Session, key: ApiKeyRecord, o: ResolvedConsoleOptions): Viewer {
  const spaces = key.spaces.includes("*") ? o.spaces : key.spaces.filter(isSpaceId);
  const roles = key.roles.includes("admin") ? ["admin", "submit", "approve", "operate"] : [...key.roles];
  const allows = (s: string, r: ApiRole): boolean => keyAllows(key, s, r);
  return {
    sessionId,
    session,
    key,
    spaces,
    who: { actor: keyActor(key), keyId: key.keyId, tenantId: key.tenantId, roles: [...roles, ...(key.approverRoles ?? []).map((r) => `approver:${r}`)], spaces, csrf: session.csrf },
    allows,
    caller: (s, r) => authorize(key, s, r),
    scope: (s) => ({ tenantId: key.tenantId, spaceId: s }),
    spacesWith: (r) => spaces.filter((s) => allows(s, r)),
  };
}

/** Counts for the navigation and the title: pending approvals and open reconciliations in view. */
export async function navOf(v: Viewer, data: ConsoleData, active: Nav["active"]): Promise<Nav> {
  const approveIn = v.spacesWith("approve");
  const operateIn = v.spacesWith("operate");
  let pendingApprovals = 0;
  let openReconciliations = 0;
  for (const s of approveIn) pendingApprovals += (await data.approvals(v.scope(s), "pending", 1000)).length;
  for (const s of operateIn) openReconciliations += (await data.reconciliations(v.scope(s), { status: "open", limit: 1000 })).length;
  const canRead = v.spaces.some((s) => v.allows(s, "submit") || v.allows(s, "approve") || v.allows(s, "operate"));
  const canNotify = v.key.spaces.includes("*") && keyAllows(v.key, "*", "admin");
  return { active, pendingApprovals, openReconciliations, canApprove: approveIn.length > 0, canOperate: operateIn.length > 0, canRead, canNotify };
}
