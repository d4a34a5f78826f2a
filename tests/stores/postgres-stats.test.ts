/**
 * The statistics keeper's schedule (src/stores/postgres/postgres-stats.ts), without a server:
 * a failing check is retried at the next interval (a hint never stops), checks never overlap, and
 * stop() waits for a running check and ends the schedule. What it analyzes on a real server is in
 * postgres-plans.test.ts.
 */
import { expect, it } from "vitest";
import { statsKeeper } from "../../src/stores/postgres/postgres-stats.js";

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
