// Which CLI `bin/writ.js` runs: the compiled one in dist/ while it is current, else none (the
// sources then run through tsx, a dev dependency). Shared with the cold-start benchmark
// (bench/cli.ts).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { URL, fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));

/** True when some file under `dir` changed after `since` (ms). Plain paths: a few ms for src/. */
function changedAfter(dir, since) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const d of entries) {
    const p = join(dir, d.name);
    if (d.isDirectory() ? changedAfter(p, since) : statSync(p).mtimeMs > since) return true;
  }
  return false;
}

/**
 * The compiled entry (dist/cli/main.js) when it exists and, in a git checkout, no file under src/
 * is newer; else null. Always null with WRIT_FROM_SOURCE=1.
 * @returns {{ entry: URL | null, stale: boolean }}
 */
export function builtCli() {
  const entry = join(root, "dist", "cli", "main.js");
  let built;
  try {
    built = statSync(entry).mtimeMs;
  } catch {
    return { entry: null, stale: false };
  }
  // Only a git checkout can be stale (its sources are edited); an installed package cannot be
  // rebuilt, and its files' times are those of the unpacking, in no useful order.
  const checkout = existsSync(join(root, ".git")) && existsSync(join(root, "tsconfig.build.json"));
  const stale = checkout && changedAfter(join(root, "src"), built);
  return { entry: stale || process.env.WRIT_FROM_SOURCE === "1" ? null : pathToFileURL(entry), stale };
}
