/**
 * A node's view of the shared store (docs/simulation.md): every transaction and read is an
 * operation of the node, run when the kernel picks it; it may fail before writing (`throw`) or
 * commit and lose its acknowledgement (`lost-ack`), as the seed says; a dead node's calls never
 * settle. What committed transactions wrote is reported to the observer (claims, attempt
 * settlements, invocation and breaker rows), so invariants are checked against what really reached the store.
 *
 * The wrapper has no native transitions: the generic composition (src/core/transitions.ts) runs
 * over its `transact`, so each transition is one interceptable operation on every store.
 */
import { WritError } from "../../src/core/errors.js";
import type { Store, StoreTx } from "../../src/core/store.js";
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
}

export interface StoreHooks {
  /** Decides the fault of one operation (consumes randomness only when faults are on). */
  fault(node: SimNode, kind: "tx" | "read"): StoreFault;
  /** Called once per committed transaction of `node` (delivered to it or not). */
  committed(node: SimNode, c: Committed): void;
  /** Whether a lost acknowledgement decided before the transaction applies to what it wrote. */
  loseAck(node: SimNode, c: Committed): boolean;
}

export function simStore(node: SimNode, inner: Store, hooks: StoreHooks): Store {
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

  async function run<T>(kind: "tx" | "read", fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    const journaled = new Map<string, Scope>();
    const value = await node.op(kind, async () => {
      const fault = hooks.fault(node, kind);
      if (fault === "throw") throw new WritError("STORE_ERROR", "sim: injected store failure (nothing written)");
      const c: Committed = { claims: [], attempts: [], invocations: [], breakers: [], intents: [] };
      const body = (tx: StoreTx): Promise<T> => fn(watch(tx, c, journaled));
      const v = kind === "read" && inner.read ? await inner.read(body) : await inner.transact(body);
      hooks.committed(node, c);
      if (fault === "lost-ack" && hooks.loseAck(node, c)) throw new WritError("STORE_ERROR", "sim: injected lost acknowledgement (the commit happened)");
      return v;
    });
    // Like the memory store: the journal hint runs (a sequencer seal) before transact resolves.
    if (journaled.size > 0 && listeners.size > 0) {
      await Promise.allSettled([...journaled.values()].flatMap((sc) => [...listeners].map(async (cb) => cb(sc))));
    }
    return value;
  }

  return {
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
}
