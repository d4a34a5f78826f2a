/**
 * Generates `src/client/openapi.ts`, the client's types, from the OpenAPI document the server
 * serves (`GET /openapi.json` of an app over an in-memory runtime), with openapi-typescript.
 * `npm run client:types` writes the file; tests/client/generated.test.ts regenerates it in memory
 * and fails when the committed file differs (the document changed, the types did not follow).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import { functionPolicy } from "../src/core/policy.js";
import { defineConfig } from "../src/config/define-config.js";
import { openRuntime } from "../src/runtime/runtime.js";
import { createApp } from "../src/server/app.js";

export const CLIENT_TYPES_FILE = fileURLToPath(new URL("../src/client/openapi.ts", import.meta.url));

const HEADER = `/**
 * The HTTP API's types, generated from the OpenAPI document the server serves (GET /openapi.json)
 * by openapi-typescript. Do not edit: run \`npm run client:types\` after changing a route or schema;
 * tests/client/generated.test.ts fails while this file is behind the document.
 */
`;

/** The served OpenAPI document: the routes and schemas do not depend on the config's actions. */
export async function servedDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "writ-client-types-"));
  const runtime = await openRuntime(defineConfig({ store: { kind: "memory" }, keys: { dir: join(dir, "keys") }, actions: [], connectors: [], policy: functionPolicy("none", () => "DENY") }), { cwd: dir });
  try {
    const res = await createApp(runtime, { mcp: false, console: { enabled: false } }).request("/openapi.json");
    return (await res.json()) as Record<string, unknown>;
  } finally {
    await runtime.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The text of `src/client/openapi.ts` for the current document. */
export async function generateClientTypes(): Promise<string> {
  const ast = await openapiTS(JSON.stringify(await servedDocument()), { exportType: false, alphabetize: false, immutable: false });
  return HEADER + astToString(ast);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(CLIENT_TYPES_FILE, await generateClientTypes());
  console.log(`wrote ${CLIENT_TYPES_FILE}`);
}
