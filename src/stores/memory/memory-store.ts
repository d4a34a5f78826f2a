/**
 * The in-memory Store: real transactions (serialised by a FIFO mutex, rolled back from an undo
 * log), deep-copied records, every rule of the Store port. For tests, examples and benchmarks;
 * nothing survives the process.
 */
import { guardStore } from "../../core/store-guard.js";
import { WritError } from "../../core/errors.js";
import type { Store, StoreTx } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import { MemoryTx } from "./memory-tx.js";
import { Mutex } from "./memory-mutex.js";
import { resolveOptions, type MemoryStoreOptions } from "./memory-options.js";
import { newState, type MemoryState } from "./memory-state.js";

/** The memory store: a `Store` whose `onWake` is always available. */
export interface MemoryStore extends Store {
  readonly kind: "memory";
  /** `cb` runs after each commit that wrote a `queued` invocation. Returns an unsubscribe function. */
  onWake(cb: () => void): () => void;
  /** `cb` runs (and is awaited) after each commit that wrote unsealed journal entries, per scope. */
  onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void;
}

const ignore = (): void => undefined;
const RESOLVED: Promise<void> = Promise.resolve();

/** `cb(scope)` as a promise that never rejects (a synchronous throw included). */
function settledCall(cb: (scope: Scope) => void | Promise<void>, scope: Scope): Promise<unknown> {
  try {
    const r = cb(scope);
    return r === undefined ? RESOLVED : Promise.resolve(r).then(undefined, ignore);
  } catch {
    return RESOLVED;
  }
}

/**
 * Creates an empty in-memory store. Transactions run one at a time; a transaction's `fn` may
 * await, but must not call `transact` on the same store (it would wait for itself forever).
 * @example
 * const store = memoryStore();
 * await store.migrate();
 * const seq = await store.transact((tx) => tx.insertAttempt(scope, attempt));
 * await store.close();
 */
export function memoryStore(options?: MemoryStoreOptions): MemoryStore {
  const { faults } = resolveOptions(options);
  let state: MemoryState = newState();
  const mutex = new Mutex();
  const listeners = new Set<() => void>();
  const journalListeners = new Set<(scope: Scope) => void | Promise<void>>();
  let closing = false;

  function closed(): WritError {
    return new WritError("STORE_CLOSED", "the memory store is closed");
  }

  function wake(): void {
    for (const cb of listeners) {
      try {
        cb();
      } catch {
        // A wake-up is a hint; a failing listener must not fail the commit that is already done.
      }
    }
  }

  async function transact<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (closing) throw closed();
    if (typeof fn !== "function") throw new WritError("INVALID_ARGUMENT", "transact needs a function");
    if (!mutex.tryAcquire()) await mutex.acquire();
    const tx = new MemoryTx(state, faults);
    let result: T;
    try {
      result = await fn(tx);
      tx.commit();
    } catch (e) {
      try {
        tx.rollback();
      } finally {
        mutex.release();
      }
      throw e;
    }
    mutex.release();
    if (tx.wake && listeners.size > 0) wake();
    // Sealing is synchronous after commit here: the sequencer's run for each scope this
    // transaction journaled to ends before `transact` resolves (it cannot fail the commit).
    if (journalListeners.size > 0 && tx.journaledAny) await notifyJournal(tx.journaled);
    return result;
  }

  /**
   * Calls every journal listener for every scope, in that order, each call made synchronously
   * here; resolves once all have settled (a listener's failure, thrown or rejected, is ignored).
   */
  function notifyJournal(scopes: Scope[]): Promise<unknown> {
    const runs: Array<Promise<unknown>> = [];
    const cbs = [...journalListeners];
    for (const sc of scopes) for (const cb of cbs) runs.push(settledCall(cb, sc));
    return runs.length === 1 ? runs[0]! : Promise.all(runs);
  }

  // Every transaction runs behind the shared input rules and the lock order (docs/stores.md).
  return guardStore({
    kind: "memory",
    async migrate(): Promise<void> {
      if (closing) throw closed();
    },
    transact,
    async close(): Promise<void> {
      if (closing) return;
      closing = true;
      // Transactions already waiting run to completion first; later ones are refused.
      await mutex.acquire();
      state = newState();
      listeners.clear();
      journalListeners.clear();
      mutex.release();
    },
    onWake(cb: () => void): () => void {
      if (typeof cb !== "function") throw new WritError("INVALID_ARGUMENT", "onWake needs a function");
      const own = (): void => cb();
      listeners.add(own);
      return () => {
        listeners.delete(own);
      };
    },
    onJournalAppend(cb: (scope: Scope) => void | Promise<void>): () => void {
      if (typeof cb !== "function") throw new WritError("INVALID_ARGUMENT", "onJournalAppend needs a function");
      const own = (scope: Scope): void | Promise<void> => cb(scope);
      journalListeners.add(own);
      return () => {
        journalListeners.delete(own);
      };
    },
  });
}
