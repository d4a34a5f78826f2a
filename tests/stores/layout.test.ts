/**
 * The three store folders keep one file layout (docs/stores.md, "Layout"): every file is
 * `<store>-<name>.ts` (index.ts aside), and each folder holds the same domain files, so an
 * operation sits in the same-named file in every store.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const storesDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src/stores");
const STORES = ["memory", "sqlite", "postgres"] as const;
const DOMAINS = ["claims", "execution", "invocations", "journal", "notifications", "records", "transitions"];

/** The names of a store folder's files without the `<store>-` prefix and `.ts`; throws on an unprefixed file. */
function namesOf(root: string, store: string): string[] {
  const files = fs.readdirSync(path.join(root, store)).filter((f) => f.endsWith(".ts") && f !== "index.ts");
  const unprefixed = files.filter((f) => !f.startsWith(`${store}-`));
  if (unprefixed.length > 0) throw new Error(`${store}/ has files without the ${store}- prefix: ${unprefixed.join(", ")}`);
  return files.map((f) => f.slice(store.length + 1, -".ts".length)).sort();
}

describe("store layout", () => {
  for (const store of STORES) {
    it(`${store}/: every file is ${store}-<name>.ts, the domain files and the factory and tx among them`, () => {
      const names = namesOf(storesDir, store);
      expect(names.filter((n) => DOMAINS.includes(n))).toEqual(DOMAINS);
      expect(names).toEqual(expect.arrayContaining(["store", "tx", "options"]));
    });
  }

  it("names an unprefixed file", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "writ-layout-"));
    try {
      fs.mkdirSync(path.join(root, "memory"));
      fs.writeFileSync(path.join(root, "memory", "memory-claims.ts"), "");
      fs.writeFileSync(path.join(root, "memory", "steps.ts"), "");
      expect(() => namesOf(root, "memory")).toThrow("memory/ has files without the memory- prefix: steps.ts");
      fs.rmSync(path.join(root, "memory", "steps.ts"));
      expect(namesOf(root, "memory")).toEqual(["claims"]);
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
