/**
 * Writ's policy annotations, read once when a policy set is prepared:
 *
 * - `@id("refund-small")` names the policy in decision reasons (default: the id Cedar assigns,
 *   `policy0`, `policy1`, … in text order). Ids must be unique in the set.
 * - `@approval("required")` on a permit: when that permit is among the determining policies, the
 *   result is REQUIRE_APPROVAL unless a valid approval is supplied.
 * - `@approvers("finance, ops")`: roles that may approve (comma-separated). Default: the host's.
 * - `@quorum("2")`: approvals needed. Default: the host's (1).
 * - `@approvalTtlMs("86400000")`: how long the approval request stays open. Default: the host's.
 *
 * The last three are only allowed next to `@approval("required")`. A bad value is a construction
 * error, never a silently ignored annotation.
 */
import type { PolicyResult } from "../core/policy.js";

export type ApprovalSpec = NonNullable<PolicyResult["approval"]>;

export interface PolicyMeta {
  /** The id reasons use. */
  id: string;
  effect: "permit" | "forbid";
  /** Position in the policy text (0-based). */
  index: number;
  /** Present when the permit carries `@approval("required")`. */
  approval?: ApprovalSpec;
}

/** Collects problems rather than stopping at the first, so one error names them all. */
export function readMeta(annotations: Record<string, string | null> | undefined, effect: "permit" | "forbid", fallbackId: string, index: number, problems: string[]): PolicyMeta {
  const a = annotations ?? {};
  const where = Object.hasOwn(a, "id") ? `${fallbackId} @id(${JSON.stringify(a.id)})` : fallbackId;
  let id = fallbackId;
  if (Object.hasOwn(a, "id")) {
    const v = a.id;
    if (typeof v !== "string" || v.trim() === "") problems.push(`${where}: @id needs a non-empty value`);
    else id = v;
  }
  const meta: PolicyMeta = { id, effect, index };
  const has = (k: string): boolean => Object.hasOwn(a, k);
  if (has("approval")) {
    if (a.approval !== "required") problems.push(`${where}: @approval accepts only "required", got ${JSON.stringify(a.approval)}`);
    else if (effect !== "permit") problems.push(`${where}: @approval("required") belongs on a permit, not a forbid`);
    else meta.approval = {};
  }
  for (const k of ["approvers", "quorum", "approvalTtlMs"]) {
    if (has(k) && !meta.approval && a.approval === undefined) problems.push(`${where}: @${k} needs @approval("required") on the same policy`);
  }
  if (meta.approval) {
    if (has("approvers")) {
      const roles = (a.approvers ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
      if (roles.length === 0) problems.push(`${where}: @approvers needs at least one role, e.g. @approvers("finance")`);
      else meta.approval.approverRoles = [...new Set(roles)];
    }
    if (has("quorum")) {
      const q = positiveInt(a.quorum);
      if (q === undefined || q > 1000) problems.push(`${where}: @quorum needs an integer from 1 to 1000, got ${JSON.stringify(a.quorum)}`);
      else meta.approval.quorum = q;
    }
    if (has("approvalTtlMs")) {
      const t = positiveInt(a.approvalTtlMs);
      if (t === undefined) problems.push(`${where}: @approvalTtlMs needs a positive integer of milliseconds, got ${JSON.stringify(a.approvalTtlMs)}`);
      else meta.approval.ttlMs = t;
    }
  }
  return meta;
}

function positiveInt(v: string | null | undefined): number | undefined {
  if (typeof v !== "string" || !/^[1-9][0-9]{0,14}$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

/**
 * Several determining permits may each require approval. Every requirement must hold, so: quorum is
 * the largest, the time to live the shortest, and the approver roles those every policy accepts
 * (the intersection of the lists given; an empty intersection means no one can approve and the
 * approval expires, which fails closed).
 */
export function mergeApprovalSpecs(specs: readonly ApprovalSpec[]): ApprovalSpec {
  const out: ApprovalSpec = {};
  for (const s of specs) {
    if (s.quorum !== undefined) out.quorum = Math.max(out.quorum ?? 0, s.quorum);
    if (s.ttlMs !== undefined) out.ttlMs = Math.min(out.ttlMs ?? Infinity, s.ttlMs);
    if (s.approverRoles !== undefined) out.approverRoles = out.approverRoles === undefined ? [...s.approverRoles] : out.approverRoles.filter((r) => s.approverRoles!.includes(r));
  }
  return out;
}
