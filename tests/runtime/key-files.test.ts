/**
 * Signing keys and the data key on disk. Invariants: processes starting together on an empty
 * directory end up with one active key that all of them use (no keyring overwritten by another's);
 * the private file is 0600; revocation removes the private half and the key never verifies again.
 * The data key file likewise: processes starting together all load the one key that was created,
 * none of them fails reading a file another is still writing, and no temporary file is left.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { STALE_TEMP_MS, localDataKey } from "../../src/runtime/data-key-file.js";
import { generateKeyFile, loadKeyring, loadSigningKey, readKeyFile, revokeKeyFile } from "../../src/runtime/key-files.js";

const CHILD = fileURLToPath(new URL("./fixtures/load-key-child.ts", import.meta.url));
const DATA_KEY_CHILD = fileURLToPath(new URL("./fixtures/load-data-key-child.ts", import.meta.url));
const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), "writ-keys-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const NO_HARD_LINKS = fileURLToPath(new URL("./fixtures/no-hard-links.ts", import.meta.url));

function run(dir: string, start: number, child = CHILD, preload: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ["--import", "tsx", ...preload.flatMap((m) => ["--import", m]), child, dir, String(start)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

describe("signing key files", () => {
  it("four processes starting together on an empty directory share one key", async () => {
    const dir = join(tempDir(), "keys");
    const start = Date.now() + 1500;
    const kids = await Promise.all([1, 2, 3, 4].map(() => run(dir, start)));
    expect(new Set(kids).size).toBe(1);
    const ring = readKeyFile(dir);
    expect(ring).toHaveLength(1);
    expect(ring[0]).toMatchObject({ kid: kids[0], status: "active" });
    expect(readdirSync(dir).filter((f) => f.endsWith(".private.json"))).toEqual([`${kids[0]}.private.json`]);
    expect(statSync(join(dir, `${kids[0]}.private.json`)).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).not.toContain(".lock");
  }, 60_000);

  it("six processes starting together with no data key file share one data key", async () => {
    // Real processes rarely meet inside the few microseconds a key is written in (on two cores);
    // tests/runtime/data-key-race.test.ts forces that interleaving.
    const dir = join(tempDir(), "keys");
    const path = join(dir, "data-key.json");
    const start = Date.now() + 1500;
    const ids = await Promise.all([1, 2, 3, 4, 5, 6].map(() => run(path, start, DATA_KEY_CHILD)));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^dk-/);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ keyId: ids[0] });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["data-key.json"]);
  }, 60_000);

  it("without hard links, processes starting together still share one data key", async () => {
    const dir = join(tempDir(), "keys");
    const path = join(dir, "data-key.json");
    const start = Date.now() + 1500;
    const ids = await Promise.all([1, 2, 3, 4].map(() => run(path, start, DATA_KEY_CHILD, [NO_HARD_LINKS])));
    expect(new Set(ids).size).toBe(1);
    expect(JSON.parse(readFileSync(path, "utf8"))).toMatchObject({ keyId: ids[0] });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["data-key.json"]);
  }, 60_000);

  it("a data key file that cannot be created is refused with KEY_ERROR naming it, and leaves nothing", () => {
    const dir = tempDir();
    const notADir = join(dir, "plain-file");
    writeFileSync(notADir, "x");
    const path = join(notADir, "keys", "data-key.json");
    expect(() => localDataKey(path)).toThrow(expect.objectContaining({ code: "KEY_ERROR", message: expect.stringContaining(`cannot create the data key file ${path}`) as string }) as Error);
    expect(readdirSync(dir)).toEqual(["plain-file"]);
    expect(readFileSync(notADir, "utf8")).toBe("x");
  });

  it("a creator's leftover private file is removed at the next start once stale; a fresh one, or another file, is left", () => {
    // A process killed between writing its private file and removing it leaves a key beside the file.
    const dir = join(tempDir(), "keys");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, "data-key.json");
    const old = (Date.now() - STALE_TEMP_MS - 5_000) / 1000;
    const put = (name: string, stale: boolean): void => {
      writeFileSync(join(dir, name), '{"keyId":"dk-x","key":"y"}\n', { mode: 0o600 });
      if (stale) utimesSync(join(dir, name), old, old);
    };
    put("data-key.json.4242.AbCd_-12.tmp", true); // a dead creator's, before the file existed
    put("data-key.json.77.zzzzzzzz.tmp", false); // one being created right now
    put("data-key.json.9.short.tmp", true); // not a name this code writes
    put("other.json.4242.AbCd_-12.tmp", true); // another file's
    const first = localDataKey(path).keyId;
    expect(readdirSync(dir).sort()).toEqual(["data-key.json", "data-key.json.77.zzzzzzzz.tmp", "data-key.json.9.short.tmp", "other.json.4242.AbCd_-12.tmp"]);
    // Later starts, with the key file there, clean up as well.
    put("data-key.json.5151.QwErTy12.tmp", true);
    expect(localDataKey(path).keyId).toBe(first);
    expect(readdirSync(dir)).not.toContain("data-key.json.5151.QwErTy12.tmp");
    expect(readdirSync(dir)).toContain("data-key.json.77.zzzzzzzz.tmp");
  });

  it("a new key retires the old one; revocation removes the private half", () => {
    const dir = tempDir();
    const first = loadSigningKey(dir);
    const second = generateKeyFile(dir, "second-key");
    expect(loadSigningKey(dir).kid).toBe("second-key");
    expect(readKeyFile(dir).map((k) => [k.kid, k.status])).toEqual([
      [first.kid, "retired"],
      [second.kid, "active"],
    ]);
    revokeKeyFile(dir, first.kid);
    expect(loadKeyring(dir).get(first.kid)?.status).toBe("revoked");
    expect(readdirSync(dir)).not.toContain(`${first.kid}.private.json`);
    expect(() => revokeKeyFile(dir, "nope")).toThrow(expect.objectContaining({ code: "NOT_FOUND" }) as Error);
  });
});
