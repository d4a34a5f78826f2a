/**
 * The slice of `@cedar-policy/cedar-wasm` the engine calls, in one place, behind a slot that a
 * runtime fills (docs/portable-core.md, "Cedar on any runtime").
 *
 * The package ships three builds of one wasm module: `"./nodejs"` (CommonJS; reads the `.wasm` with
 * `fs` at import and instantiates it synchronously), `"./web"` (instantiated from bytes or a compiled
 * `WebAssembly.Module` the caller passes) and `"."` (imports the `.wasm` as an ES module). The
 * engine's modules (cedar-engine.ts, cedar-policy-set.ts, ...) import only this file, so they load
 * no build at all: `cedar-wasm-node.ts` installs the Node build (the Node entries import it), and
 * `web.ts`'s `initCedarWasm` installs the web build from an already compiled module (workerd
 * imports the `.wasm` as a module). Until one is installed every call throws `INVALID_OPTION`.
 *
 * `preparsePolicySet` / `preparseSchema` keep the parsed set and schema in the wasm instance's
 * thread-local cache under an id; `statefulIsAuthorized` evaluates against them without re-parsing.
 * The cache has no eviction: one entry per distinct policy set (keyed by its policyRef) per thread.
 */
import type * as CedarBuild from "@cedar-policy/cedar-wasm/web";
import { WritError } from "../core/errors.js";
import type { CryptoPort } from "../core/ports.js";

export type {
  AuthorizationAnswer,
  CedarValueJson,
  DetailedError,
  EntityJson,
  EntityUidJson,
  SchemaJson,
  StatefulAuthorizationCall,
  TypeAndId,
} from "@cedar-policy/cedar-wasm/web";

const NAMES = ["checkParseEntities", "isAuthorized", "policySetTextToParts", "policyToJson", "preparsePolicySet", "preparseSchema", "schemaToJson", "statefulIsAuthorized", "validate"] as const;

/** The functions of an instantiated cedar-wasm build that the engine calls. */
export type CedarWasm = Pick<typeof CedarBuild, (typeof NAMES)[number]>;

/** What a runtime installs: a cedar-wasm build and the CryptoPort that hashes policyRefs by default. */
export interface CedarRuntime {
  wasm: CedarWasm;
  defaultCrypto: () => CryptoPort;
}

let installed: CedarRuntime | undefined;

/** Installs the Cedar build every engine in this module graph uses (the last install wins). */
export function installCedarRuntime(runtime: CedarRuntime): void {
  for (const n of NAMES) {
    if (typeof runtime?.wasm?.[n] !== "function") throw new WritError("INVALID_OPTION", `installCedarRuntime: the cedar-wasm build has no function ${n}`);
  }
  if (typeof runtime.defaultCrypto !== "function") throw new WritError("INVALID_OPTION", "installCedarRuntime: defaultCrypto must be a function returning a CryptoPort");
  installed = { wasm: runtime.wasm, defaultCrypto: runtime.defaultCrypto };
}

function current(): CedarRuntime {
  if (installed === undefined) {
    throw new WritError("INVALID_OPTION", "the Cedar engine is not loaded: on Node import it from writ's policy entry; on a web runtime call initCedarWasm(module) first (docs/portable-core.md)");
  }
  return installed;
}

/** The CryptoPort the installed runtime hashes policyRefs with when none is passed. */
export function cedarDefaultCrypto(): CryptoPort {
  return current().defaultCrypto();
}

export const checkParseEntities: CedarWasm["checkParseEntities"] = (call) => current().wasm.checkParseEntities(call);
export const isAuthorized: CedarWasm["isAuthorized"] = (call) => current().wasm.isAuthorized(call);
export const policySetTextToParts: CedarWasm["policySetTextToParts"] = (text) => current().wasm.policySetTextToParts(text);
export const policyToJson: CedarWasm["policyToJson"] = (policy) => current().wasm.policyToJson(policy);
export const preparsePolicySet: CedarWasm["preparsePolicySet"] = (id, set) => current().wasm.preparsePolicySet(id, set);
export const preparseSchema: CedarWasm["preparseSchema"] = (name, schema) => current().wasm.preparseSchema(name, schema);
export const schemaToJson: CedarWasm["schemaToJson"] = (schema) => current().wasm.schemaToJson(schema);
export const statefulIsAuthorized: CedarWasm["statefulIsAuthorized"] = (call) => current().wasm.statefulIsAuthorized(call);
export const validate: CedarWasm["validate"] = (call) => current().wasm.validate(call);
