#!/usr/bin/env node
// The `writ` command. Runs the compiled CLI in dist/ (`npm run build`; `npm ci` and `npm install`
// build it through the `prepare` script, and the published package ships it). In a checkout whose
// dist/ is missing or older than a file under src/ (you edited a source), it runs the sources
// through tsx instead: slower to start (1-3 s), never stale. WRIT_FROM_SOURCE=1 forces the sources.
import process from "node:process";
import { builtCli } from "./built.js";

const { entry, stale } = builtCli();
if (entry) {
  await import(entry.href);
} else {
  if (stale && process.stderr.isTTY && process.env.WRIT_FROM_SOURCE !== "1") {
    process.stderr.write("writ: src/ changed after the last build; running the sources (slower start). `npm run build` compiles them.\n");
  }
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
