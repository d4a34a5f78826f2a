/**
 * Failover through a multi-host URL, on private PostgreSQL instances (tests/helpers/pg-instance.ts):
 *
 * 1. A primary and a hot standby (`pg_basebackup -R`, streaming, synchronous commit to the standby).
 *    A store on `postgres://…@primary,standby/writ?target_session_attrs=read-write` writes
 *    continuously; the primary is SIGKILLed and the standby promoted (`pg_ctl promote`).
 *    Invariants: the same store (no restart) writes again within a bound; every write it
 *    acknowledged before the failover is on the new primary; the wake-up listener reconnects to
 *    the new primary (a NOTIFY there reaches its subscriber).
 * 2. Two primaries, the first turned read-only under the store's pooled connections (as a failover
 *    back leaves a connection on what is now a standby). Invariants: the write on such a
 *    connection fails with SQLSTATE 25006, the connection is discarded, and the store's writes
 *    land on the other host without a restart, after at most one failure per pooled connection.
 *
 * Times are printed (detection, promotion, first write after it), never asserted but for a
 * liveness bound.
 */
import { afterAll, describe, expect, it } from "vitest";
import { isWritError } from "../../src/core/errors.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { WAKE_CHANNEL } from "../../src/stores/postgres/postgres-migrations.js";
import { invocation, newScope } from "../../src/stores/conformance/fixtures.js";
import { instanceSql, postgresBinaries, setAndReload, startPgInstance, type PgInstance } from "../helpers/pg-instance.js";

const bins = postgresBinaries();
// Never skipped silently: where no binaries exist the reason is printed (and CI fails).
if (bins.dir === null) console.warn(`[pg-failover] skipped: ${bins.reason}`);
const suite = bins.dir === null && process.env.CI !== "true" ? describe.skip : describe;
const log = (l: string): void => console.log(`[pg-failover] ${l}`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How long the store may take to write again once the standby is promoted: a liveness bound, not a speed measure. */
const WRITE_AGAIN_BOUND_MS = 60_000;

const instances: PgInstance[] = [];
const stores: PostgresStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close().catch(() => undefined);
  for (const i of instances.reverse()) await i.close();
}, 60_000);

const sql = instanceSql;

async function eventually(what: string, ms: number, cond: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

suite("failover through a multi-host URL", () => {
  it("primary SIGKILLed, standby promoted: the same store writes again, nothing acknowledged is lost, LISTEN follows", async () => {
    const primary = await startPgInstance();
    instances.push(primary);
    await primary.createDatabase("writ");
    const standby = await startPgInstance({ standbyOf: primary });
    instances.push(standby);
    expect(await standby.inRecovery()).toBe(true);
    // Synchronous commit to the standby: a commit is acknowledged once the standby has it.
    await setAndReload(primary, "synchronous_standby_names", "*", "*");
    await eventually("the standby to be synchronous", 30_000, async () => (await sql<{ s: string }>(primary, "SELECT sync_state AS s FROM pg_stat_replication")).some((r) => r.s === "sync"));

    const url = `postgres://postgres@${primary.host}:${primary.port},${standby.host}:${standby.port}/writ?target_session_attrs=read-write`;
    const store = postgresStore({ url }, { max: 4, connectionTimeoutMs: 3_000, listenReconnectMs: 200 });
    stores.push(store);
    const scope = newScope();
    let woken = 0;
    const unsubscribe = store.onWake(() => (woken += 1));
    await store.listening();

    const acked: string[] = [];
    const failures: string[] = [];
    let stop = false;
    let lastAck = 0;
    const writer = (async () => {
      while (!stop) {
        const inv = invocation(scope);
        try {
          await store.transact((tx) => tx.insertInvocation(scope, inv));
          acked.push(inv.invocationId);
          lastAck = Date.now();
        } catch (e) {
          failures.push(isWritError(e) ? e.code : String(e));
          await sleep(50);
        }
        await sleep(20);
      }
    })();
    await eventually("writes before the failover", 10_000, async () => acked.length >= 20);

    const ackedBefore = acked.length;
    const killedAt = Date.now();
    await primary.kill();
    const goneMs = Date.now() - killedAt;
    await eventually("the store to notice", 10_000, async () => failures.length > 0);
    const detectedMs = Date.now() - killedAt;
    await standby.promote();
    const promotedMs = Date.now() - killedAt;
    await eventually("a write on the new primary", WRITE_AGAIN_BOUND_MS, async () => lastAck > killedAt + promotedMs);
    const writingMs = lastAck - killedAt;
    const ackedAfter = acked.length - ackedBefore;
    await eventually("more writes after the failover", 10_000, async () => acked.length >= ackedBefore + ackedAfter + 5);
    stop = true;
    await writer;
    log(`SIGKILL → postmaster and backends gone ${goneMs} ms; → first failed write ${detectedMs} ms; kill → promoted ${promotedMs} ms; kill → first write on the new primary ${writingMs} ms (${writingMs - promotedMs} ms after promotion); ${failures.length} writes failed meanwhile (${[...new Set(failures)].join(", ")})`);

    // Nothing acknowledged is lost: every acknowledged write is on the new primary, as the same store and a direct connection read it.
    expect(await standby.inRecovery()).toBe(false);
    const stored = new Set((await store.transact((tx) => tx.listInvocations(scope))).map((i) => i.invocationId));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    const direct = new Set((await sql<{ id: string }>(standby, "SELECT invocation_id AS id FROM writ_invocations", "writ")).map((r) => r.id));
    expect(acked.filter((id) => !direct.has(id))).toEqual([]);

    // The wake-up listener found the new primary: a NOTIFY there reaches the subscriber.
    await store.listening();
    const before = woken;
    await eventually("a wake-up from the new primary", 30_000, async () => {
      await sql(standby, `NOTIFY ${WAKE_CHANNEL}`, "writ");
      await sleep(100);
      return woken > before;
    });
    unsubscribe();
  }, 180_000);

  it("a pooled connection on a server turned read-only (25006) is discarded; writes move to the other host", async () => {
    const [a, b] = await Promise.all([startPgInstance(), startPgInstance()]);
    instances.push(a, b);
    for (const i of [a, b]) await i.createDatabase("writ");
    // The second host's schema, as its own migrations would have made it.
    const direct = postgresStore({ url: b.url("writ") });
    await direct.migrate();
    await direct.close();

    const max = 3;
    const store = postgresStore({ url: `postgres://postgres@${a.host}:${a.port},${b.host}:${b.port}/writ?target_session_attrs=read-write` }, { max, connectionTimeoutMs: 3_000 });
    stores.push(store);
    const scope = newScope();
    // Fill the pool with connections to the first host.
    await Promise.all(Array.from({ length: max }, () => store.transact((tx) => tx.insertInvocation(scope, invocation(scope)))));
    expect((await sql<{ n: number }>(a, "SELECT count(*)::int AS n FROM writ_invocations", "writ"))[0]?.n).toBe(max);

    // Waits for the reload to take: the pooled sessions must see it before their next write.
    await setAndReload(a, "default_transaction_read_only", "on", "on");
    const states: unknown[] = [];
    let landed: string | undefined;
    for (let i = 0; i <= max + 1 && landed === undefined; i++) {
      const inv = invocation(scope);
      try {
        await store.transact((tx) => tx.insertInvocation(scope, inv));
        landed = inv.invocationId;
      } catch (e) {
        states.push(isWritError(e) ? (e.details as { sqlState?: unknown } | undefined)?.sqlState : String(e));
      }
    }
    log(`after the first host turned read-only: ${states.length} failed writes (${states.join(", ")}), then one landed`);
    expect(states.every((s) => s === "25006")).toBe(true);
    expect(states.length).toBeLessThanOrEqual(max);
    expect(landed).toBeDefined();
    const onB = (await sql<{ id: string }>(b, "SELECT invocation_id AS id FROM writ_invocations", "writ")).map((r) => r.id);
    expect(onB).toContain(landed);
  }, 120_000);
});
