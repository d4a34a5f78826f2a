/**
 * The Cedar engine on a web runtime (workerd, browsers, Deno): cedar-wasm's web build, instantiated
 * from a module the caller already has. workerd imports the `.wasm` as a module (a `CompiledWasm`
 * module in its config, or a bundler's wasm import), so nothing is fetched or read at run time:
 * docs/portable-core.md, "Cedar on any runtime".
 * @example
 * import cedarModule from "./cedar_wasm_bg.wasm";
 * initCedarWasm(cedarModule, { crypto: webCryptoPort() });
 * const policy = cedarPolicy({ policies });
 */
import { initSync, type SyncInitInput } from "@cedar-policy/cedar-wasm/web";
import * as webBuild from "@cedar-policy/cedar-wasm/web";
import { WritError } from "../core/errors.js";
import type { CryptoPort } from "../core/ports.js";
import { installCedarRuntime } from "./cedar-wasm.js";

export { cedarPolicy, type CedarPolicyEngine, type CedarPolicyOptions } from "./cedar-engine.js";
export { policySetRef, prepareCedarPolicySet, type CedarEntity, type CedarSchemaInput, type PrepareCedarPolicySetOptions, type PreparedCedarPolicySet } from "./cedar-policy-set.js";
export { ACTOR_ENTITY_TYPES, CEDAR_NAMESPACE, actionEntity, actorEntity, spaceEntity, tenantEntity } from "./cedar-request.js";

/**
 * Instantiates cedar-wasm's web build from `module` (a compiled `WebAssembly.Module`, or its
 * bytes where the runtime allows compiling) and makes it the engine's build; `crypto` hashes
 * policyRefs when an engine is given none. The module imports nothing from its host but JSON
 * helpers (no entropy, no time, no I/O). Later calls reuse the first instance.
 */
export function initCedarWasm(module: SyncInitInput, options: { crypto: CryptoPort }): void {
  if (module === null || typeof module !== "object") throw new WritError("INVALID_OPTION", "initCedarWasm: module must be a WebAssembly.Module (or its bytes)");
  if (typeof options?.crypto?.sha256 !== "function") throw new WritError("INVALID_OPTION", "initCedarWasm: options.crypto must be a CryptoPort");
  initSync({ module });
  const crypto = options.crypto;
  installCedarRuntime({ wasm: webBuild, defaultCrypto: () => crypto });
}
