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
);
