/**
 * A node's view of the shared store (docs/simulation.md): every transaction and read is an
 * operation of the node, run when the kernel picks it; it may fail before writing (`throw`) or
 * commit and lose its acknowledgement (`lost-ack`), as the seed says; a dead node's calls never
 * settle. What committed transactions wrote is reported to the observer (claims, attempt
 * settlements, invocation and breaker rows), so invariants are checked against what really reached the store.
 *
 * Without `batchMax` the wrapper has no native transitions: the generic composition
 * (src/core/transitions.ts) runs over its `transact`, so each transition is one interceptable
 * operation on every store. With it, write transitions are batched as on PostgreSQL (below).
 */
import { coalescer, type BatchOutcome } from "../../src/core/batch.js";
import { WritError, isWritError } from "../../src/core/errors.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import { applyEach, genericTransitions, type AdmitResult, type BatchMember, type BeginResult, type StoreTransitions } from "../../src/core/transitions.js";
import type { AttemptRecord, BreakerRecord, Fence, Invocation, Scope, StepCheckpoint } from "../../src/core/types.js";
import type { SimNode } from "./kernel.js";

export type StoreFault = "none" | "throw" | "lost-ack";

/** What one committed transaction wrote that the invariants look at. */
export interface Committed {
  claims: Invocation[];
  attempts: AttemptRecord[];
  /** Invocation rows written (transitions, re-queues). */
  invocations: Invocation[];
  /** Breaker rows written (docs/host.md, Circuit breakers). */
  breakers: BreakerRecord[];
  /** Step intents written (`started` rows), each with the lease token the transaction asserted, if any. */
  intents: Array<{ step: StepCheckpoint; token: string | undefined }>;
  /** Invocations retention deleted, with what the deleting transaction saw just before (docs/retention.md). */
  pruned: PrunedSeen[];
  /** Invocation ids of bare executions whose idempotency record retention deleted with their rows. */
  prunedBare: string[];
}

/** An invocation as its pruning transaction saw it just before deleting it. */
export interface PrunedSeen {
  invocation: Invocation;
  /** The scope's archive watermark in that transaction. */
  watermark: number;
  openReconciliations: number;
  approvalStatus: string | null;
  reconciliationIds: string[];
}

export interface StoreHooks {
  /** Decides the fault of one operation (consumes randomness only when faults are on). */
  fault(node: SimNode, kind: "tx" | "read"): StoreFault;
  /** Called once per committed transaction of `node` (delivered to it or not). */
  committed(node: SimNode, c: Committed): void;
  /** Whether a lost acknowledgement decided before the transaction applies to what it wrote. */
  loseAck(node: SimNode, c: Committed): boolean;
  /**
   * Called once per batch operation the node ran (batching on): its members, how many failed
   * alone beside one that applied, and how many of those were settlements refused for a lost lease.
   */
  batched?(node: SimNode, members: number, failedAlone: number, settlesLeaseLost: number): void;
  /** A write transition of the node joined its batch queue (+1) or got its answer (-1): a dead node's never do. */
  batchOutstanding?(node: SimNode, delta: 1 | -1): void;
}

export interface SimStoreOptions {
  /** Batch the node's write transitions as PostgreSQL does, at most this many per batch; undefined: one operation each. */
  batchMax?: number;
}

export function simStore(node: SimNode, inner: Store, hooks: StoreHooks, options: SimStoreOptions = {}): Store {
  const listeners = new Set<(scope: Scope) => void | Promise<void>>();

  function watch(tx: StoreTx, c: Committed, journaled: Map<string, Scope>): StoreTx {
    let asserted: string | undefined;
    return new Proxy(tx, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop, target);
        if (typeof v !== "function") return v;
        const fn = (v as (...a: unknown[]) => unknown).bind(target);
        if (prop === "claimInvocations") {
          return async (...a: unknown[]) => {
            const got = (await fn(...a)) as Invocation[];
            c.claims.push(...got.map((i) => ({ ...i })));
            return got;
          };
        }
        if (prop === "updateInvocation") {
          return async (scope: Scope, inv: Invocation, ...rest: unknown[]) => {
            await fn(scope, inv, ...rest);
            c.invocations.push({ ...inv });
          };
        }
        if (prop === "assertLease") {
          return async (scope: Scope, fence: Fence) => {
            await fn(scope, fence);
            asserted = fence.token;
          };
        }
        if (prop === "putStep") {
          return async (scope: Scope, step: StepCheckpoint, fence?: Fence) => {
            await fn(scope, step, fence);
            if (step.status === "started") c.intents.push({ step: { ...step }, token: fence?.token ?? asserted });
          };
        }
        if (prop === "putBreaker") {
          return async (scope: Scope, rec: BreakerRecord) => {
            await fn(scope, rec);
            c.breakers.push({ ...rec });
          };
        }
        if (prop === "updateAttempt") {
          return async (scope: Scope, rec: AttemptRecord) => {
            await fn(scope, rec);
            c.attempts.push({ ...rec });
          };
        }
        if (prop === "deleteEndedInvocations") {
          return async (scope: Scope, ids: string[]) => {
            const watermark = await target.journalArchivedThrough(scope);
            const seen = new Map<string, Omit<PrunedSeen, "watermark"> | null>();
            for (const invocationId of ids) {
              const inv = await target.getInvocation(scope, invocationId);
              const recs = await target.listReconciliations(scope, { invocationId });
              const approval = inv?.approvalId !== undefined ? await target.getApproval(scope, inv.approvalId) : null;
              seen.set(invocationId, inv === null ? null : { invocation: inv, openReconciliations: recs.filter((r) => r.status === "open").length, approvalStatus: approval?.status ?? null, reconciliationIds: recs.map((r) => r.reconciliationId) });
            }
            const out = (await fn(scope, ids)) as { deleted: string[] };
            for (const id of out.deleted) {
              const s = seen.get(id);
              if (s != null) c.pruned.push({ ...s, watermark });
            }
            return out;
          };
        }
        if (prop === "deleteBareExecutions") {
          return async (scope: Scope, keys: Array<{ action: string; idempotencyKey: string }>, before: number) => {
            const recs = [];
            for (const k of keys) recs.push(await target.getIdempotency(scope, k.action, k.idempotencyKey));
            const out = await fn(scope, keys, before);
            for (const [i, k] of keys.entries()) {
              const rec = recs[i];
              if (rec != null && (await target.getIdempotency(scope, k.action, k.idempotencyKey)) === null) c.prunedBare.push(rec.invocationId);
            }
            return out;
          };
        }
        if (prop === "insertUnsealed") {
          return async (scope: Scope, ...rest: unknown[]) => {
            const ids = await fn(scope, ...rest);
            journaled.set(`${scope.tenantId}\u0000${scope.spaceId}`, { tenantId: scope.tenantId, spaceId: scope.spaceId });
            return ids;
          };
        }
        return fn;
      },
    });
  }

  /**
   * One operation of the node: the seed's fault for it, `work` over the shared store, what it
   * committed reported, the journal hints after it (like the memory store: a sequencer seal runs
   * before the operation resolves).
   */
  async function operate<T>(kind: "tx" | "read", work: (c: Committed, journaled: Map<string, Scope>) => Promise<T>): Promise<T> {
    const journaled = new Map<string, Scope>();
    const value = await node.op(kind, async () => {
      const fault = hooks.fault(node, kind);
      if (fault === "throw") throw new WritError("STORE_ERROR", "sim: injected store failure (nothing written)");
      const c: Committed = { claims: [], attempts: [], invocations: [], breakers: [], intents: [], pruned: [], prunedBare: [] };
      const v = await work(c, journaled);
      hooks.committed(node, c);
      if (fault === "lost-ack" && hooks.loseAck(node, c)) throw new WritError("STORE_ERROR", "sim: injected lost acknowledgement (the commit happened)");
      return v;
    });
    if (journaled.size > 0 && listeners.size > 0) {
      await Promise.allSettled([...journaled.values()].flatMap((sc) => [...listeners].map(async (cb) => cb(sc))));
    }
    return value;
  }

  /** The shared store as one operation sees it: its transactions watched, no operation of their own. */
  function within(c: Committed, journaled: Map<string, Scope>): Store {
    return {
      kind: inner.kind,
      migrate: () => inner.migrate(),
      close: async () => undefined,
      transact: (fn) => inner.transact((tx) => fn(watch(tx, c, journaled))),
      read: (fn) => (inner.read ? inner.read((tx) => fn(watch(tx, c, journaled))) : inner.transact((tx) => fn(watch(tx, c, journaled)))),
    };
  }

  function run<T>(kind: "tx" | "read", fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    return operate(kind, (c, journaled) => {
      const store = within(c, journaled);
      return kind === "read" ? store.read!(fn) : store.transact(fn);
    });
  }

  const store: Store = {
    kind: inner.kind,
    migrate: () => inner.migrate(),
    close: async () => undefined,
    transact: (fn) => run("tx", fn),
    read: (fn) => run("read", fn),
    onJournalAppend(cb) {
      listeners.add(cb);
      return () => void listeners.delete(cb);
    },
  };
  if (options.batchMax === undefined) return store;
  const apply = (members: BatchMember[]): Promise<BatchOutcome[]> =>
    operate("tx", async (c, journaled) => {
      const outs = await applyEach(genericTransitions(within(c, journaled)), members);
      const failed = outs.filter((o) => !o.ok).length;
      const alone = failed < outs.length ? failed : 0;
      const settlesLeaseLost = alone === 0 ? 0 : members.filter((m, i) => m.kind === "settle" && !outs[i]!.ok && isWritError(outs[i]!.error, "LEASE_LOST")).length;
      hooks.batched?.(node, members.length, alone, settlesLeaseLost);
      return outs;
    });
  return { ...store, transitions: batchedTransitions(store, options.batchMax, apply, (delta) => hooks.batchOutstanding?.(node, delta)) };
}

/**
 * PostgreSQL's batching, simulated (docs/simulation.md, "Batches"): the write transitions of one
 * node queue behind a batch in flight (the store's own coalescer) and go together as one operation
 * with one fault: an injected failure writes none of them, a lost acknowledgement fails every
 * member although all committed, and a node that dies with a batch queued or in flight never hears
 * back. Inside the operation each member is its own transaction and fails alone, as a member's
 * subtransaction does on PostgreSQL.
 */
function batchedTransitions(store: Store, batchMax: number, apply: (members: BatchMember[]) => Promise<BatchOutcome[]>, outstanding: (delta: 1 | -1) => void): StoreTransitions {
  const single = genericTransitions(store);
  const coalesced = coalescer<BatchMember, unknown>(apply, { maxBatch: batchMax });
  const queue = (m: BatchMember): Promise<unknown> => {
    outstanding(1);
    const p = coalesced(m);
    void p.then(
      () => outstanding(-1),
      () => outstanding(-1),
    );
    return p;
  };
  return {
    ...single,
    admit: (scope, input) => queue({ kind: "admit", scope, input }) as Promise<AdmitResult>,
    begin: (scope, input) => queue({ kind: "begin", scope, input }) as Promise<BeginResult>,
    record: (scope, input) => queue({ kind: "record", scope, input }) as Promise<number>,
    advance: (scope, input) => queue({ kind: "advance", scope, input }) as Promise<void>,
    settle: (scope, input) => queue({ kind: "settle", scope, input }) as Promise<{ invocationRev?: number }>,
    batch: apply,
  };
}
