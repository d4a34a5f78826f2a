/**
 * A reporter that repeats, as the very last lines of a run, what went wrong: each failed test with
 * its first error, and each error raised outside a test (an unhandled rejection or an uncaught
 * exception) with its name, message and first stack frames. CI keeps only the tail of a run's
 * output; the default reporter prints these far above its summary, where the tail cuts them off.
 * Prints nothing when the run is clean.
 */
import type { Reporter, TestModule } from "vitest/node";

interface ErrorLike {
  name?: string;
  message?: string;
  stack?: string;
  type?: string;
}

/** One error in a few lines: `name: message` and at most `frames` stack frames. */
function brief(e: ErrorLike, frames = 6): string {
  const head = `${e.name ?? e.type ?? "Error"}: ${e.message ?? "(no message)"}`;
  const stack = (e.stack ?? "")
    .split("\n")
    .filter((l) => /^\s+at /.test(l))
    .slice(0, frames)
    .map((l) => `      ${l.trim()}`);
  return [head, ...stack].join("\n");
}

export default class TailReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<ErrorLike>): void {
    const lines: string[] = [];
    for (const m of testModules) {
      for (const e of m.errors()) lines.push(`  ${m.moduleId}: ${brief(e)}`);
      // A describe's own hooks (beforeAll, afterAll) fail the suite, not a test.
      for (const suite of m.children.allSuites()) for (const e of suite.errors()) lines.push(`  ${m.relativeModuleId} > ${suite.fullName} (a hook of the suite): ${brief(e)}`);
      for (const t of m.children.allTests("failed")) {
        const first = t.result().errors?.[0];
        lines.push(`  ${m.relativeModuleId} > ${t.fullName}${first ? `\n    ${brief(first, 3)}` : ""}`);
      }
    }
    for (const e of unhandledErrors) {
      const where = typeof (e as { VITEST_TEST_PATH?: unknown }).VITEST_TEST_PATH === "string" ? ` (during ${(e as { VITEST_TEST_PATH: string }).VITEST_TEST_PATH})` : "";
      lines.push(`  unhandled${where}: ${brief(e)}`);
    }
    if (lines.length > 0) process.stdout.write(`\n== what went wrong, again (tests/helpers/tail-reporter.ts)\n${lines.join("\n")}\n`);
  }
}
