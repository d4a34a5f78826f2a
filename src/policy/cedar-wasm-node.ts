/**
 * Installs cedar-wasm's Node build (read from disk at import) and node:crypto as the Cedar
 * engine's runtime. Imported for its effect by the Node entries (src/policy/index.ts, the runtime,
 * the host's policy versions): docs/portable-core.md, "Cedar on any runtime".
 */
import * as nodeBuild from "@cedar-policy/cedar-wasm/nodejs";
import { defaultCrypto } from "../node/defaults.js";
import { installCedarRuntime } from "./cedar-wasm.js";

installCedarRuntime({ wasm: nodeBuild, defaultCrypto });
