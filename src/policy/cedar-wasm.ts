/**
 * The slice of `@cedar-policy/cedar-wasm` the engine calls, in one place.
 *
 * Entry point: the package's `"."` export (`esm/`) imports the `.wasm` file as an ES module, which
 * Node 20 cannot load without `--experimental-wasm-modules`. The `"./nodejs"` export is a CommonJS
 * build that reads the `.wasm` with `fs` once at import and instantiates it synchronously; Node's
 * ESM loader exposes its named exports. A workerd/browser build would import `"./web"` here instead.
 *
 * `preparsePolicySet` / `preparseSchema` keep the parsed set and schema in the wasm instance's
 * thread-local cache under an id; `statefulIsAuthorized` evaluates against them without re-parsing.
 * The cache has no eviction: one entry per distinct policy set (keyed by its policyRef) per thread.
 */
export {
  checkParseEntities,
  isAuthorized,
  policySetTextToParts,
  policyToJson,
  preparsePolicySet,
  preparseSchema,
  schemaToJson,
  statefulIsAuthorized,
  validate,
} from "@cedar-policy/cedar-wasm/nodejs";
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
