import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    exclude: ["tests/long/**", "tests/**/*.long.test.ts", "node_modules/**"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // One line when the real-browser suite cannot run here (tests/helpers/browser.ts).
    globalSetup: ["tests/helpers/browser-note.ts"],
  },
});
