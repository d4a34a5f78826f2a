// Lint with type information: an un-awaited write in an execution host is a lost write.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "**/.writ/**", "bench/results/**", "tests/fixtures/**", "coverage/**", "scripts/*.cjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ["*.js"] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/require-await": "off",
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-unsafe-return": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/only-throw-error": "off",
    },
  },
  { files: ["*.js"], ...tseslint.configs.disableTypeChecked },
  // bench/ has its own dependencies (bench/package.json, installed by `npm run bench`): on a fresh
  // checkout their types are absent, so rules that judge a type cannot judge them.
  { files: ["bench/**"], rules: { "@typescript-eslint/no-redundant-type-constituents": "off" } },
  // Nothing outside bench/ may reach bench/'s own dependencies: the root typecheck runs on a fresh
  // checkout where bench/node_modules does not exist. Only the dependency-free bench modules
  // (the boundary rig and the result writer) are importable from scripts and tests.
  {
    files: ["src/**", "tests/**", "scripts/**", "examples/**"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: ["graphile-worker", "postgres", "autocannon"].map((name) => ({ name, message: "a bench/ dependency: absent on a fresh checkout" })),
        patterns: [{ group: ["**/bench/*", "!**/bench/boundary.js", "!**/bench/lib.js"], message: "bench/ modules other than boundary.js and lib.js pull in bench/'s dependencies; put the file in bench/" }],
      }],
    },
  },
);
