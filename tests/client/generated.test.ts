/**
 * src/client/openapi.ts is current: regenerating it in memory from the document the server serves
 * (scripts/client-types.ts, openapi-typescript) gives the committed text byte for byte. When a route
 * or schema changes, this fails until `npm run client:types` is run.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CLIENT_TYPES_FILE, generateClientTypes } from "../../scripts/client-types.js";

describe("generated client types", () => {
  it("match the served OpenAPI document (npm run client:types regenerates them)", { timeout: 60_000 }, async () => {
    const committed = readFileSync(CLIENT_TYPES_FILE, "utf8");
    const fresh = await generateClientTypes();
    // The file is the real thing: it has the operations the client calls.
    expect(fresh).toContain("submitInvocation: {");
    expect(fresh).toContain("listActions: {");
    expect(committed === fresh, "src/client/openapi.ts is behind the OpenAPI document: run `npm run client:types`").toBe(true);
  });
});
