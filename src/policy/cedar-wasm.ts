/**
 * The slice of `@cedar-policy/cedar-wasm` the engine calls, in one place.
 *
 * Entry point: the package's `"."` export (`esm/`) imports the `.wasm` file as an ES module, which
 * Node 20 cannot load without `--experimental-wasm-modules`. The `"./nodejs"` export is a CommonJS
 * build that reads the `.wasm` with `fs` once at import and instantiates it synchronously. It is
 * required on the first call below, not when this module is imported, so `import "writ"` loads no
 * wasm. A workerd/browser build would import `"./web"` here instead.
 *
 * `preparsePolicySet` / `preparseSchema` keep the parsed set and schema in the wasm instance's
 * thread-local cache under an id; `statefulIsAuthorized` evaluates against them without re-parsing.
 * The cache has no eviction: one entry per distinct policy set (keyed by its policyRef) per thread.
 */
import { createRequire } from "node:module";
import type * as CedarWasm from "@cedar-policy/cedar-wasm/nodejs";

type Cedar = typeof CedarWasm;
let loaded: Cedar | undefined;

/** The wasm module, required (and instantiated) on first use: importing the engine costs nothing. */
function cedar(): Cedar {
  return (loaded ??= createRequire(import.meta.url)("@cedar-policy/cedar-wasm/nodejs") as Cedar);
}

export const checkParseEntities: Cedar["checkParseEntities"] = (call) => cedar().checkParseEntities(call);
export const isAuthorized: Cedar["isAuthorized"] = (call) => cedar().isAuthorized(call);
export const policySetTextToParts: Cedar["policySetTextToParts"] = (text) => cedar().policySetTextToParts(text);
export const policyToJson: Cedar["policyToJson"] = (policy) => cedar().policyToJson(policy);
export const preparsePolicySet: Cedar["preparsePolicySet"] = (id, policySet) => cedar().preparsePolicySet(id, policySet);
export const preparseSchema: Cedar["preparseSchema"] = (name, schema) => cedar().preparseSchema(name, schema);
export const schemaToJson: Cedar["schemaToJson"] = (schema) => cedar().schemaToJson(schema);
export const statefulIsAuthorized: Cedar["statefulIsAuthorized"] = (call) => cedar().statefulIsAuthorized(call);
export const validate: Cedar["validate"] = (call) => cedar().validate(call);
export type {
  AuthorizationAnswer,
  CedarValueJson,
  DetailedError,
  EntityJson,
  EntityUidJson,
  SchemaJson,
  StatefulAuthorizationCall,
  TypeAndId,
} from "@cedar-policy/cedar-wasm/nodejs";
