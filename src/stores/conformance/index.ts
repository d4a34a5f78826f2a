/**
 * The one Store conformance suite (docs/stores.md, Conformance suite), exported so a custom store can run it. Independent of
 * any test framework: each case throws (node:assert) on a violation.
 *
 * @example
 * // src/stores/conformance/index.ts (re-export it from the package root to publish it)
 * const report = await runStoreConformance(async () => myStore({ url }));
 * if (report.failed.length > 0) console.error(report.failed);
 *
 * Storage: each `makeStore()` call may return a fresh empty store or another connection to shared
 * storage. Cases use scopes and lease owners of their own, so they do not depend on an empty
 * database; claim cases tolerate (and may claim) invocations other cases left runnable.
 */
import { breakerCases } from "./cases-breakers.js";
import { claimCases } from "./cases-claims.js";
import { documentCases } from "./cases-documents.js";
import { extraCases } from "./cases-extras.js";
import { invocationCases } from "./cases-invocations.js";
import { isolationCases } from "./cases-isolation.js";
import { inputCases } from "./cases-input.js";
import { journalCases } from "./cases-journal.js";
import { notificationCases } from "./cases-notifications.js";
import { raceCases } from "./cases-races.js";
import { recordCases } from "./cases-records.js";
import { retentionCases } from "./cases-retention.js";
import { transactionCases } from "./cases-transactions.js";
import { batchCases } from "./cases-batch.js";
import { transitionCases } from "./cases-transitions.js";
import { unsealedCases } from "./cases-unsealed.js";
import { runConformanceCase, type ConformanceEnv, type MakeStore, type StoreConformanceCase } from "./case.js";

export { runConformanceCase, type ConformanceEnv, type MakeStore, type StoreConformanceCase } from "./case.js";

/** Every conformance case, in a stable order. Names are unique. */
export const storeConformanceCases: StoreConformanceCase[] = [
  ...transactionCases,
  ...recordCases,
  ...invocationCases,
  ...claimCases,
  ...journalCases,
  ...unsealedCases,
  ...isolationCases,
  ...extraCases,
  ...inputCases,
  ...raceCases,
  ...transitionCases,
  ...batchCases,
  ...documentCases,
  ...breakerCases,
  ...notificationCases,
  ...retentionCases,
];

/** Options of {@link runStoreConformance}. */
export interface RunStoreConformanceOptions {
  /**
   * Runs only the cases whose name passes.
   * @defaultValue every case
   */
  filter?: (name: string) => boolean;
  /** What the storage allows (see {@link ConformanceEnv}); `concurrent` adds real concurrent races. */
  env?: ConformanceEnv;
}

/** The outcome of a conformance run: the names that passed, and each failure with its error. */
export interface StoreConformanceReport {
  passed: string[];
  failed: Array<{ name: string; error: unknown }>;
}

/**
 * Runs the conformance cases one after another against stores made by `makeStore`, and reports
 * every case's outcome (it does not stop at the first failure). A case that leaves a store open
 * fails.
 */
export async function runStoreConformance(makeStore: MakeStore, opts: RunStoreConformanceOptions = {}): Promise<StoreConformanceReport> {
  const report: StoreConformanceReport = { passed: [], failed: [] };
  for (const testCase of storeConformanceCases) {
    if (opts.filter !== undefined && !opts.filter(testCase.name)) continue;
    try {
      await runConformanceCase(testCase, makeStore, opts.env);
      report.passed.push(testCase.name);
    } catch (error) {
      report.failed.push({ name: testCase.name, error });
    }
  }
  return report;
}
