/**
 * The local data key (docs/security.md): a 256-bit AES-GCM key in a file readable by its owner only
 * (0600, created on first use under a 0700 directory). It implements the core's DataKeyPort; a KMS
 * implements the same port in production. A key file that others can read is refused.
 */
import nodeCrypto from "node:crypto";
import { closeSync, existsSync, fchmodSync, fsyncSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { base64url, fromBase64url } from "../core/encoding.js";
import { WritError } from "../core/errors.js";
import type { DataKeyPort } from "../core/sealing.js";

interface KeyFile {
  keyId: string;
  key: string;
}

/** Refuses a secret file that group or others may read or write (a clear error naming it). */
export function assertPrivateFile(path: string, what: string): void {
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new WritError("KEY_ERROR", `${what} ${path} is readable or writable by others (mode 0${mode.toString(8)}): run \`chmod 600 ${path}\` and check who could have read it`);
  }
}

/** `link` errors of filesystems without hard links (FAT, exFAT, some network and FUSE mounts). */
const NO_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EXDEV"]);

/** The suffix of this process's private file beside the key file: `.<pid>.<8 base64url>.tmp`. */
function privateSuffix(): string {
  return `.${process.pid}.${base64url(nodeCrypto.randomBytes(6))}.tmp`;
}

/** Whether `suffix` (a name beside the key file, less the key file's name) has `privateSuffix`'s shape. */
const isPrivateSuffix = (suffix: string): boolean => /^\.\d+\.[A-Za-z0-9_-]{8}\.tmp$/.test(suffix);

/**
 * Creates the key file unless it exists, so that it appears whole or not at all: the key is written
 * and synced to a private file of this process beside it, then linked to `path` (a link never
 * replaces a file). Of several processes starting together exactly one link succeeds; the others
 * find it taken and read the one that won, never an empty or half-written file. The directory is
 * synced (by the losers too), so that a crash cannot leave the name without the key every sealed
 * value needs. Where the filesystem has no hard links, the file is created exclusively in place
 * and a reader that finds it still being written waits for it (`readKeyJson`).
 */
function createOnce(path: string, tries = 2): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const k: KeyFile = { keyId: `dk-${base64url(nodeCrypto.randomBytes(6))}`, key: base64url(nodeCrypto.randomBytes(32)) };
  const text = JSON.stringify(k) + "\n";
  const tmp = `${path}${privateSuffix()}`;
  try {
    writePrivate(tmp, text);
    try {
      linkSync(tmp, path);
    } catch (e) {
      const code = (e as { code?: string }).code ?? "";
      if (code === "EEXIST") {
        // Another process created it first: theirs is the key.
      } else if (code === "ENOENT" && tries > 1) {
        // Our private file is gone, taken for a dead creator's leftover (removeStaleTemps) by a
        // process that started while this one stalled for over a minute. Once more: the link then
        // finds that process's key file (EEXIST) or places ours.
        createOnce(path, tries - 1);
        return;
      } else if (NO_LINKS.has(code)) {
        try {
          writePrivate(path, text);
        } catch (e2) {
          if ((e2 as { code?: string }).code !== "EEXIST") throw e2;
        }
      } else {
        throw e;
      }
    }
    syncDirectory(dir);
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Creates `file` exclusively, 0600, with `text` written whole and synced. */
function writePrivate(file: string, text: string): void {
  const fd = openSync(file, "wx", 0o600);
  try {
    // By descriptor, not path (the umask may have narrowed the mode): the name may be gone by now.
    fchmodSync(fd, 0o600);
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Best effort: some platforms and filesystems cannot sync a directory (the file itself is synced). */
function syncDirectory(dir: string): void {
  try {
    const fd = openSync(dir, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // EISDIR, EINVAL, EPERM, ENOTSUP: nothing more to do here.
  }
}

/** The file's JSON; a file still being written (no links: created in place) is waited for, at most a second. */
function readKeyJson(path: string): unknown {
  for (let i = 0; ; i++) {
    try {
      return JSON.parse(readFileSync(path, "utf8"));
    } catch {
      if (i >= 40 || Date.now() - statSync(path).mtimeMs > 2_000) throw new WritError("KEY_ERROR", `the data key file ${path} is not valid JSON`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
}

/** A private file older than this beside the key file is a creator's leftover (a create takes milliseconds). */
export const STALE_TEMP_MS = 60_000;

/**
 * Removes the private files a process that died while creating the key file left beside it
 * (`<name>.<pid>.<random>.tmp`, each holding a key that never became the key): those written more
 * than STALE_TEMP_MS ago. A younger one may belong to a process creating the file right now and is
 * left to it. Best effort: a file that cannot be listed or removed is left, and says nothing.
 */
function removeStaleTemps(path: string): void {
  const now = Date.now();
  const name = basename(path);
  const dir = dirname(path);
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
  for (const e of entries) {
    if (!e.startsWith(name) || !isPrivateSuffix(e.slice(name.length))) continue;
    const f = join(dir, e);
    try {
      if (now - statSync(f).mtimeMs > STALE_TEMP_MS) rmSync(f, { force: true });
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
}

function readOrCreate(path: string): KeyFile {
  removeStaleTemps(path);
  if (!existsSync(path)) {
    try {
      createOnce(path);
    } catch (e) {
      throw new WritError("KEY_ERROR", `cannot create the data key file ${path}: ${(e as Error).message}`, { cause: e });
    }
  }
  assertPrivateFile(path, "the data key file");
  const k = readKeyJson(path) as Partial<KeyFile>;
  const bytes = typeof k.key === "string" ? fromBase64url(k.key) : null;
  if (typeof k.keyId !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(k.keyId) || !bytes || bytes.length !== 32) {
    throw new WritError("KEY_ERROR", `the data key file ${path} must hold { keyId, key: <32 bytes base64url> }`);
  }
  return { keyId: k.keyId, key: k.key! };
}

/**
 * A DataKeyPort over a local key file. Envelope: `v1.<keyId>.<iv>.<ciphertext>.<tag>` (base64url),
 * AES-256-GCM with the caller's context as associated data.
 * @example
 * createHost({ ..., dataKey: localDataKey(".writ/keys/data-key.json") })
 */
export function localDataKey(path: string): DataKeyPort {
  const file = readOrCreate(path);
  const key = Buffer.from(fromBase64url(file.key)!);
  return {
    keyId: file.keyId,
    seal(plaintext, context) {
      const iv = nodeCrypto.randomBytes(12);
      const c = nodeCrypto.createCipheriv("aes-256-gcm", key, iv);
      c.setAAD(context);
      const ct = Buffer.concat([c.update(plaintext), c.final()]);
      return ["v1", file.keyId, base64url(iv), base64url(ct), base64url(c.getAuthTag())].join(".");
    },
    open(sealed, context) {
      const [v, kid, iv, ct, tag] = sealed.split(".");
      if (v !== "v1" || kid !== file.keyId || iv === undefined || ct === undefined || tag === undefined) throw new WritError("KEY_ERROR", "a sealed value is not under this data key");
      const d = nodeCrypto.createDecipheriv("aes-256-gcm", key, Buffer.from(fromBase64url(iv) ?? []));
      d.setAAD(context);
      d.setAuthTag(Buffer.from(fromBase64url(tag) ?? []));
      return new Uint8Array(Buffer.concat([d.update(Buffer.from(fromBase64url(ct) ?? [])), d.final()]));
    },
  };
}
