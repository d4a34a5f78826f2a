#!/usr/bin/env node
// The `writ` command. Runs the TypeScript sources through tsx, so it works from a clone without a build.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
