/**
 * What a config names on disk: its store and its keys directory. Kept apart from the runtime so a
 * read-only command opens the store without loading the host (docs/cli.md, Start-up).
 */
import { isAbsolute, join } from "node:path";
import type { Store } from "../core/store.js";
import type { WritConfig } from "../config/define-config.js";

/** The config's store. Only the module of that kind is imported (a SQLite CLI never loads PostgreSQL's). */
export async function storeFromConfig(config: WritConfig, cwd: string): Promise<Store> {
  const s = config.store ?? { kind: "sqlite" as const };
  switch (s.kind) {
    case "memory":
      return (await import("../stores/memory/index.js")).memoryStore();
    case "custom":
      return s.store;
    case "postgres":
      return (await import("../stores/postgres/index.js")).postgresStore({ url: s.url }, s.poolSize !== undefined ? { max: s.poolSize } : {});
    case "sqlite": {
      const path = s.path ?? ".writ/writ.db";
      return (await import("../stores/sqlite/index.js")).sqliteStore({ path: path === ":memory:" || isAbsolute(path) ? path : join(cwd, path) });
    }
  }
}

/** The config's keys directory (`keys.dir`, default `.writ/keys`), relative paths against `cwd`. */
export function keysDirOf(config: WritConfig, cwd: string): string {
  const dir = config.keys?.dir ?? ".writ/keys";
  return isAbsolute(dir) ? dir : join(cwd, dir);
}
