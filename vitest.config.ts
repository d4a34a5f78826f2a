import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["tests/long/**", "tests/**/*.long.test.ts", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Two files at a time. Vitest's default on this 2-core machine is one (its count of CPUs minus
    // one), and one file at a time kept the CPUs busy less than half the run: most files wait on
    // real processes, databases, browsers and timers. Two took the suite from about 950 s to 676-765 s.
    maxWorkers: 2,
    // The default reporter, then the errors of the run again as its last lines (CI keeps the tail).
    reporters: ["default", "./tests/helpers/tail-reporter.ts"],
    // One line when the real-browser suite cannot run here (tests/helpers/browser.ts).
    globalSetup: ["tests/helpers/browser-note.ts"],
  },
});
