/**
 * Cross-scope worker operations: claiming runnable invocations, heartbeats, next wake-up time, and
 * the sweep queries (overdue parked invocations, expired pending approvals).
 */
import { WritError } from "../../core/errors.js";
import type { ClaimOptions } from "../../core/store.js";
import type { Approval, CompletionRecord, Invocation, Scope } from "../../core/types.js";
import { isLive, runsBefore, type ClaimEntry } from "./memory-claim-index.js";
import { copy } from "./memory-copy.js";
import { storeInvocation } from "./memory-invocations.js";
import { limited, type MemoryState, type Work } from "./memory-state.js";

/**
 * Claims up to `min(limit, tokens.length)` invocations in (runAt, createdAt, id) order among
 * `queued` ones with runAt <= now and `running` ones whose lease expired at or before now.
 */
export function claimInvocations(w: Work, opts: ClaimOptions): Invocation[] {
  checkClaimOptions(opts);
  const { owner, tokens, now, leaseMs } = opts;
  const n = Math.min(opts.limit, tokens.length);
  if (n === 0) return [];
  const claims = w.state.claims;
  const expired = claims.takeExpired(w, now).sort((a, b) => (runsBefore(a.rec, b.rec) ? -1 : 1));
  const out: Invocation[] = [];
  let ei = 0;
  while (out.length < n) {
    const q = claims.firstQueued(w);
    const runnable = q !== undefined && q.rec.runAt <= now ? q : undefined;
    const e = expired[ei];
    let pick: ClaimEntry;
    if (runnable !== undefined && (e === undefined || runsBefore(runnable.rec, e.rec))) {
      pick = runnable;
      claims.queued.pop();
      w.undo.push(() => claims.queued.push(runnable));
    } else if (e !== undefined) {
      pick = e;
      ei += 1;
      if (!isLive(e)) continue;
    } else break;
    const next: Invocation = {
      ...pick.rec,
      status: "running",
      leaseOwner: owner,
      leaseToken: tokens[out.length],
      leaseExpiresAt: now + leaseMs,
      attemptCount: pick.rec.attemptCount + 1,
      updatedAt: now,
      rev: (pick.rec.rev ?? 0) + 1,
    };
    storeInvocation(w, pick.sd, next);
    out.push(copy(next));
  }
  // Expired leases not claimed this time stay claimable.
  for (; ei < expired.length; ei++) claims.leased.push(expired[ei] as ClaimEntry);
  return out;
}

/** Extends every live lease of `owner` (running, not expired at `now`) to now + leaseMs. */
export function heartbeat(w: Work, owner: string, now: number, leaseMs: number): number {
  checkTime("now", now);
  checkLeaseMs(leaseMs);
  const held = w.state.claims.leased.values().filter((e) => e.at > now && e.rec.leaseOwner === owner && isLive(e));
  let count = 0;
  for (const e of held) {
    if (!isLive(e)) continue; // a duplicate entry of a lease already extended
    storeInvocation(w, e.sd, { ...e.rec, leaseExpiresAt: now + leaseMs });
    count += 1;
  }
  return count;
}

/** Earliest runAt among queued invocations of every scope. */
export function nextRunAt(w: Work): number | null {
  return w.state.claims.firstQueued(w)?.rec.runAt ?? null;
}

function* allScopes(state: MemoryState) {
  for (const spaces of state.tenants.values()) yield* spaces.values();
}

export function listOverdueParked(w: Work, now: number, limit: number): Invocation[] {
  const out: Invocation[] = [];
  for (const sd of allScopes(w.state)) {
    for (const inv of sd.invocations.values()) {
      if (inv.status === "parked" && inv.deadlineAt !== undefined && inv.deadlineAt <= now && inv.overdueAt === undefined) out.push(inv);
    }
  }
  return limited(out.sort((a, b) => a.deadlineAt! - b.deadlineAt!), limit).map(copy);
}

export function listEarlyCompletions(w: Work, receivedBefore: number, limit: number, scope?: Scope): CompletionRecord[] {
  const out: CompletionRecord[] = [];
  for (const sd of allScopes(w.state)) {
    for (const c of sd.completions.values()) {
      if (c.disposition === "early" && c.receivedAt < receivedBefore && (!scope || (c.tenantId === scope.tenantId && c.spaceId === scope.spaceId))) out.push(c);
    }
  }
  return limited(out.sort((a, b) => a.receivedAt - b.receivedAt), limit).map(copy);
}

export function listExpiredPendingApprovals(w: Work, now: number, limit: number): Approval[] {
  const out: Approval[] = [];
  for (const sd of allScopes(w.state)) for (const a of sd.approvals.values()) if (a.status === "pending" && a.expiresAt <= now) out.push(a);
  return limited(out.sort((a, b) => a.expiresAt - b.expiresAt), limit).map(copy);
}

function checkClaimOptions(opts: ClaimOptions): void {
  if (typeof opts !== "object" || opts === null) throw new WritError("INVALID_ARGUMENT", "claimInvocations needs options");
  if (typeof opts.owner !== "string" || opts.owner === "") throw new WritError("INVALID_ARGUMENT", "claimInvocations: owner must be a non-empty string");
  if (!Array.isArray(opts.tokens) || !opts.tokens.every((t) => typeof t === "string" && t !== "")) {
    throw new WritError("INVALID_ARGUMENT", "claimInvocations: tokens must be non-empty strings");
  }
  if (!Number.isInteger(opts.limit) || opts.limit < 0) throw new WritError("INVALID_ARGUMENT", "claimInvocations: limit must be a non-negative integer");
  checkTime("now", opts.now);
  checkLeaseMs(opts.leaseMs);
}

function checkTime(name: string, v: number): void {
  if (!Number.isFinite(v)) throw new WritError("INVALID_ARGUMENT", `${name} must be a finite number of epoch milliseconds`);
}

function checkLeaseMs(v: number): void {
  if (!Number.isFinite(v) || v <= 0) throw new WritError("INVALID_ARGUMENT", "leaseMs must be a positive number");
}
