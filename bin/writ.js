#!/usr/bin/env node
// The `writ` command. Runs the compiled CLI in dist/ (`npm run build`; `npm ci` and `npm install`
// build it through the `prepare` script, and the published package ships it). In a git checkout
// whose dist/ is missing or older than a file under src/ (you edited a source), it runs the sources
// through tsx (a dev dependency) instead: slower to start (1-3 s), never stale; without tsx it
// says to run `npm run build`. WRIT_FROM_SOURCE=1 forces the sources.
import module from "node:module";
import process from "node:process";
import { builtCli } from "./built.js";

// Node >= 22.1 keeps the V8 code of the modules it compiled on disk (in the default cache dir,
// or $NODE_COMPILE_CACHE) so later starts skip the compile; Node 20 lacks it and starts as before.
module.enableCompileCache?.();

const { entry, stale } = builtCli();
if (entry) {
  await import(entry.href);
} else {
  let register;
  try {
    ({ register } = await import("tsx/esm/api"));
  } catch {
    process.stderr.write(`writ: ${stale ? "src/ changed after the last build" : "dist/ is missing"} and tsx (a dev dependency) is not installed: run \`npm run build\` (or \`npm install\`) first.\n`);
    process.exit(1);
  }
  if (stale && process.stderr.isTTY && process.env.WRIT_FROM_SOURCE !== "1") {
    process.stderr.write("writ: src/ changed after the last build; running the sources (slower start). `npm run build` compiles them.\n");
  }
  register();
  await import("../src/cli/main.ts");
}
