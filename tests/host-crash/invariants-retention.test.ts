/**
 * The end-of-run invariants under retention (fixtures/invariants.ts, I8) catch what they claim to:
 * on one SQLite world, two invocations run to their end, then one is deleted from the store the way
 * the pruner deletes it (`deleteEndedInvocations`), with and without its journal archived. Deleted while
 * its journal entries lie above the archive watermark, it is lost (I8); with the watermark past
 * them, it was pruned with evidence and every invariant holds; a run that does not prune reports
 * any missing invocation as missing (I2).
 */
import { afterEach, expect, it } from "vitest";
import { sealJournalNow } from "../../src/index.js";
import { SCOPES, requestFor } from "./fixtures/scenario.js";
import { makeWorld, type World } from "./fixtures/world.js";

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

it("an invocation deleted before its journal is archived is lost (I8); after, it is pruned with evidence", async () => {
  world = await makeWorld("sqlite");
  const w = world;
  const ids = await w.submit([requestFor(0, "idem1"), requestFor(1, "once1")]);
  await w.rescue();
  expect(await w.settled()).toBe(true);
  const before = await w.check(ids, { pruning: true });
  expect(before.violations).toEqual([]);
  expect(before.pruned).toBe(0);

  // The pruner's delete, but nothing archived: the evidence of a decision is gone.
  const scope = SCOPES[0]!;
  await w.store.transact((tx) => tx.deleteEndedInvocations(scope, [ids[0]!]));
  const lost = await w.check(ids, { pruning: true });
  expect(lost.violations.filter((v) => v.startsWith("[I8 lost]"))).toEqual([expect.stringMatching(new RegExp(`^\\[I8 lost\\] invocation ${ids[0]} is gone from the store but its journal entry \\d+ lies above the archive watermark 0$`))]);
  // Its effect in the ledger now belongs to nothing the host knows.
  expect(lost.violations.some((v) => v.startsWith("[I6 divergence]") && v.includes(`for invocation ${ids[0]}, which the store does not have`))).toBe(true);
  expect(lost.pruned).toBe(0);

  // Without pruning in the run, a missing invocation is missing.
  const missing = await w.check(ids);
  expect(missing.violations.some((v) => v.startsWith(`[I2 stuck] acknowledged invocation ${ids[0]} is missing`))).toBe(true);

  // Archived through the head (the watermark past every entry naming it): pruned with evidence.
  await sealJournalNow(w.store, scope);
  const head = await w.store.transact((tx) => tx.journalHead(scope));
  await w.store.transact((tx) => tx.setJournalArchivedThrough(scope, head!.seq));
  const pruned = await w.check(ids, { pruning: true });
  expect(pruned.violations).toEqual([]);
  expect(pruned.pruned).toBe(1);
  expect(pruned.invocations).toBe(1);
  expect(pruned.archivedEntries).toBe(head!.seq);
});
