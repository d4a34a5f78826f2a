/**
 * The workerd side of the vector run (docs/portable-core.md, "The workerd vector run"): one fetch
 * runs tests/workerd/vectors.ts with the web ports and cedar-wasm's web build, instantiated from
 * the `.wasm` module workerd loads from its config, and answers the report as JSON.
 */
// workerd resolves this import to the `wasm` module of its config (a compiled WebAssembly.Module).
import cedarModule from "./cedar.wasm";
import { cedarPolicy, initCedarWasm, webCryptoPort } from "../../src/web/index.js";
import { runVectors } from "./vectors.js";

export default {
  async fetch(): Promise<Response> {
    try {
      const crypto = webCryptoPort();
      initCedarWasm(cedarModule, { crypto });
      const report = await runVectors({ name: "workerd", crypto, cedarPolicy });
      return new Response(JSON.stringify({ ok: true, report, nodeGlobals: { process: typeof (globalThis as { process?: unknown }).process, Buffer: typeof (globalThis as { Buffer?: unknown }).Buffer } }), { headers: { "content-type": "application/json" } });
    } catch (e) {
      const err = e as Error;
      return new Response(JSON.stringify({ ok: false, error: `${err?.name}: ${err?.message}`, stack: err?.stack }), { status: 500, headers: { "content-type": "application/json" } });
    }
  },
};
