/** A `.wasm` import as workerd (and bundlers targeting it) resolve it: a compiled module. */
declare module "*.wasm" {
  const module: import("@cedar-policy/cedar-wasm/web").SyncInitInput;
  export default module;
}
