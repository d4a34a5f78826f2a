/**
 * Vitest harness for the Store conformance suite (src/stores/conformance).
 *
 * Stable signature, used by every store's test file:
 *
 *   defineStoreConformance(name: string, makeStore: () => Promise<Store>, cleanup?: () => Promise<void>): void
 *
 * - `name`: the store's label; the cases are registered as `it`s inside
 *   `describe(\`store conformance: ${name}\`)`, one `it` per case, named as the case.
 * - `makeStore`: returns a new Store over the storage under test each time it is called (a fresh
 *   in-memory store, or another connection/pool to the file's database). Cases call `migrate()`
 *   themselves and close every store they open; a case that leaves one open fails.
 *   Cases use scopes of their own, so storage shared by all cases of one file is fine.
 * - `cleanup`: optional, runs once after the file's cases (`afterAll`), e.g. to drop the test
 *   database or stop a server.
 *
 * @example
 * defineStoreConformance("sqlite", async () => sqliteStore({ path: dbFile }), async () => rm(dir, { recursive: true }));
 */
import { afterAll, describe, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { runConformanceCase, storeConformanceCases, type ConformanceEnv } from "../../src/stores/conformance/index.js";

/** Registers one vitest test per conformance case for the store `name`. */
export function defineStoreConformance(name: string, makeStore: () => Promise<Store>, cleanup?: () => Promise<void>, env?: ConformanceEnv): void {
  describe(`store conformance: ${name}`, () => {
    for (const testCase of storeConformanceCases) {
      it(testCase.name, () => runConformanceCase(testCase, makeStore, env));
    }
    if (cleanup !== undefined) afterAll(cleanup);
  });
}
