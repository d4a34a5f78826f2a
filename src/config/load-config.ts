/** Loads `writ.config.ts` (or .js/.mjs) with tsx, so a TypeScript config needs no build step. */
import { existsSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { tsImport } from "tsx/esm/api";
import { WritError, errorMessage } from "../core/errors.js";
import { checkConfig, type WritConfig } from "./define-config.js";

export const CONFIG_FILES = ["writ.config.ts", "writ.config.mts", "writ.config.js", "writ.config.mjs"];

/** Finds the config: an explicit path, else the first of CONFIG_FILES in `cwd`. */
export function findConfig(cwd: string, explicit?: string): string {
  if (explicit) {
    const p = isAbsolute(explicit) ? explicit : resolve(cwd, explicit);
    if (!existsSync(p)) throw new WritError("INVALID_OPTION", `config file ${explicit} does not exist`);
    return p;
  }
  for (const f of CONFIG_FILES) {
    const p = resolve(cwd, f);
    if (existsSync(p)) return p;
  }
  throw new WritError("INVALID_OPTION", `no config found in ${cwd} (looked for ${CONFIG_FILES.join(", ")}); pass --config <file>`);
}

export async function loadConfig(path: string): Promise<WritConfig> {
  let mod: { default?: unknown };
  try {
    mod = (await tsImport(pathToFileURL(path).href, import.meta.url)) as { default?: unknown };
  } catch (e) {
    throw new WritError("INVALID_OPTION", `config ${path} failed to load: ${errorMessage(e)}`);
  }
  const config = (mod.default as { default?: unknown } | undefined)?.default ?? mod.default;
  checkConfig(config, path);
  return config;
}
