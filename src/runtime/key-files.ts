/**
 * Signing keys on disk: `<dir>/keyring.json` lists every key (kid, public JWK, status) and
 * `<dir>/<kid>.private.json` holds a private key, readable by the owner only (0600). Revoked keys
 * lose their private file.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WritError } from "../core/errors.js";
import { createKeyring, type Keyring, type KeyStatus, type SigningKey } from "../core/keyring.js";
import type { PrivateJwk, PublicJwk } from "../core/ports.js";
import { defaultCrypto } from "../node/defaults.js";
import { systemRandom } from "../node/clock.js";
import { base64url } from "../core/encoding.js";

export interface KeyFileEntry {
  kid: string;
  publicJwk: PublicJwk;
  status: KeyStatus;
  createdAt: string;
}

const KID_RE = /^[A-Za-z0-9_.-]{1,100}$/;

function ringPath(dir: string): string {
  return join(dir, "keyring.json");
}

export function readKeyFile(dir: string): KeyFileEntry[] {
  const p = ringPath(dir);
  if (!existsSync(p)) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(p, "utf8"));
  } catch {
    throw new WritError("KEY_ERROR", `${p} is not valid JSON`);
  }
  const keys = (parsed as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) throw new WritError("KEY_ERROR", `${p} must hold { "keys": [...] }`);
  return keys as KeyFileEntry[];
}

function writeKeyFile(dir: string, keys: KeyFileEntry[]): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${ringPath(dir)}.tmp`;
  writeFileSync(tmp, JSON.stringify({ keys }, null, 2) + "\n");
  renameSync(tmp, ringPath(dir));
}

const LOCK_WAIT_MS = 10_000;
const LOCK_STALE_MS = 30_000;

/**
 * Runs `fn` holding `<dir>/.lock` (created exclusively): processes that start together on an empty
 * directory, or change keys at once, take turns instead of overwriting each other's keyring.
 */
export function withKeyLock<T>(dir: string, fn: () => T): T {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = join(dir, ".lock");
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { force: true }); // left by a killed process
      } catch {
        /* removed meanwhile */
      }
      if (Date.now() > deadline) throw new WritError("KEY_ERROR", `${lock} is held by another process; try again`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Generates a key, stores its private half 0600, adds it as active; older active keys become retired. */
export function generateKeyFile(dir: string, kid?: string): KeyFileEntry {
  return withKeyLock(dir, () => generateUnlocked(dir, kid));
}

function generateUnlocked(dir: string, kid?: string): KeyFileEntry {
  const id = kid ?? `key-${new Date().toISOString().slice(0, 10)}-${base64url(systemRandom.bytes(4))}`;
  if (!KID_RE.test(id)) throw new WritError("KEY_ERROR", "kid must be 1-100 characters of letters, digits, _ . -");
  const keys = readKeyFile(dir);
  if (keys.some((k) => k.kid === id)) throw new WritError("KEY_ERROR", `a key ${id} already exists`);
  const { privateJwk, publicJwk } = defaultCrypto().generateEd25519();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const priv = join(dir, `${id}.private.json`);
  writeFileSync(priv, JSON.stringify({ ...privateJwk, kid: id }) + "\n", { mode: 0o600 });
  chmodSync(priv, 0o600);
  const entry: KeyFileEntry = { kid: id, publicJwk: { ...publicJwk, kid: id, alg: "EdDSA", use: "sig" }, status: "active", createdAt: new Date().toISOString() };
  writeKeyFile(dir, [...keys.map((k) => (k.status === "active" ? { ...k, status: "retired" as const } : k)), entry]);
  return entry;
}

/** Revokes a key for good (decisions signed with it never verify again) and deletes its private half. */
export function revokeKeyFile(dir: string, kid: string): KeyFileEntry {
  return withKeyLock(dir, () => revokeUnlocked(dir, kid));
}

function revokeUnlocked(dir: string, kid: string): KeyFileEntry {
  const keys = readKeyFile(dir);
  const k = keys.find((x) => x.kid === kid);
  if (!k) throw new WritError("NOT_FOUND", `no key ${kid} in ${dir}`);
  k.status = "revoked";
  writeKeyFile(dir, keys);
  rmSync(join(dir, `${kid}.private.json`), { force: true });
  return k;
}

export function loadKeyring(dir: string): Keyring {
  return createKeyring(readKeyFile(dir).map((k) => ({ kid: k.kid, publicJwk: k.publicJwk, status: k.status })));
}

/** The active signing key; generates the first one when the directory holds none. */
export function loadSigningKey(dir: string, options: { create?: boolean } = {}): SigningKey {
  let keys = readKeyFile(dir);
  if (!keys.some((k) => k.status === "active")) {
    if (options.create === false) throw new WritError("KEY_ERROR", `no active signing key in ${dir}: run \`writ keys generate\``);
    // Under the lock, look again: another process starting at the same moment may have made it.
    keys = withKeyLock(dir, () => {
      if (!readKeyFile(dir).some((k) => k.status === "active")) generateUnlocked(dir);
      return readKeyFile(dir);
    });
  }
  const active = keys.filter((k) => k.status === "active").at(-1)!;
  const priv = join(dir, `${active.kid}.private.json`);
  if (!existsSync(priv)) throw new WritError("KEY_ERROR", `the private key of ${active.kid} is missing from ${dir}`);
  // A signing key others can read is refused at start: whoever read it can mint decisions.
  const mode = statSync(priv).mode & 0o777;
  if ((mode & 0o077) !== 0) throw new WritError("KEY_ERROR", `the signing key file ${priv} is readable or writable by others (mode 0${mode.toString(8)}): run \`chmod 600 ${priv}\`, and rotate the key if anyone could have read it`);
  const privateJwk = JSON.parse(readFileSync(priv, "utf8")) as PrivateJwk;
  return { kid: active.kid, privateJwk, publicJwk: active.publicJwk };
}
