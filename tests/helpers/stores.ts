/**
 * Store factories for suites that must run against every store (memory, sqlite, postgres).
 * Each factory yields a fresh, migrated, empty store and a cleanup that closes and deletes it.
 */
import type { Store } from "../../src/core/store.js";
import { memoryStore } from "../../src/stores/memory/index.js";

export interface StoreFactory {
  name: string;
  make: () => Promise<{ store: Store; cleanup: () => Promise<void> }>;
}

export const memoryFactory: StoreFactory = {
  name: "memory",
  async make() {
    const store = memoryStore();
    await store.migrate();
    return { store, cleanup: () => store.close() };
  },
};

/** Every store the project ships. */
export function allStoreFactories(): StoreFactory[] {
  return [memoryFactory];
}
