/**
 * Installs cedar-wasm's Node build and node:crypto as the Cedar engine's runtime. Imported for its
 * effect by the Node entries (src/policy/index.ts, the runtime, the host's policy versions):
 * docs/portable-core.md, "Cedar on any runtime".
 *
 * The `"./nodejs"` build is CommonJS: it reads the `.wasm` with `fs` and instantiates it when it is
 * required. It is required on the first engine call, not when this module is imported, so
 * `import "writ"` loads no wasm (the `"."` export would import the `.wasm` as an ES module, which
 * Node 20 cannot load without `--experimental-wasm-modules`).
 */
import { createRequire } from "node:module";
import type * as NodeBuild from "@cedar-policy/cedar-wasm/nodejs";
import { defaultCrypto } from "../node/defaults.js";
import { installCedarRuntime, type CedarWasm } from "./cedar-wasm.js";

let build: typeof NodeBuild | undefined;
const load = (): typeof NodeBuild => (build ??= createRequire(import.meta.url)("@cedar-policy/cedar-wasm/nodejs") as typeof NodeBuild);

const lazy: CedarWasm = {
  checkParseEntities: (call) => load().checkParseEntities(call),
  isAuthorized: (call) => load().isAuthorized(call),
  policySetTextToParts: (text) => load().policySetTextToParts(text),
  policyToJson: (policy) => load().policyToJson(policy),
  preparsePolicySet: (id, set) => load().preparsePolicySet(id, set),
  preparseSchema: (name, schema) => load().preparseSchema(name, schema),
  schemaToJson: (schema) => load().schemaToJson(schema),
  statefulIsAuthorized: (call) => load().statefulIsAuthorized(call),
  validate: (call) => load().validate(call),
};

installCedarRuntime({ wasm: lazy, defaultCrypto });
