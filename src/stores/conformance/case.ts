/** The shape of a conformance case, and the runner that checks a case closed what it opened. */
import type { Store, StoreTx } from "../../core/store.js";

/** Makes a new store over the storage under test (a new connection, pool or in-memory store). */
export type MakeStore = () => Promise<Store>;

/** What the storage under test allows beyond the contract's minimum. */
export interface ConformanceEnv {
  /**
   * Two stores from `makeStore` share storage, and their transactions run concurrently (one may
   * wait inside a transaction for the other to reach a point): PostgreSQL. The race cases then
   * also race real concurrent transactions. @defaultValue false
   */
  concurrent?: boolean;
}

/**
 * One conformance case. `run` opens the stores it needs through `makeStore`, calls `migrate()`,
 * asserts with `node:assert/strict` (or lets a store error propagate) and closes every store it
 * opened. It resolves when the store conforms and rejects with the first violation otherwise.
 */
export interface StoreConformanceCase {
  /** Stable, unique, human-readable: "<area>: <invariant>". */
  name: string;
  run(makeStore: MakeStore, env?: ConformanceEnv): Promise<void>;
}

/**
 * Runs one case and fails it if it left a store open (stores must not leak), closing the stray
 * store so the next case starts clean.
 */
export async function runConformanceCase(testCase: StoreConformanceCase, makeStore: MakeStore, env: ConformanceEnv = {}): Promise<void> {
  const open = new Set<Store>();
  const tracking: MakeStore = async () => {
    const store = await makeStore();
    const wrapper = tracked(store, () => open.delete(wrapper));
    open.add(wrapper);
    return wrapper;
  };
  let failure: { error: unknown } | undefined;
  try {
    await testCase.run(tracking, env);
  } catch (error) {
    failure = { error };
  }
  const leaked = [...open];
  for (const store of leaked) {
    try {
      await store.close();
    } catch {
      // The case already failed or is about to; a second error would only hide the first.
    }
  }
  if (failure !== undefined) throw failure.error;
  if (leaked.length > 0) throw new Error(`conformance case "${testCase.name}" left ${leaked.length} store(s) open`);
}

function tracked(store: Store, onClose: () => void): Store {
  // The store's own transitions and read path go through: without them, `transitionsOf` would
  // compose the generic transitions from `transact`, and a store's native ones (PostgreSQL's
  // server-side functions and batches) would never meet the cases written for them.
  const wrapper: Store = {
    kind: store.kind,
    migrate: () => store.migrate(),
    transact: <T>(fn: (tx: StoreTx) => Promise<T>) => store.transact(fn),
    close: async () => {
      onClose();
      await store.close();
    },
    ...(store.transitions !== undefined ? { transitions: store.transitions } : {}),
  };
  if (store.read !== undefined) {
    const read = store.read.bind(store);
    wrapper.read = (fn) => read(fn);
  }
  if (store.onWake !== undefined) {
    const onWake = store.onWake.bind(store);
    wrapper.onWake = (cb) => onWake(cb);
  }
  return wrapper;
}
