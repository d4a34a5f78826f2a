/**
 * What a config names on disk: its store and its keys directory. Kept apart from the runtime so a
 * read-only command opens the store without loading the host (docs/cli.md, Start-up). Relative
 * paths resolve against a base directory: the CLI passes the config file's directory, so a client
 * that starts `writ` from a directory of its own still finds the store (docs/cli.md, Config files).
 */
import { accessSync, constants, existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import type { Store } from "../core/store.js";
import type { WritConfig } from "../config/define-config.js";

/** A path of the config, relative ones against `baseDir`. */
export function configRelative(p: string, baseDir: string): string {
  return isAbsolute(p) ? p : join(baseDir, p);
}

/** The SQLite file the config names (default `.writ/writ.db`), or null for another store or `:memory:`. */
export function sqliteFileOf(config: WritConfig, baseDir: string): string | null {
  const s = config.store ?? { kind: "sqlite" as const };
  if (s.kind !== "sqlite") return null;
  const path = s.path ?? ".writ/writ.db";
  return path === ":memory:" ? null : configRelative(path, baseDir);
}

/** False when the config's store is a SQLite file that does not exist yet (nothing was ever stored there). */
export function storeExists(config: WritConfig, baseDir: string): boolean {
  const file = sqliteFileOf(config, baseDir);
  return file === null || existsSync(file);
}

/** Where the config's store is, for messages: a file path, or a PostgreSQL host and database (never credentials). */
export function describeStore(config: WritConfig, baseDir: string): string {
  const s = config.store ?? { kind: "sqlite" as const };
  switch (s.kind) {
    case "sqlite":
      return `the SQLite database ${sqliteFileOf(config, baseDir) ?? ":memory:"}`;
    case "postgres":
      return describePostgresUrl(s.url);
    case "memory":
      return "the memory store (nothing persists between processes)";
    case "custom":
      return "the config's custom store";
  }
}

/**
 * Where a `postgres://` URL points, for messages: its host (or, for a multi-host URL, every host
 * in the order they are tried, with `target_session_attrs`) and database. Never the user name or
 * password. Parsed here with a regular expression, not the store's URL module: a SQLite CLI loads
 * nothing of PostgreSQL's.
 */
export function describePostgresUrl(url: string): string {
  // The authority's user info ends at its last "@" (an encoded password may hold one).
  const m = /^postgres(?:ql)?:\/\/(?:[^/?#]*@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i.exec(url);
  const hosts = m?.[1]?.split(",") ?? [];
  if (m === null || hosts.some((h) => h.length === 0 && hosts.length > 1)) return "the PostgreSQL database of store.url";
  const path = m[2] ?? "";
  if (hosts.length === 1) return `the PostgreSQL database ${hosts[0]}${path}`;
  let attrs: string | null = null;
  try {
    attrs = new URLSearchParams(m[3] ?? "").get("target_session_attrs");
  } catch {
    attrs = null;
  }
  const db = path.replace(/^\//, "");
  return `the PostgreSQL database ${db.length > 0 ? db : "(the user's default)"} on ${hosts.length} hosts, tried in order: ${hosts.join(", ")}${attrs !== null ? ` (target_session_attrs=${attrs})` : ""}`;
}

/** Why a file cannot be created (its nearest existing ancestor is not a writable directory), or null. */
export function whyNotCreatable(file: string): string | null {
  let dir = dirname(file);
  while (!existsSync(dir)) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return `${dir} is not writable`;
  }
  return null;
}

/** The config's store. Only the module of that kind is imported (a SQLite CLI never loads PostgreSQL's). */
export async function storeFromConfig(config: WritConfig, baseDir: string): Promise<Store> {
  const s = config.store ?? { kind: "sqlite" as const };
  switch (s.kind) {
    case "memory":
      return (await import("../stores/memory/index.js")).memoryStore();
    case "custom":
      return s.store;
    case "postgres":
      return (await import("../stores/postgres/index.js")).postgresStore(
        { url: s.url },
        {
          ...(s.poolSize !== undefined ? { max: s.poolSize } : {}),
          ...(s.queryTimeoutMs !== undefined ? { queryTimeoutMs: s.queryTimeoutMs } : {}),
          ...(s.keepAliveMs !== undefined ? { keepAliveMs: s.keepAliveMs } : {}),
        },
      );
    case "sqlite":
      return (await import("../stores/sqlite/index.js")).sqliteStore({ path: sqliteFileOf(config, baseDir) ?? ":memory:" });
  }
}

/** The config's keys directory (`keys.dir`, default `.writ/keys`), relative paths against `baseDir`. */
export function keysDirOf(config: WritConfig, baseDir: string): string {
  return configRelative(config.keys?.dir ?? ".writ/keys", baseDir);
}
