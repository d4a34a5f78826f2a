/**
 * A revoked API key stops working at once in every server on one PostgreSQL database, not within
 * the cache bound (docs/security.md, "API key verification cache"). Invariant: with two server
 * processes (two runtimes, each with its own pool, listener and key cache) and a cache bound of a
 * minute, a key that both have verified, revoked through one of them, is refused by the other long
 * before the bound (the revocation's NOTIFY makes it forget the key); a key that was not revoked
 * keeps working there. That the other server answers from its cache is checked first: a key whose
 * row is deleted by hand in SQL (no notification) is still accepted there.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineConfig } from "../../src/config/define-config.js";
import { createApiKey, revokeApiKey } from "../../src/runtime/api-keys.js";
import type { PostgresStore } from "../../src/stores/postgres/postgres-store.js";
import { freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";
import { actions, call, connectors, policy, serveConfig, type Rig } from "./fixture.js";

const server = await pgServerOrNull();
const path = "/v1/spaces/prod/invocations";

describe.skipIf(server === null)("API key revocation across servers on PostgreSQL", () => {
  let db: FreshDatabase;
  const rigs: Rig[] = [];
  beforeAll(async () => {
    db = await freshDatabase();
    // A minute: without the notification, the other server would accept the key that long.
    const config = defineConfig({ actions, connectors, policy, store: { kind: "postgres", url: db.url }, server: { apiKeyCacheMs: 60_000 } });
    for (let i = 0; i < 2; i++) rigs.push(await serveConfig(config, async () => ({})));
  });
  afterAll(async () => {
    for (const r of rigs) await r.close();
    await db?.drop();
  });

  it("a key revoked through one server is refused by the other at once; another key still works there", async () => {
    const [a, b] = rigs as [Rig, Rig];
    const { crypto, random, clock } = a.runtime.host.context.o;
    const keys: Record<string, string> = {};
    for (const name of ["revoked", "kept", "probe"]) {
      const { key, record } = await createApiKey(a.runtime.store, crypto, random, { tenantId: "acme", roles: ["submit"], name }, clock.now());
      keys[name] = record.keyId;
      a.keys[name] = b.keys[name] = key;
    }
    // Both servers verify (and cache) both keys; B listens for key changes from then on. LISTEN
    // taking effect makes B's cache forget every key (notifications before it are lost), so B
    // verifies both again once it listens: they are cached when the revocation comes, and only
    // its NOTIFY can make B refuse the revoked one within the minute.
    for (const r of [a, b]) for (const k of ["revoked", "kept"]) expect((await call(r, "GET", path, { key: k })).status).toBe(200);
    await (b.runtime.store as PostgresStore).listening();
    for (const k of ["revoked", "kept", "probe"]) expect((await call(b, "GET", path, { key: k })).status).toBe(200);
    // B answers from its cache: the probe key's row deleted by hand (SQL sends no notification)
    // is still accepted there. Without this, a B that read the store on every request would pass
    // the check below whatever the revocation's NOTIFY did.
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      expect((await sql.query("DELETE FROM writ_api_keys WHERE key_id = $1", [keys.probe])).rowCount).toBe(1);
    } finally {
      await sql.end();
    }
    expect((await call(b, "GET", path, { key: "probe" })).status, "the probe key, deleted behind B's cache").toBe(200);

    await revokeApiKey(a.runtime.store, keys.revoked!, "acme", clock.now());
    expect((await call(a, "GET", path, { key: "revoked" })).status).toBe(401);
    // B is told by the revocation's NOTIFY: it refuses the key well within the minute it would
    // otherwise have kept it for (the wait is a ceiling for a loaded machine, not a speed claim).
    const deadline = Date.now() + 20_000;
    let status = 200;
    while (status === 200 && Date.now() < deadline) {
      status = (await call(b, "GET", path, { key: "revoked" })).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 25));
    }
    expect(status).toBe(401);
    expect((await call(b, "GET", path, { key: "kept" })).status).toBe(200);
  });
});
