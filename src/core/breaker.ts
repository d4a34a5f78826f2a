/**
 * Circuit breaker transitions (docs/host.md, "Circuit breakers"): pure functions from the stored
 * record to the record to write. The host reads a breaker from the store, decides here, and
 * writes the answer with a conditional write (the record's `rev`), so two workers that decide on
 * the same read cannot both win: that is how exactly one probe goes through after a cooldown.
 */
import { isWritError } from "./errors.js";
import { draft, unsealedEntries } from "./journal.js";
import { readCommitted, type Store } from "./store.js";
import type { BreakerRecord, Scope } from "./types.js";

/** A state change a write made (for metrics). */
export interface BreakerChange {
  from: BreakerRecord["state"];
  to: BreakerRecord["state"];
}

const changeOf = (rec: BreakerRecord | null, write: BreakerRecord | null): BreakerChange | null =>
  write !== null && (rec?.state ?? "closed") !== write.state ? { from: rec?.state ?? "closed", to: write.state } : null;

/** Which breaker: one per (scope, connector, operation). */
export type BreakerKey = Scope & { connector: string; operation: string };

export interface BreakerPolicy {
  /** Consecutive transient failures or timeouts that open the breaker. */
  failureThreshold: number;
  /** How long an open breaker refuses calls. */
  cooldownMs: number;
  /** How long the probe slot stays claimed without an outcome before another call may probe. */
  probeTimeoutMs: number;
}

/** What a call may do, on what the store holds. */
export type BreakerGate =
  /** Closed (or this holder's own live probe): go on, nothing to write. */
  | { kind: "pass" }
  /** Open, or half-open with another holder's live probe: do not call before `until`. */
  | { kind: "refuse"; until: number; state: "open" | "half_open" }
  /** The cooldown is over and no live probe holds the slot: claim it by writing `write`. */
  | { kind: "probe"; write: BreakerRecord };

/** The shortest wait of a call refused while another call probes (ms). */
export const PROBE_RECHECK_MS = 250;

/**
 * How long a call refused by a live probe waits before it looks again: as long as the probe has
 * been running (so a refused call looks O(log) times per probe), at least {@link PROBE_RECHECK_MS},
 * at most until the probe's slot expires or a cooldown passes.
 */
export function probeRecheckMs(probeUntil: number, now: number, p: BreakerPolicy): number {
  const age = now - (probeUntil - p.probeTimeoutMs);
  return Math.max(1, Math.min(probeUntil - now, p.cooldownMs, Math.max(PROBE_RECHECK_MS, age)));
}

/** The call's outcome as a breaker counts it (a permanent failure counts as a success: the provider answered). */
export type BreakerOutcome = "success" | "failure";

/** The record without a probe slot. */
function withoutProbe(rec: BreakerRecord): BreakerRecord {
  const { probeHolder: _h, probeUntil: _u, ...rest } = rec;
  return rest;
}

/** Decides whether `holder` may call now. */
export function gateBreaker(rec: BreakerRecord | null, holder: string, now: number, p: BreakerPolicy): BreakerGate {
  if (rec === null || rec.state === "closed") return { kind: "pass" };
  if (rec.state === "open" && now < rec.openUntil) return { kind: "refuse", until: rec.openUntil, state: "open" };
  const live = rec.state === "half_open" && rec.probeHolder !== undefined && now < (rec.probeUntil ?? 0);
  if (live && rec.probeHolder === holder) return { kind: "pass" };
  // Another call is probing: come back soon, not when its slot would expire. Most probes answer in
  // a round trip, and a success closes the breaker for everyone; waiting out `probeUntil` (the
  // call deadline plus a margin) would hold every call of the scope that long after the provider
  // recovered. So the wait grows with the probe's age (at least PROBE_RECHECK_MS, doubling while
  // it runs), never past its slot or a cooldown.
  if (live) return { kind: "refuse", until: now + probeRecheckMs(rec.probeUntil!, now, p), state: "half_open" };
  return { kind: "probe", write: { ...rec, state: "half_open", probeHolder: holder, probeUntil: now + p.probeTimeoutMs, updatedAt: now } };
}

/**
 * The record after a call's outcome, or null when nothing changes (a success on a closed breaker
 * with no failures counted: the common case, which writes nothing).
 */
export function breakerAfter(
  rec: BreakerRecord | null,
  key: BreakerKey,
  outcome: BreakerOutcome,
  holder: string,
  now: number,
  p: BreakerPolicy,
): BreakerRecord | null {
  if (outcome === "success") {
    if (rec === null || (rec.state === "closed" && rec.failures === 0)) return null;
    return { ...withoutProbe(rec), state: "closed", failures: 0, openUntil: 0, updatedAt: now };
  }
  const base: BreakerRecord = rec ?? { tenantId: key.tenantId, spaceId: key.spaceId, connector: key.connector, operation: key.operation, state: "closed", failures: 0, openedAt: 0, openUntil: 0, updatedAt: now };
  const failures = base.failures + 1;
  const open = (): BreakerRecord => ({ ...withoutProbe(base), state: "open", failures, openedAt: now, openUntil: now + p.cooldownMs, updatedAt: now });
  switch (base.state) {
    case "closed":
      return failures >= p.failureThreshold ? open() : { ...base, failures, updatedAt: now };
    case "half_open":
      // The probe failed (or its slot expired unanswered): open again for a new cooldown. A
      // failure of a call that started before the breaker opened is counted, nothing more.
      return base.probeHolder === holder || base.probeHolder === undefined || now >= (base.probeUntil ?? 0) ? open() : { ...base, failures, updatedAt: now };
    case "open":
      return { ...base, failures, updatedAt: now };
  }
}

/** Gives the probe slot back when `holder` claimed it but never called (denied, parked, refused). */
export function releaseProbe(rec: BreakerRecord | null, holder: string, now: number): BreakerRecord | null {
  if (rec === null || rec.state !== "half_open" || rec.probeHolder !== holder) return null;
  return { ...withoutProbe(rec), updatedAt: now };
}

/** Rounds a breaker write may lose to another writer before it gives up (another writer decided). */
const ROUNDS = 5;

/**
 * Reads the breaker, decides with `decide`, and writes what it answers in the same transaction,
 * conditional on the rev read (an insert when there was no row): a writer that lost to another
 * (STALE, or CONFLICT on the first insert) decides again on what the winner wrote. Returns what
 * the last decision answered; after {@link ROUNDS} lost rounds, `onContended`.
 */
export async function mutateBreaker<T>(store: Store, key: BreakerKey, decide: (rec: BreakerRecord | null) => { answer: T; write: BreakerRecord | null }, onContended: T): Promise<T> {
  for (let round = 0; round < ROUNDS; round++) {
    try {
      return await store.transact(async (tx) => {
        const rec = await tx.getBreaker(key, key.connector, key.operation);
        const d = decide(rec);
        if (d.write !== null) await tx.putBreaker(key, d.write);
        // An opening is journaled with the write that opens it (notifications read it from there).
        if (d.write !== null && d.write.state === "open" && rec?.state !== "open") {
          const w = d.write;
          const entry = draft("breaker.opened", [key.connector, key.operation, w.openedAt], w.openedAt, { connector: key.connector, operation: key.operation }, { connector: key.connector, operation: key.operation, failures: w.failures, openUntil: w.openUntil, from: rec?.state ?? "closed" });
          const scope = { tenantId: key.tenantId, spaceId: key.spaceId };
          await tx.insertUnsealed(scope, unsealedEntries(scope, [entry]));
        }
        return d.answer;
      });
    } catch (e) {
      if (!isWritError(e, "STALE") && !isWritError(e, "CONFLICT")) throw e;
    }
  }
  return onContended;
}

/**
 * The check before a call: one read on the store's read path; only when the cooldown is over and
 * the probe slot is free does it write, claiming the slot atomically (of several workers that
 * saw the slot free, exactly one claims it; the others are refused).
 */
export async function checkBreaker(
  store: Store,
  key: BreakerKey,
  holder: string,
  now: number,
  p: BreakerPolicy,
  known?: BreakerRecord | null,
): Promise<{ gate: BreakerGate; seen: BreakerRecord | null; change?: BreakerChange }> {
  const seen = known !== undefined ? known : await readCommitted(store, (tx) => tx.getBreaker(key, key.connector, key.operation));
  const first = gateBreaker(seen, holder, now, p);
  if (first.kind !== "probe") return { gate: first, seen };
  let claimed: BreakerRecord | null = null;
  let change: BreakerChange | null = null;
  // Lost every write round to other writers: one of them claimed the probe just now.
  const contended: BreakerGate = { kind: "refuse", until: now + Math.min(PROBE_RECHECK_MS, p.cooldownMs), state: "half_open" };
  const gate = await mutateBreaker<BreakerGate>(
    store,
    key,
    (rec) => {
      const g = gateBreaker(rec, holder, now, p);
      claimed = g.kind === "probe" ? g.write : rec;
      change = g.kind === "probe" ? changeOf(rec, g.write) : null;
      return { answer: g, write: g.kind === "probe" ? g.write : null };
    },
    contended,
  );
  return { gate, seen: claimed, ...(change !== null && gate.kind === "probe" ? { change } : {}) };
}

/**
 * Records a call's outcome. `seen` is what the check before the call read: a success on a breaker
 * that was closed with no failures writes nothing and reads nothing more (the common case).
 */
export async function recordBreaker(store: Store, key: BreakerKey, outcome: BreakerOutcome, holder: string, seen: BreakerRecord | null | undefined, now: number, p: BreakerPolicy): Promise<BreakerChange | null> {
  if (outcome === "success" && seen !== undefined && breakerAfter(seen, key, "success", holder, now, p) === null) return null;
  return mutateBreaker<BreakerChange | null>(
    store,
    key,
    (rec) => {
      const write = breakerAfter(rec, key, outcome, holder, now, p);
      return { answer: changeOf(rec, write), write };
    },
    null,
  );
}

/** Gives back a probe slot `holder` claimed and did not use. */
export async function releaseBreaker(store: Store, key: BreakerKey, holder: string, now: number): Promise<void> {
  await mutateBreaker(store, key, (rec) => ({ answer: undefined, write: releaseProbe(rec, holder, now) }), undefined);
}
