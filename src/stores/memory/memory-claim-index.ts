/**
 * The cross-scope index of claimable invocations: a heap of `queued` ones by (runAt, createdAt,
 * invocationId) and a heap of `running` ones by lease expiry. Entries are never updated: every
 * invocation write pushes a fresh entry, and an entry is live only while its record object is
 * still the one stored (records are replaced, never mutated). Stale entries are dropped when they
 * surface. Entries a transaction pops are pushed back if it rolls back.
 */
import type { Invocation } from "../../core/types.js";
import { Heap } from "./memory-heap.js";
import type { ScopeData, Work } from "./memory-state.js";

/** One indexed invocation version. */
export interface ClaimEntry {
  readonly sd: ScopeData;
  readonly rec: Invocation;
  /** runAt (queued heap) or leaseExpiresAt (lease heap). */
  readonly at: number;
}

/** Claim order: runAt, then createdAt, then id (a total order, so claims are deterministic). */
export function runsBefore(a: Invocation, b: Invocation): boolean {
  if (a.runAt !== b.runAt) return a.runAt < b.runAt;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt;
  return a.invocationId < b.invocationId;
}

/** True while the entry's record is the stored version of its invocation. */
export function isLive(e: ClaimEntry): boolean {
  return e.sd.invocations.get(e.rec.invocationId) === e.rec;
}

export class ClaimIndex {
  readonly queued = new Heap<ClaimEntry>((a, b) => runsBefore(a.rec, b.rec));
  readonly leased = new Heap<ClaimEntry>((a, b) => a.at < b.at);

  /** Indexes a freshly stored record if it is, or may become, claimable. */
  track(sd: ScopeData, rec: Invocation): void {
    if (rec.status === "queued") this.queued.push({ sd, rec, at: rec.runAt });
    else if (rec.status === "running" && rec.leaseExpiresAt !== undefined) this.leased.push({ sd, rec, at: rec.leaseExpiresAt });
  }

  /** The live queued entry that runs first, dropping stale ones on the way (undoably). */
  firstQueued(w: Work): ClaimEntry | undefined {
    const heap = this.queued;
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      if (isLive(top)) return top;
      popUndoable(w, heap);
    }
    return undefined;
  }

  /** Removes and returns every live entry whose lease expired at or before `now`. */
  takeExpired(w: Work, now: number): ClaimEntry[] {
    const heap = this.leased;
    const out: ClaimEntry[] = [];
    for (let top = heap.peek(); top !== undefined && top.at <= now; top = heap.peek()) {
      popUndoable(w, heap);
      if (isLive(top)) out.push(top);
    }
    return out;
  }

  clear(): void {
    this.queued.clear();
    this.leased.clear();
  }
}

/** Pops the top entry; a rollback pushes it back (it may be live again once the rollback restores its record). */
export function popUndoable(w: Work, heap: Heap<ClaimEntry>): ClaimEntry | undefined {
  const e = heap.pop();
  if (e !== undefined) w.undo.push(() => heap.push(e));
  return e;
}
