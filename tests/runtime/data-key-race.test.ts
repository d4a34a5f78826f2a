/**
 * The data key file appears whole or not at all. Invariant: a process that looks for the file at
 * the moment another is writing it (the other has created it and not yet written the key) never
 * reads a partial file; both end up with the one key that was created. The interleaving is forced
 * here: the first write of a key calls `localDataKey` again from inside it, as a second process
 * starting at that instant would (tests/runtime/key-files.test.ts races real processes).
 *
 * A process that stalls for over a minute between writing its private file and linking it finds
 * that file removed by one starting meanwhile (it looks like a dead creator's leftover).
 * Invariant: the stalled one still ends with the one key, whether the other created the file or
 * not, and leaves nothing behind.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync } from "node:fs";
import * as realFs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";

const hook: { during: (() => void) | null } = { during: null };
function runHook(): void {
  const during = hook.during;
  hook.during = null;
  during?.();
}
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof realFs>();
  return {
    ...fs,
    // The key is written with one of these (the code before the fix used writeSync).
    writeSync: (...a: unknown[]) => {
      runHook();
      return (fs.writeSync as (...x: unknown[]) => number)(...a);
    },
    writeFileSync: (...a: unknown[]) => {
      runHook();
      (fs.writeFileSync as (...x: unknown[]) => void)(...a);
    },
  };
});
const { localDataKey } = await import("../../src/runtime/data-key-file.js");

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the data key file", () => {
  it("is never read half-written by a process starting at the same moment", () => {
    const dir = mkdtempSync(join(tmpdir(), "writ-dk-race-"));
    dirs.push(dir);
    const path = join(dir, "keys", "data-key.json");
    let second: string | Error = new Error("the second process never looked");
    hook.during = () => {
      try {
        second = localDataKey(path).keyId;
      } catch (e) {
        second = e as Error;
      }
    };
    const first = localDataKey(path).keyId;
    expect(second).toBe(first);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ keyId: first });
    expect(readdirSync(join(dir, "keys"))).toEqual(["data-key.json"]);
  });

  for (const other of ["creates the file", "dies before creating it"] as const) {
    it(`survives its private file being taken for a leftover while it stalled (the other process ${other})`, () => {
      const dir = mkdtempSync(join(tmpdir(), "writ-dk-stall-"));
      dirs.push(dir);
      const keys = join(dir, "keys");
      const path = join(keys, "data-key.json");
      let second: string | null = null;
      hook.during = () => {
        // The first process's private file exists, empty; it "stalls" for two minutes here.
        const old = (Date.now() - 120_000) / 1000;
        for (const f of readdirSync(keys)) utimesSync(join(keys, f), old, old);
        if (other === "creates the file") second = localDataKey(path).keyId;
        else {
          // Its start removes the stale file, then it dies before writing its own.
          for (const f of readdirSync(keys)) rmSync(join(keys, f));
        }
      };
      const first = localDataKey(path).keyId;
      if (other === "creates the file") expect(first).toBe(second);
      expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ keyId: first });
      expect(localDataKey(path).keyId).toBe(first);
      expect(readdirSync(keys)).toEqual(["data-key.json"]);
    });
  }
});
