/**
 * A database that vanishes silently mid-statement (docs/deploying-postgres.md, "When the database
 * goes away"): a private PostgreSQL in a network namespace of its own, a PostgreSQL store in the
 * test process reaching it over a veth pair; while a statement is in flight, nft in the database's
 * namespace drops every packet both ways (nothing is refused, no RST: the peer just stops
 * answering, as in a partition or a dead machine).
 *
 * Invariants: the statement's transaction fails with STORE_ERROR once the store's statement
 * deadline (`queryTimeoutMs`) passes, not after TCP's many minutes; the time it took is measured
 * and printed; the store answers again once the network heals, without a restart (the dead
 * connection was discarded, not returned to the pool).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { newScope } from "../../src/stores/conformance/fixtures.js";
import { startPgInstance, type PgInstance } from "../helpers/pg-instance.js";
import { clusterUnavailable, createNetwork, sweepLeftovers, type Machine, type Network } from "./fixtures/netns.js";

const why = clusterUnavailable();
if (why !== null) console.warn(`[silent-vanish] skipped: ${why}`);
const suite = why === null ? describe : describe.skip;
const log = (l: string): void => console.log(`[silent-vanish] ${l}`);

const QUERY_TIMEOUT_MS = 2_000;

suite(`a database that vanishes mid-statement${why === null ? "" : ` (skipped: ${why})`}`, () => {
  let net: Network | undefined;
  let m: Machine;
  let inst: PgInstance | undefined;
  let store: PostgresStore | undefined;

  beforeAll(async () => {
    await sweepLeftovers();
    net = await createNetwork();
    m = await net.addMachine("db");
    inst = await startPgInstance({ netns: { name: m.ns, listen: m.ip } });
    await inst.createDatabase("writ");
    store = postgresStore({ url: inst.url("writ") }, { queryTimeoutMs: QUERY_TIMEOUT_MS, connectionTimeoutMs: 2_000, max: 2 });
    await store.migrate();
  }, 120_000);

  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await inst?.close().catch(() => undefined);
    await net?.close();
  }, 60_000);

  it("a statement sent to a peer gone silent fails within the statement deadline; without one it hangs; the store recovers after the heal", async () => {
    const s = store!;
    // The control: the same store without a statement deadline (queryTimeoutMs 0).
    const control = postgresStore({ url: inst!.url("writ") }, { queryTimeoutMs: 0, connectionTimeoutMs: 2_000, max: 1, autoMigrate: false });
    const scope = newScope();
    try {
      // Warm pools: the next statements go out on connections that were fine a moment ago.
      await s.transact((tx) => tx.listInvocations(scope));
      await control.transact((tx) => tx.listInvocations(scope));
      await net!.partition(m, { role: "bridge", ns: "", ip: net!.bridgeIp });
      const cutAt = Date.now();
      const settle = (p: Promise<unknown>): Promise<{ ok: boolean; ms: number; code?: string; message?: string }> =>
        p.then(
          () => ({ ok: true, ms: Date.now() - cutAt }),
          (e: unknown) => ({ ok: false, ms: Date.now() - cutAt, code: (e as { code?: string }).code, message: (e as Error).message }),
        );
      const withDeadline = settle(s.transact((tx) => tx.listInvocations(scope)));
      let controlDone = false;
      const withoutDeadline = settle(control.transact((tx) => tx.listInvocations(scope))).finally(() => (controlDone = true));
      const r = await withDeadline;
      log(`statement deadline ${QUERY_TIMEOUT_MS} ms: the transaction ${r.ok ? "succeeded" : `failed (${r.code}: ${r.message?.slice(0, 100)})`} ${r.ms} ms after the cut`);
      expect(r.ok).toBe(false);
      expect(r.code).toBe("STORE_ERROR");
      expect(r.ms).toBeGreaterThanOrEqual(QUERY_TIMEOUT_MS - 200);
      expect(r.ms, "one deadline, not a ROLLBACK waiting out a second").toBeLessThan(QUERY_TIMEOUT_MS + 1_500);
      await new Promise((res) => setTimeout(res, QUERY_TIMEOUT_MS + 3_000 - r.ms));
      log(`without a deadline: still waiting ${Date.now() - cutAt} ms after the cut: ${!controlDone}`);
      expect(controlDone, "without a statement deadline the statement waits on (TCP gives up after many minutes)").toBe(false);

      await net!.heal(m);
      const healedAt = Date.now();
      // The pool hands out a new connection (the dead one was discarded): the store answers again.
      for (;;) {
        try {
          await s.transact((tx) => tx.listInvocations(scope));
          break;
        } catch (e) {
          if (Date.now() - healedAt > 15_000) throw e;
        }
      }
      log(`the store answered again ${Date.now() - healedAt} ms after the heal`);
      expect(Date.now() - healedAt).toBeLessThan(15_000);
      await withoutDeadline;
    } finally {
      await net!.heal(m);
      await control.close().catch(() => undefined);
    }
  }, 60_000);
});
