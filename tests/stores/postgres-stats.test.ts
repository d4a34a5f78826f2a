/**
 * The statistics keeper's schedule and the queue vacuumer (src/stores/postgres/postgres-stats.ts), without a server:
 * a failing check is retried at the next interval (a hint never stops), checks never overlap, and
 * stop() waits for a running check and ends the schedule. What it analyzes on a real server is in
 * postgres-plans.test.ts.
 */
import { expect, it } from "vitest";
import { queueVacuumer, statsKeeper } from "../../src/stores/postgres/postgres-stats.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

it("keeps checking after a failed check, never overlaps, and stops for good", async () => {
  let calls = 0;
  let running = 0;
  let overlapped = false;
  const keeper = statsKeeper(5, async () => {
    calls += 1;
    running += 1;
    if (running > 1) overlapped = true;
    await sleep(10);
    running -= 1;
    if (calls === 1) throw new Error("the server went away");
  });
  keeper.start();
  keeper.start(); // a second start adds no second schedule
  while (calls < 3) await sleep(5);
  await keeper.stop();
  const after = calls;
  await sleep(40);
  expect(calls).toBe(after);
  expect(running).toBe(0);
  expect(overlapped).toBe(false);
});

it("everyMs 0 never checks", async () => {
  let calls = 0;
  const keeper = statsKeeper(0, async () => void (calls += 1));
  keeper.start();
  await sleep(30);
  await keeper.stop();
  expect(calls).toBe(0);
});

it("the queue vacuumer runs after `rows` sealed entries, one at a time, and a failure only resets the count", async () => {
  // Invariant: one vacuum per `rows` entries sealed, never two at once (a count reached while one
  // runs waits for the next seals), a failed vacuum is ignored, rows 0 never vacuums, and stop()
  // waits for the running one.
  let runs = 0;
  let release!: () => void;
  const v = queueVacuumer(10, () => {
    runs += 1;
    return runs === 2 ? Promise.reject(new Error("the server went away")) : new Promise<void>((r) => (release = r));
  });
  v.sealed(9);
  expect(runs).toBe(0);
  v.sealed(1);
  expect(runs).toBe(1);
  v.sealed(25); // while the first runs: counted, not started
  expect(runs).toBe(1);
  release();
  await sleep(0);
  v.sealed(1); // the count stands at 26: the second starts (and fails)
  expect(runs).toBe(2);
  await sleep(0);
  v.sealed(10);
  expect(runs).toBe(3);
  const stopping = v.stop();
  release();
  await stopping;
  v.sealed(100);
  expect(runs).toBe(3);
  const off = queueVacuumer(0, () => Promise.resolve(void (runs += 100)));
  off.sealed(1_000_000);
  expect(runs).toBe(3);
});
