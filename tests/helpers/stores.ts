/**
 * Store factories for suites that must run against every store (memory, sqlite, postgres).
 * Each factory yields a fresh, migrated, empty store and a cleanup that closes and deletes it.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Store } from "../../src/core/store.js";
import { transitionsOf, type StoreTransitions } from "../../src/core/transitions.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase } from "./pg.js";

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

export const sqliteFactory: StoreFactory = {
  name: "sqlite",
  async make() {
    const dir = mkdtempSync(join(tmpdir(), "writ-sqlite-"));
    const store = sqliteStore({ path: join(dir, "writ.db") });
    await store.migrate();
    return {
      store,
      async cleanup() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

/** A fresh PostgreSQL database per store (see tests/helpers/pg.ts), dropped at cleanup. */
export const postgresFactory: StoreFactory = {
  name: "postgres",
  async make() {
    const db = await freshDatabase();
    const store = postgresStore({ url: db.url }, { max: 24 });
    await store.migrate();
    return {
      store,
      async cleanup() {
        await store.close();
        await db.drop();
      },
    };
  },
};

/** Every store the project ships. */
export function allStoreFactories(): StoreFactory[] {
  return [memoryFactory, sqliteFactory, postgresFactory];
}

/**
 * `store` with its hot transitions replaced by `make(own)` (`own`: the store's transitions, native
 * or composed), everything else the store's own: a test gates or fails one transition this way.
 */
export function withTransitions(store: Store, make: (own: StoreTransitions) => StoreTransitions): Store {
  const transitions = make(transitionsOf(store));
  return new Proxy(store, {
    get(target, key) {
      if (key === "transitions") return transitions;
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
