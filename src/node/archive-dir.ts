/**
 * The default archive target (docs/archives.md): a local directory. A put writes a temporary file
 * beside the object, flushes it to disk, renames it over the name and flushes the directory, so a
 * crash leaves the previous object or the new one, never a part of it. Every file operation is
 * asynchronous: a segment of tens of megabytes is written, flushed and read back off the event loop,
 * so a worker archiving beside its claim loop keeps serving meanwhile.
 */
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import type { ArchiveTarget } from "../core/archive-format.js";
import { WritError } from "../core/errors.js";

async function fsyncDir(dir: string): Promise<void> {
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    fh = await open(dir, "r");
    await fh.sync();
  } catch {
    // Some platforms cannot open a directory to flush it; the rename is still atomic.
  } finally {
    await fh?.close();
  }
}

/** An archive target in `dir` (created on the first put, mode 0700); object names are relative paths in it. */
export function directoryArchive(dir: string): ArchiveTarget & { readonly dir: string } {
  const root = resolve(dir);
  const pathOf = (name: string): string => {
    const p = resolve(root, name);
    if (!p.startsWith(root + sep) || name.split("/").some((part) => part === "" || part === "." || part === "..")) {
      throw new WritError("INVALID_ARGUMENT", `archive object name ${JSON.stringify(name)} is not a plain relative path`);
    }
    return p;
  };
  let puts = 0;
  return {
    dir: root,
    async put(name, data) {
      const p = pathOf(name);
      await mkdir(dirname(p), { recursive: true, mode: 0o700 });
      // Its own temporary file per put: two puts of one name in this process (a worker's pass and
      // `host.archive.runOnce`) must not write into the same file, now that they interleave.
      const tmp = `${p}.tmp-${process.pid}-${++puts}`;
      const fh = await open(tmp, "w", 0o600);
      try {
        // writeFile on a handle writes it all (looping over short writes).
        await fh.writeFile(data);
        await fh.sync();
      } catch (e) {
        await fh.close();
        await rm(tmp, { force: true });
        throw e;
      }
      await fh.close();
      await rename(tmp, p);
      await fsyncDir(dirname(p));
    },
    async get(name) {
      try {
        const b = await readFile(pathOf(name));
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") return null;
        throw e;
      }
    },
    async list(prefix) {
      const dirPath = prefix === "" ? root : pathOf(prefix.replace(/\/$/, ""));
      let names: string[];
      try {
        names = await readdir(dirPath);
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") return [];
        throw e;
      }
      return names.filter((n) => !n.includes(".tmp-")).map((n) => join(prefix, n).split(sep).join("/"));
    },
  };
}
