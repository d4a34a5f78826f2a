/**
 * The portable core with the web ports: what runs on workerd, in a browser or on Deno with no Node
 * built-in and no native module (docs/portable-core.md). The core, the memory store, the web
 * CryptoPort, Clock and Random, and the Cedar engine on cedar-wasm's web build (`initCedarWasm`
 * first). tests/workerd bundles this entry and checks its dependency closure.
 */
export * from "../core/index.js";
export { memoryStore, type MemoryStore, type MemoryStoreOptions } from "../stores/memory/index.js";
export { webCryptoPort } from "./crypto.js";
export { webClock, webRandom } from "./clock.js";
export { initCedarWasm, cedarPolicy, policySetRef, prepareCedarPolicySet, type CedarPolicyEngine, type CedarPolicyOptions, type CedarEntity, type CedarSchemaInput } from "../policy/web.js";
