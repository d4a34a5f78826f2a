/**
 * The memory store's state: one `ScopeData` per (tenantId, spaceId), each holding its records in
 * Maps keyed the way the Store port looks them up, plus the cross-scope claim index. Stored
 * records are never mutated in place: every write stores a fresh object, which lets the claim
 * index recognise stale entries by identity.
 */
import { WritError } from "../../core/errors.js";
import type {
  ApiKeyRecord,
  BreakerRecord,
  Approval,
  AttemptRecord,
  Authority,
  CompletionRecord,
  ConsumedDecision,
  Delivery,
  IdempotencyRecord,
  Invocation,
  JournalCheckpoint,
  JournalEntry,
  PolicyVersion,
  ReconciliationRecord,
  Scope,
  StepCheckpoint,
  Subscription,
  UnsealedEntry,
} from "../../core/types.js";
import { ClaimIndex } from "./memory-claim-index.js";

/** Every record of one scope. */
export interface ScopeData {
  readonly decisions: Map<string, ConsumedDecision>;
  /** Keyed by `keyOf(action, idempotencyKey)`. */
  readonly idempotency: Map<string, IdempotencyRecord>;
  /** In seq order; `attempts[i].seq === i + 1`; a pruned attempt leaves null in its slot (docs/retention.md). */
  readonly attempts: Array<AttemptRecord | null>;
  /** attemptId -> index in `attempts`. */
  readonly attemptIndex: Map<string, number>;
  /** Live sealed entries in seq order; `journal[i].seq === archive.pruned + i + 1` (entries up to `archive.pruned` were archived and pruned). */
  readonly journal: JournalEntry[];
  /** Entries written and not sealed yet, in the order they were written. */
  readonly unsealed: UnsealedEntry[];
  /** Ids of sealed and unsealed entries. */
  readonly journalIds: Set<string>;
  /** In seq order. */
  readonly checkpoints: JournalCheckpoint[];
  /** The archive watermark (`Tx.journalArchivedThrough`) and how many sealed entries were pruned below it (`Tx.pruneJournal`). */
  readonly archive: { through: number; pruned: number };
  readonly invocations: Map<string, Invocation>;
  /** `keyOf(action, idempotencyKey)` -> invocationId. */
  readonly invocationKeys: Map<string, string>;
  /** invocationId -> stepIndex -> checkpoint. */
  readonly steps: Map<string, Map<number, StepCheckpoint>>;
  readonly reconciliations: Map<string, ReconciliationRecord>;
  readonly authorities: Map<string, Authority>;
  readonly approvals: Map<string, Approval>;
  /** version -> policy version. */
  readonly policyVersions: Map<number, PolicyVersion>;
  /** `keyOf(connector, completionId)` -> completion. */
  readonly completions: Map<string, CompletionRecord>;
  /** `keyOf(connector, deliveryId)` -> first seen at. */
  readonly deliveries: Map<string, number>;
  /** `keyOf(connector, operation)` -> circuit breaker. */
  readonly breakers: Map<string, BreakerRecord>;
}

/** The whole store. */
export interface MemoryState {
  /** tenantId -> spaceId -> records. */
  readonly tenants: Map<string, Map<string, ScopeData>>;
  /** keyId -> API key (tenant-level records). */
  readonly apiKeys: Map<string, ApiKeyRecord>;
  readonly claims: ClaimIndex;
  /** Notification records (tenant-level, docs/notifications.md). */
  readonly notify: NotifyState;
}

/** Subscriptions, their leases and cursors, and deliveries. */
export interface NotifyState {
  readonly subscriptions: Map<string, Subscription>;
  /** subscriptionId -> lease (owner, until, its turn: claims take the least recent turn first). */
  readonly leases: Map<string, { owner: string; until: number; turn: number }>;
  /** `keyOf(subscriptionId, spaceId)` -> seq. */
  readonly cursors: Map<string, number>;
  /** deliveryId -> delivery. */
  readonly deliveries: Map<string, Delivery>;
  /** `keyOf(subscriptionId, eventId)` -> deliveryId. */
  readonly deliveryEvents: Map<string, string>;
  /** The last delivery seq (`n`) and lease turn (`turn`) handed out. */
  readonly seq: Map<"n" | "turn", number>;
}

/** One transaction's view: the state, its undo log, and whether it made work runnable. */
export interface Work {
  readonly state: MemoryState;
  /** Inverse operations, run last-first on rollback. */
  readonly undo: Array<() => void>;
  /** Set when the transaction wrote a `queued` invocation (wakes `onWake` listeners on commit). */
  wake: boolean;
  /** Scopes this transaction wrote unsealed journal entries to (for `onJournalAppend` on commit). */
  journaled: Map<string, Scope> | null;
}

export function newState(): MemoryState {
  const notify: NotifyState = { subscriptions: new Map(), leases: new Map(), cursors: new Map(), deliveries: new Map(), deliveryEvents: new Map(), seq: new Map() };
  return { tenants: new Map(), apiKeys: new Map(), claims: new ClaimIndex(), notify };
}

/** The composite key of (action, idempotencyKey). */
export function keyOf(action: string, idempotencyKey: string): string {
  return `${action.length}:${action}${idempotencyKey}`;
}

/** The scope's records, or undefined when nothing was ever written in it (reads). */
export function findScope(state: MemoryState, scope: Scope): ScopeData | undefined {
  checkScope(scope);
  return state.tenants.get(scope.tenantId)?.get(scope.spaceId);
}

/** The scope's records, created on first use (writes). */
export function scopeFor(state: MemoryState, scope: Scope): ScopeData {
  checkScope(scope);
  let spaces = state.tenants.get(scope.tenantId);
  if (spaces === undefined) {
    spaces = new Map();
    state.tenants.set(scope.tenantId, spaces);
  }
  let sd = spaces.get(scope.spaceId);
  if (sd === undefined) {
    sd = newScopeData();
    spaces.set(scope.spaceId, sd);
  }
  return sd;
}

function newScopeData(): ScopeData {
  return {
    decisions: new Map(),
    idempotency: new Map(),
    attempts: [],
    attemptIndex: new Map(),
    journal: [],
    unsealed: [],
    journalIds: new Set(),
    checkpoints: [],
    archive: { through: 0, pruned: 0 },
    invocations: new Map(),
    invocationKeys: new Map(),
    steps: new Map(),
    reconciliations: new Map(),
    authorities: new Map(),
    approvals: new Map(),
    policyVersions: new Map(),
    completions: new Map(),
    deliveries: new Map(),
    breakers: new Map(),
  };
}

function checkScope(scope: Scope): void {
  if (typeof scope !== "object" || scope === null || typeof scope.tenantId !== "string" || typeof scope.spaceId !== "string" || scope.tenantId === "" || scope.spaceId === "") {
    throw new WritError("INVALID_ARGUMENT", "a scope needs non-empty string tenantId and spaceId");
  }
}

/** `map.set(key, value)`, undone on rollback. */
export function setUndoable<K, V>(w: Work, map: Map<K, V>, key: K, value: V): void {
  const prev = map.get(key);
  map.set(key, value);
  if (prev === undefined) w.undo.push(() => map.delete(key));
  else w.undo.push(() => map.set(key, prev));
}

/** `map.delete(key)`, undone on rollback. */
export function deleteUndoable<K, V>(w: Work, map: Map<K, V>, key: K): void {
  const prev = map.get(key);
  if (prev === undefined) return;
  map.delete(key);
  w.undo.push(() => map.set(key, prev));
}

/** The first `limit` items (all when `limit` is undefined); a bad limit is `INVALID_ARGUMENT`. */
export function limited<T>(items: T[], limit: number | undefined): T[] {
  if (limit === undefined) return items;
  if (!Number.isInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "limit must be a non-negative integer");
  return items.length > limit ? items.slice(0, limit) : items;
}
