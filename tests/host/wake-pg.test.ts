/**
 * A lone invocation on PostgreSQL is claimed on its wake-up, not on a poll (docs/host.md, Workers,
 * leases, fencing): the store LISTENs for the notification every admission sends, so an
 * invocation admitted by another process (another store object, its own connections) wakes a
 * sleeping worker at once. The worker's host runs on a manual clock the test never advances and
 * its poll interval is an hour: nothing but the wake-up can bring it back.
 *
 * Invariants: each of three lone invocations, admitted by the other process one after the other
 * while the worker sleeps, succeeds; the worker claimed each with one claim of its own loop.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Store } from "../../src/core/store.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { freshDatabase, type FreshDatabase } from "../helpers/pg.js";
import { untilRead } from "../helpers/wait.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

let db: FreshDatabase;
let workerStore: Store;
let submitterStore: Store;

beforeAll(async () => {
  db = await freshDatabase();
  workerStore = postgresStore({ url: db.url }, { applicationName: "writ-test-wake-worker" });
  await workerStore.migrate();
  submitterStore = postgresStore({ url: db.url }, { applicationName: "writ-test-wake-submitter" });
});

afterAll(async () => {
  await submitterStore?.close();
  await workerStore?.close();
  await db?.drop();
});

it("an invocation admitted by another process wakes a sleeping worker at once (no poll on the path)", async () => {
  const w = makeHostBench(workerStore);
  await grantAuthority(w);
  const s = makeHostBench(submitterStore);
  const worker = w.host.worker({ pollMs: 3_600_000, concurrency: 4 });
  worker.start();
  try {
    for (let n = 0; n < 3; n++) {
      // The worker is asleep: what it had is done and nothing else is queued.
      await untilRead(async () => worker.inFlight() === 0, "the worker is idle");
      const { invocation } = await s.host.submit(w.request({ params: { n } }));
      await untilRead(async () => (await workerStore.transact((tx) => tx.getInvocation(w.scope, invocation.invocationId)))?.status === "succeeded", `invocation ${n} succeeded after its wake-up`, 20_000);
    }
    expect(w.events.filter((e) => e.type === "invocation.claimed").length).toBe(3);
    expect(w.events.filter((e) => e.type === "invocation.succeeded").length).toBe(3);
  } finally {
    await worker.stop();
  }
}, 90_000);
