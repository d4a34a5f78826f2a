import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["tests/long/**", "tests/**/*.long.test.ts", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // The default reporter, then the errors of the run again as its last lines (CI keeps the tail).
    reporters: ["default", "./tests/helpers/tail-reporter.ts"],
    // One line when the real-browser suite cannot run here (tests/helpers/browser.ts).
    globalSetup: ["tests/helpers/browser-note.ts"],
  },
});
