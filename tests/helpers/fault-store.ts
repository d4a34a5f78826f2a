/**
 * A Store wrapper for fault injection: it counts the write operations made through it, and can
 * make the Nth one fail (once), or run a hook inside each transaction just before the underlying
 * store commits it (the crash tests kill their process there).
 *
 * Write operations are the StoreTx methods named `insert*`, `update*`, `put*`, `consume*`,
 * `claim*` and `heartbeat` (see {@link isWriteMethod}). They are counted across all transactions
 * of the wrapped store, in call order, starting at 1.
 *
 * @example
 * const store = faultStore(memoryStore(), { failAtWrite: 7 });
 * // ... run the host on `store`; the 7th write throws WritError("STORE_ERROR") and its
 * // transaction rolls back; store.fault() tells which write it was.
 */
import { WritError } from "../../src/core/errors.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import type { AttemptRecord } from "../../src/core/types.js";

/** One write call made inside a transaction. */
export interface WriteCall {
  /** 1-based position among all writes made through the wrapper. */
  n: number;
  method: string;
  args: readonly unknown[];
}

/**
 * How the chosen write fails.
 * - `throw`: the write is not made and throws `STORE_ERROR`; its transaction rolls back.
 * - `lost-ack`: the write is made and its transaction commits, then `transact` rejects with
 *   `STORE_ERROR` (the acknowledgement of a durable commit is lost, as when a connection drops
 *   right after COMMIT).
 */
export const FAULT_MODES = ["throw", "lost-ack"] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

export interface FaultStoreOptions {
  /** Fail the Nth write (1-based), once. @defaultValue no fault */
  failAtWrite?: number;
  /** Fail the first write for which this returns true, once (instead of, or with, `failAtWrite`). */
  failWhen?: (call: WriteCall) => boolean;
  /** @defaultValue "throw" */
  mode?: FaultMode;
  /**
   * Runs inside every transaction after its function returned and before the underlying store
   * commits, with the writes that transaction made. May throw (the transaction then rolls back)
   * or end the process (the transaction never commits).
   */
  beforeCommit?: (writes: readonly WriteCall[]) => void;
  /**
   * Fails a read: every call of a StoreTx method that does not write for which this returns true
   * throws `STORE_ERROR` instead of reading (each time, not once). @defaultValue no read fails
   */
  failRead?: (method: string, args: readonly unknown[]) => boolean;
  /**
   * Passes the wrapped store's native transitions through (PostgreSQL's server-side functions and
   * batches, docs/stores.md "Batches"), so that a process runs the same statements as in
   * production. Their reads and writes do not go through `transact`: no fault, hook or count
   * (`writes`, `openTransactions`) applies to them. Refused with the options above that inject
   * faults or hook commits. @defaultValue false
   */
  nativeTransitions?: boolean;
}

export interface FaultStore extends Store {
  /** Writes made (attempted) through the wrapper so far. */
  writes(): number;
  /** The write that was made to fail, once it has. */
  fault(): WriteCall | null;
  /** Transactions begun and not yet finished (committed, rolled back or failed). */
  openTransactions(): number;
  /** The wrapped store. */
  readonly inner: Store;
}

const WRITE_RE = /^(insert|update|put|consume|claim)[A-Z]|^heartbeat$/;

/** True for the StoreTx methods that write. */
export function isWriteMethod(name: string): boolean {
  return WRITE_RE.test(name);
}

/** True when a write call settles an attempt (updateAttempt with a state other than EXECUTING). */
export function isFinalAttemptUpdate(w: WriteCall): boolean {
  if (w.method !== "updateAttempt") return false;
  const rec = w.args[1] as AttemptRecord | undefined;
  return rec !== undefined && rec.state !== "EXECUTING";
}

export function faultStore(inner: Store, options: FaultStoreOptions = {}): FaultStore {
  const failAt = options.failAtWrite;
  if (failAt !== undefined && !(Number.isInteger(failAt) && failAt >= 1)) {
    throw new WritError("INVALID_OPTION", "faultStore: failAtWrite must be a positive integer");
  }
  const mode = options.mode ?? "throw";
  if (!(FAULT_MODES as readonly string[]).includes(mode)) throw new WritError("INVALID_OPTION", `faultStore: mode must be one of ${FAULT_MODES.join(", ")}`);
  let count = 0;
  let fired: WriteCall | null = null;
  let open = 0;

  function wrapTx(tx: StoreTx, writes: WriteCall[], state: { lostAck: boolean }): StoreTx {
    return new Proxy(tx, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        if (typeof prop !== "string" || !isWriteMethod(prop)) {
          const read = (value as (...a: unknown[]) => unknown).bind(target);
          const failRead = options.failRead;
          if (!failRead || typeof prop !== "string") return read;
          return (...args: unknown[]): unknown => {
            if (failRead(prop, args)) return Promise.reject(new WritError("STORE_ERROR", `injected fault: read ${prop} failed`));
            return read(...args);
          };
        }
        const fn = value as (...a: unknown[]) => Promise<unknown>;
        return async (...args: unknown[]): Promise<unknown> => {
          const call: WriteCall = { n: ++count, method: prop, args };
          writes.push(call);
          if (fired === null && (call.n === failAt || options.failWhen?.(call) === true)) {
            fired = call;
            if (mode === "throw") throw new WritError("STORE_ERROR", `injected fault: write #${call.n} (${prop}) failed`);
            state.lostAck = true;
          }
          return fn.apply(target, args);
        };
      },
    });
  }

  if (options.nativeTransitions === true && (options.failAtWrite !== undefined || options.failWhen !== undefined || options.beforeCommit !== undefined || options.failRead !== undefined)) {
    throw new Error("faultStore: nativeTransitions bypasses transact, so faults and beforeCommit would miss the transitions' reads and writes");
  }
  return {
    kind: inner.kind,
    inner,
    ...(options.nativeTransitions === true && inner.transitions !== undefined ? { transitions: inner.transitions } : {}),
    migrate: () => inner.migrate(),
    close: () => inner.close(),
    ...(inner.onWake ? { onWake: (cb: () => void) => inner.onWake!(cb) } : {}),
    async transact<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
      open += 1;
      const state = { lostAck: false };
      try {
        const result = await inner.transact(async (tx) => {
          const writes: WriteCall[] = [];
          const value = await fn(wrapTx(tx, writes, state));
          options.beforeCommit?.(writes);
          return value;
        });
        if (state.lostAck) throw new WritError("STORE_ERROR", `injected fault: the commit of write #${fired?.n ?? "?"} was not acknowledged`);
        return result;
      } finally {
        open -= 1;
      }
    },
    writes: () => count,
    fault: () => fired,
    openTransactions: () => open,
  };
}
