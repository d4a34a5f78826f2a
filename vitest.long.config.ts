import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/long/**/*.test.ts", "tests/**/*.long.test.ts"],
    testTimeout: 1_800_000,
    hookTimeout: 300_000,
    pool: "forks",
    reporters: ["default", "./tests/helpers/tail-reporter.ts"],
  },
});
