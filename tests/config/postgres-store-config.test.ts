/**
 * The PostgreSQL store's statement deadline and TCP keepalive are set from writ.config.ts
 * (`store: { kind: "postgres", url, queryTimeoutMs, keepAliveMs }`; docs/deploying-postgres.md).
 * Invariants: a bad value is refused when the config loads, with an error naming the option and
 * its range; an unknown option of the postgres store is named too; `writ doctor` shows the values
 * set; and the deadline reaches the store a process opens from the config: a statement blocked
 * behind a lock fails `STORE_ERROR` after `queryTimeoutMs`, while the same store without the
 * option is still waiting well past it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineConfig, type WritConfig } from "../../src/config/define-config.js";
import { effectiveSettings, settingsLines } from "../../src/cli/settings.js";
import { storeFromConfig } from "../../src/runtime/store-from-config.js";
import type { Store } from "../../src/core/store.js";
import { admin, freshDatabase, pgServerOrNull, type FreshDatabase } from "../helpers/pg.js";

const policy = { evaluate: () => ({ result: "ALLOW" as const, reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] };
const config = (store: Record<string, unknown>): WritConfig => ({ actions: [], connectors: [], policy, store: { kind: "postgres", url: "postgres://writ@db.internal:5432/writ", ...store } });

function loadError(c: WritConfig): unknown {
  try {
    defineConfig(c);
  } catch (e) {
    return e;
  }
  return undefined;
}

describe("store.queryTimeoutMs and store.keepAliveMs in writ.config.ts", () => {
  it("accepts integers in range, 0 included", () => {
    expect(() => defineConfig(config({ queryTimeoutMs: 2_000, keepAliveMs: 5_000 }))).not.toThrow();
    expect(() => defineConfig(config({ queryTimeoutMs: 0, keepAliveMs: 0 }))).not.toThrow();
  });

  it("refuses a bad value or an unknown option, naming it", () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ queryTimeoutMs: -1 }, /defineConfig: store\.queryTimeoutMs must be an integer from 0 to 2147483647 \(ms; 0 waits forever\)/],
      [{ queryTimeoutMs: 1.5 }, /store\.queryTimeoutMs must be an integer/],
      [{ queryTimeoutMs: "2000" }, /store\.queryTimeoutMs must be an integer/],
      [{ queryTimeoutMs: 2_147_483_648 }, /store\.queryTimeoutMs must be an integer from 0 to 2147483647/],
      [{ keepAliveMs: -5 }, /store\.keepAliveMs must be an integer from 0 to 2147483647 \(ms; 0 turns keepalive off\)/],
      [{ keepAliveMs: Number.NaN }, /store\.keepAliveMs must be an integer/],
      [{ poolSize: 0 }, /store\.poolSize must be an integer from 1 to 10000/],
      [{ queryTimeoutMS: 2_000 }, /store has no option `queryTimeoutMS` for postgres \(it takes kind, url, poolSize, queryTimeoutMs, keepAliveMs\)/],
    ];
    for (const [store, message] of cases) expect(loadError(config(store)), JSON.stringify(store)).toMatchObject({ code: "INVALID_OPTION", message: expect.stringMatching(message) });
  });

  it("writ doctor shows the values the config sets", () => {
    const s = effectiveSettings(defineConfig(config({ queryTimeoutMs: 2_000, keepAliveMs: 5_000 })));
    expect(s.store).toMatchObject({ kind: "postgres", queryTimeoutMs: 2_000, keepAliveMs: 5_000 });
    expect(settingsLines(s).join("\n")).toMatch(/queryTimeoutMs +2000/);
  });
});

const server = await pgServerOrNull();

describe.skipIf(server === null)("store.queryTimeoutMs reaches the store a process opens from its config", () => {
  let db: FreshDatabase;
  const stores: Store[] = [];
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => undefined);
    await db?.drop();
  });

  const open = async (store: Record<string, unknown>): Promise<Store> => {
    const s = await storeFromConfig(defineConfig({ ...config(store), store: { kind: "postgres", url: db.url, ...store } }), "/tmp");
    stores.push(s);
    // A first transaction: the pool has a connection, migrations are done.
    await s.transact((tx) => tx.listInvocations({ tenantId: "t", spaceId: "s" }));
    return s;
  };

  it("a statement blocked behind a lock fails STORE_ERROR after the configured deadline; without it, it still waits", async () => {
    const withDeadline = await open({ queryTimeoutMs: 400, keepAliveMs: 1_000 });
    const without = await open({});
    await admin(db.url, async (c) => {
      await c.query("BEGIN");
      await c.query("LOCK TABLE writ_invocations IN ACCESS EXCLUSIVE MODE");
      try {
        const t0 = Date.now();
        const failed = await withDeadline.transact((tx) => tx.listInvocations({ tenantId: "t", spaceId: "s" })).then(
          () => null,
          (e: unknown) => e,
        );
        const tookMs = Date.now() - t0;
        expect(failed).toMatchObject({ code: "STORE_ERROR" });
        expect(tookMs).toBeGreaterThanOrEqual(350);
        expect(tookMs).toBeLessThan(5_000);
        // The store with the default (30 s) is still waiting for the same lock well past 400 ms.
        let settled = false;
        const waiting = without.transact((tx) => tx.listInvocations({ tenantId: "t", spaceId: "s" })).finally(() => (settled = true));
        await new Promise((r) => setTimeout(r, 1_500));
        expect(settled).toBe(false);
        await c.query("ROLLBACK");
        await expect(waiting).resolves.toEqual([]);
      } finally {
        await c.query("ROLLBACK").catch(() => undefined);
      }
    });
    // After the deadline the store answers again (a fresh connection).
    await expect(withDeadline.transact((tx) => tx.listInvocations({ tenantId: "t", spaceId: "s" }))).resolves.toEqual([]);
  }, 30_000);
});
