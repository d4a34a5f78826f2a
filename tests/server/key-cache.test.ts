/**
 * The API key verification cache (docs/security.md, "API key verification cache"). Invariants:
 * - a key revoked through this process is refused at once (its cached verification is forgotten);
 * - a key revoked by another process (another store handle on the same database, as the CLI is)
 *   is refused once `apiKeyCacheMs` has passed since it was last verified, and at once with 0;
 * - failures are never cached (a wrong secret for a cached key id is still 401);
 * - a delegation change through this process is seen at once;
 * - a verification whose store read began before a revocation is not remembered after it;
 * - on a store that notifies key changes, the cache follows them from before its first read.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createApiKey, revokeApiKey, verifyApiKey, verifyApiKeyCached } from "../../src/runtime/api-keys.js";
import { setKeyDelegation } from "../../src/runtime/principals.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { memoryStore } from "../../src/index.js";
import { nodeCryptoPort } from "../../src/node/crypto.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import { call, startRig, type Rig } from "./fixture.js";

const path = "/v1/spaces/prod/invocations";
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function tempKey(r: Rig, name: string): Promise<{ key: string; keyId: string }> {
  const { crypto, random } = r.runtime.host.context.o;
  const { key, record } = await createApiKey(r.runtime.store, crypto, random, { tenantId: "acme", roles: ["submit"], name }, Date.now());
  return { key, keyId: record.keyId };
}

/** Revokes through another store handle on the same file, as another process would: this process's cache is not told. */
async function revokeElsewhere(r: Rig, keyId: string): Promise<void> {
  const other = sqliteStore({ path: r.dbPath });
  try {
    await revokeApiKey(other, keyId, "acme", Date.now());
  } finally {
    await other.close();
  }
}

describe("API key cache over HTTP", () => {
  it("a key revoked through this process is refused at once, even with a long cache bound", async () => {
    rig = await startRig({ apiKeyCacheMs: 60_000 });
    const { key, keyId } = await tempKey(rig, "in-process");
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(200);
    await revokeApiKey(rig.runtime.store, keyId, "acme", Date.now());
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(401);
  });

  it("a key revoked by another process is refused within apiKeyCacheMs", async () => {
    const bound = 150;
    rig = await startRig({ apiKeyCacheMs: bound });
    const { key, keyId } = await tempKey(rig, "other-process");
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(200);
    await revokeElsewhere(rig, keyId);
    const revokedAt = performance.now();
    await sleep(bound + 50);
    expect(performance.now() - revokedAt).toBeGreaterThan(bound);
    const r = await call(rig, "GET", path, { key: `Bearer ${key}` });
    expect(r.status).toBe(401);
    expect(r.json.error.code).toBe("UNAUTHORIZED");
  });

  it("with apiKeyCacheMs 0 every request reads the store: another process's revocation is refused at once", async () => {
    rig = await startRig({ apiKeyCacheMs: 0 });
    const { key, keyId } = await tempKey(rig, "no-cache");
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(200);
    await revokeElsewhere(rig, keyId);
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(401);
  });

  it("a wrong secret for a key id that is cached is still 401 (only exact key texts hit)", async () => {
    rig = await startRig({ apiKeyCacheMs: 60_000 });
    const { key } = await tempKey(rig, "forged");
    expect((await call(rig, "GET", path, { key: `Bearer ${key}` })).status).toBe(200);
    const forged = key.slice(0, -4) + (key.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect((await call(rig, "GET", path, { key: `Bearer ${forged}` })).status).toBe(401);
  });

  it("an option out of range is refused with its name", async () => {
    rig = await startRig();
    const { createApp } = await import("../../src/server/app.js");
    for (const bad of [-1, 1.5, 60_001, "1000"]) expect(() => createApp(rig!.runtime, { apiKeyCacheMs: bad as number })).toThrow(/apiKeyCacheMs/);
  });
});

describe("verifyApiKeyCached", () => {
  const crypto = nodeCryptoPort();
  let seq = 0;
  const random = { bytes: (n: number) => new Uint8Array(n).map(() => (seq++ * 37 + 11) & 255) };

  it("answers from memory within maxAgeMs and reads the store again after it", async () => {
    const store = memoryStore();
    const { key, record } = await createApiKey(store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "clock" }, 0);
    let t = 1_000;
    const o = { maxAgeMs: 100, now: () => t };
    expect((await verifyApiKeyCached(store, crypto, key, o))?.keyId).toBe(record.keyId);
    // Revoked behind the cache's back (as another process would): still answered until the bound.
    await store.transact((tx) => tx.putApiKey({ ...record, revokedAt: 1 }));
    t = 1_099;
    expect((await verifyApiKeyCached(store, crypto, key, o))?.keyId).toBe(record.keyId);
    t = 1_100;
    expect(await verifyApiKeyCached(store, crypto, key, o)).toBeNull();
    expect(await verifyApiKey(store, crypto, key)).toBeNull();
  });

  it("never caches a failure: a key that did not verify is read again on the next call", async () => {
    const store = memoryStore();
    const { key, record } = await createApiKey(store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "fail" }, 0);
    const o = { maxAgeMs: 60_000, now: () => 5 };
    await store.transact((tx) => tx.putApiKey({ ...record, revokedAt: 1 }));
    expect(await verifyApiKeyCached(store, crypto, key, o)).toBeNull();
    // Live again (written behind the cache): the refusal was not remembered, so it verifies now.
    await store.transact((tx) => tx.putApiKey(record));
    expect((await verifyApiKeyCached(store, crypto, key, o))?.keyId).toBe(record.keyId);
    expect(await verifyApiKeyCached(store, crypto, "not a key", o)).toBeNull();
  });

  it("a delegation change through this process is seen at once", async () => {
    const store = memoryStore();
    const { key, record } = await createApiKey(store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "deleg" }, 0);
    const o = { maxAgeMs: 60_000, now: () => 5 };
    expect((await verifyApiKeyCached(store, crypto, key, o))?.actsFor).toBeUndefined();
    await setKeyDelegation(store, crypto, { tenantId: "acme", keyId: record.keyId, actsFor: [{ type: "agent", id: "helper" }], by: { type: "user", id: "root" } }, 10);
    expect((await verifyApiKeyCached(store, crypto, key, o))?.actsFor).toEqual([{ type: "agent", id: "helper" }]);
  });

  it("a verification whose read began before a revocation is not remembered after it", async () => {
    const store = memoryStore();
    const { key, record } = await createApiKey(store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "race" }, 0);
    // Reads that finish (the key read, not revoked) and then wait at a gate before answering.
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let reads = 0;
    const slow: Store = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "read")
          return async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
            const v = await target.transact(fn);
            reads++;
            await gate;
            return v;
          };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const o = { maxAgeMs: 60_000, now: () => 5 };
    const racing = verifyApiKeyCached(slow, crypto, key, o);
    while (reads === 0) await sleep(1);
    await revokeApiKey(slow, record.keyId, "acme", 1);
    open();
    // It read the key before the revocation committed, so it may answer it; it must not keep it.
    expect((await racing)?.keyId).toBe(record.keyId);
    expect(await verifyApiKeyCached(slow, crypto, key, o)).toBeNull();
  });

  it("follows key changes from before its first read: another process's revocation notified during that read is not missed", async () => {
    // A store that notifies key changes (as PostgreSQL does): the revocation by another process
    // commits while this process's first verification reads, and its notification arrives then.
    // Before, the cache subscribed only once it remembered that read: the notification reached no
    // one and the revoked key stayed cached for the whole bound.
    const store = memoryStore();
    const { key, record } = await createApiKey(store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "notified" }, 0);
    const subscribers: ((keyId: string | null) => void)[] = [];
    let reads = 0;
    const notifying: Store = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === "onApiKeyChange")
          return (cb: (keyId: string | null) => void) => {
            subscribers.push(cb);
            return () => undefined;
          };
        if (prop === "read")
          return async <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => {
            const v = await target.transact(fn);
            // The first read saw the key live; the other process's revocation lands now.
            if (reads++ === 0) for (const cb of subscribers) cb(record.keyId);
            return v;
          };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const o = { maxAgeMs: 60_000, now: () => 5 };
    expect((await verifyApiKeyCached(notifying, crypto, key, o))?.keyId).toBe(record.keyId);
    expect(subscribers, "subscribed to key changes once").toHaveLength(1);
    // The revocation itself, written behind this process's cache (its notification came above).
    await store.transact((tx) => tx.putApiKey({ ...record, revokedAt: 1 }));
    expect(await verifyApiKeyCached(notifying, crypto, key, o)).toBeNull();
    expect(reads).toBe(2);
  });
});
