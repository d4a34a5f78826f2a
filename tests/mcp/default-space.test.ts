/**
 * The one default-space rule (src/runtime/default-space.ts), as MCP clients meet it
 * (`resolveSpace`, used by `writ mcp` and `/mcp`; the CLI asks `defaultSpace` without a key).
 *
 * Invariant checked: the space is the named one, else the key's only space, else the tenant's
 * only space (the one its unrevoked API keys name), else the config's demo space; with none of
 * these, a clear error; a named space the key does not cover is refused.
 */
import { describe, expect, it } from "vitest";
import type { ApiKeyRecord } from "../../src/core/types.js";
import { resolveSpace } from "../../src/mcp/principal.js";
import { defaultSpace } from "../../src/runtime/default-space.js";
import { memoryStore } from "../../src/stores/memory/index.js";

const key = (keyId: string, tenantId: string, spaces: string[], extra: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({ keyId, tenantId, spaces, roles: ["submit"], hash: "x", name: keyId, createdAt: 0, ...extra });

async function storeWith(...keys: ApiKeyRecord[]) {
  const store = memoryStore();
  await store.migrate();
  await store.transact(async (tx) => {
    for (const k of keys) await tx.putApiKey(k);
  });
  return store;
}

describe("the default space", () => {
  it("demo keys cover all spaces: the config's demo space", async () => {
    const all = key("k1", "demo", ["*"]);
    const store = await storeWith(all, key("k2", "demo", ["*"]));
    expect(await resolveSpace(store, all, undefined, "default")).toBe("default");
  });

  it("the key's only space comes before the tenant's and the demo's", async () => {
    const one = key("k1", "acme", ["prod"]);
    const store = await storeWith(one, key("k2", "acme", ["staging"]));
    expect(await resolveSpace(store, one, undefined, "default")).toBe("prod");
  });

  it("a key for all spaces in a tenant whose keys name one space: that space (a revoked key's do not count)", async () => {
    const all = key("k1", "acme", ["*"]);
    const store = await storeWith(all, key("k2", "acme", ["prod"]), key("k3", "acme", ["old"], { revokedAt: 1 }), key("k4", "globex", ["other"]));
    expect(await resolveSpace(store, all, undefined, "default")).toBe("prod");
  });

  it("several spaces and no demo: an error that says how to name one; a named space must be covered", async () => {
    const all = key("k1", "acme", ["*"]);
    const two = key("k2", "acme", ["prod", "staging"]);
    const store = await storeWith(all, two);
    await expect(resolveSpace(store, all, undefined, undefined)).rejects.toThrow(/name one .*writ-space.*--space/);
    expect(await resolveSpace(store, two, "staging", "default")).toBe("staging");
    await expect(resolveSpace(store, two, "dev", "default")).rejects.toMatchObject({ code: "FORBIDDEN" });
  });

  it("the CLI (no key) gets the same rule and says where the space came from", async () => {
    expect(await defaultSpace({ named: { spaceId: "x", from: "--space" }, tenantSpaces: async () => ["prod"], demoSpace: "default" })).toEqual({ spaceId: "x", from: "--space" });
    expect(await defaultSpace({ tenantSpaces: async () => ["prod", "*"], demoSpace: "default" })).toMatchObject({ spaceId: "prod" });
    expect(await defaultSpace({ tenantSpaces: async () => [], demoSpace: "default" })).toMatchObject({ spaceId: "default", from: "the config's demo space" });
    expect(await defaultSpace({ tenantSpaces: async () => ["a", "b"] })).toBeNull();
  });
});
