// Which CLI `bin/writ.js` runs: the compiled one in dist/ while it is current, else none (the
// sources then run through tsx). Shared with the cold-start benchmark (bench/cli.ts).
import { existsSync, readdirSync, statSync } from "node:fs";
import process from "node:process";
import { URL } from "node:url";

const root = new URL("../", import.meta.url);

/** True when some file under `dir` changed after `since` (ms). */
function changedAfter(dir, since) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  for (const d of entries) {
    const p = new URL(d.isDirectory() ? `${d.name}/` : d.name, dir);
    if (d.isDirectory() ? changedAfter(p, since) : statSync(p).mtimeMs > since) return true;
  }
  return false;
}

/**
 * The compiled entry (dist/cli/main.js) when it exists and, in a checkout, no file under src/ is
 * newer; else null. Always null with WRIT_FROM_SOURCE=1.
 * @returns {{ entry: URL | null, stale: boolean }}
 */
export function builtCli() {
  const entry = new URL("dist/cli/main.js", root);
  if (!existsSync(entry)) return { entry: null, stale: false };
  // Only a checkout can be stale (it has the build config); an installed package cannot be rebuilt,
  // and its files' times are those of the unpacking, in no useful order.
  const checkout = existsSync(new URL("tsconfig.build.json", root));
  const stale = checkout && changedAfter(new URL("src/", root), statSync(entry).mtimeMs);
  return { entry: stale || process.env.WRIT_FROM_SOURCE === "1" ? null : entry, stale };
}
