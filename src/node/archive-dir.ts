/**
 * The default archive target (docs/archives.md): a local directory. A put writes a temporary file
 * beside the object, flushes it to disk, renames it over the name and flushes the directory, so a
 * crash leaves the previous object or the new one, never a part of it.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import type { ArchiveTarget } from "../core/archive-format.js";
import { WritError } from "../core/errors.js";

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Some platforms cannot open a directory to flush it; the rename is still atomic.
  } finally {
    if (fd !== undefined) closeSync(fd);
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
  return {
    dir: root,
    async put(name, data) {
      const p = pathOf(name);
      mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
      const tmp = `${p}.tmp-${process.pid}`;
      const fd = openSync(tmp, "w", 0o600);
      try {
        let off = 0;
        while (off < data.length) off += writeSync(fd, data, off, data.length - off);
        fsyncSync(fd);
      } catch (e) {
        closeSync(fd);
        rmSync(tmp, { force: true });
        throw e;
      }
      closeSync(fd);
      renameSync(tmp, p);
      fsyncDir(dirname(p));
    },
    async get(name) {
      try {
        return new Uint8Array(readFileSync(pathOf(name)));
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") return null;
        throw e;
      }
    },
    async list(prefix) {
      const dirPath = prefix === "" ? root : pathOf(prefix.replace(/\/$/, ""));
      let names: string[];
      try {
        names = readdirSync(dirPath);
      } catch (e) {
        if ((e as { code?: string }).code === "ENOENT") return [];
        throw e;
      }
      return names.filter((n) => !n.includes(".tmp-")).map((n) => join(prefix, n).split(sep).join("/"));
    },
  };
}
