/**
 * A pruner process SIGKILLed in the middle of a prune (docs/retention.md, "Crash safety"). Real
 * processes, SQLite and PostgreSQL. Every invocation of the world has ended and its journal is
 * archived; a child pruner (fixtures/retention-child.ts, batches of 3) kills itself inside a batch's
 * transaction, right after its batch delete returned and before the commit: in the first batch,
 * and in the batch that reaches the eighth invocation (the third, or later where a scope's share of
 * a window ended a batch early).
 *
 * Invariants after the kill: every invocation is whole or entirely gone (no steps, attempts or
 * idempotency record without their invocation, none of them missing from a present one); exactly
 * the committed batches' invocations are gone; reads work; the journal verifies. After a restart
 * (a prune in this process) everything old enough is gone and the journal still verifies.
 */
import { afterAll, describe, expect, it } from "vitest";
import { runRetention } from "../../src/core/retention.js";
import { readCommitted } from "../../src/core/store.js";
import { sealJournalNow, verifyJournalIn } from "../../src/index.js";
import { reapChildren, spawnChild } from "./fixtures/children.js";
import { STORE_KINDS } from "./fixtures/hosting.js";
import { SCOPES, requestFor } from "./fixtures/scenario.js";
import { makeWorld, type World } from "./fixtures/world.js";

afterAll(async () => expect(await reapChildren()).toBe(0));

const CHILD = new URL("./fixtures/retention-child.ts", import.meta.url).pathname;
const N = 12;
const BATCH = 3;

/** Per invocation: whether its row, steps, attempts and idempotency record are present. */
async function shapes(world: World, ids: readonly string[]): Promise<Map<string, boolean[]>> {
  const out = new Map<string, boolean[]>();
  for (const [i, id] of ids.entries()) {
    const scope = SCOPES[i % SCOPES.length]!;
    out.set(
      id,
      await readCommitted(world.store, async (tx) => {
        const inv = await tx.getInvocation(scope, id);
        const attempts = await tx.listAttempts(scope, { invocationId: id });
        const idem = attempts[0]?.idempotencyKey !== undefined && attempts[0].action !== undefined ? await tx.getIdempotency(scope, attempts[0].action, attempts[0].idempotencyKey) : null;
        return [inv !== null, (await tx.getSteps(scope, id)).length > 0, attempts.length > 0, idem !== null || (inv !== null && (await tx.getIdempotency(scope, inv.action, inv.idempotencyKey)) !== null)];
      }),
    );
  }
  return out;
}

async function journalsVerify(world: World): Promise<void> {
  await sealJournalNow(world.store);
  for (const scope of SCOPES) {
    const v = await verifyJournalIn(world.store, world.keyring, scope);
    expect(v.problems, `${scope.spaceId}`).toEqual([]);
    expect(v.ok).toBe(true);
  }
}

for (const kind of STORE_KINDS) {
  describe(`pruning survives a SIGKILL (${kind})`, () => {
    for (const killAt of [1, 2 * BATCH + 2]) {
      it(`killed at invocation delete ${killAt}: whole invocations or none, the journal verifies, a restart finishes`, { timeout: 90_000 }, async () => {
        const world = await makeWorld(kind);
        try {
          const ids = await world.submit(Array.from({ length: N }, (_, n) => requestFor(n, "idem2")));
          await world.rescue({ deadlineMs: 30_000 });
          expect(await world.settled()).toBe(true);
          await sealJournalNow(world.store);
          for (const scope of SCOPES) {
            const head = await readCommitted(world.store, (tx) => tx.journalHead(scope));
            await world.store.transact((tx) => tx.setJournalArchivedThrough(scope, head!.seq));
          }
          const before = await world.store.transact((tx) => Promise.all(SCOPES.map((s) => tx.readJournal(s))));

          const child = spawnChild(`prune-${killAt}`, { ...world.childEnv(`prune-${killAt}`), WRIT_PRUNE_KILL_AT: String(killAt), WRIT_PRUNE_BATCH: String(BATCH) }, CHILD);
          const exit = await child.exited;
          expect(exit.signal, child.stderr()).toBe("SIGKILL");
          const dying = child.lines.find((l) => (l as { type?: string }).type === "dying") as { deleted: number; batches: number; committed: number } | undefined;
          // Killed inside the batch delete that reached invocation `killAt`, before it committed.
          expect(dying?.deleted).toBeGreaterThanOrEqual(killAt);
          expect(dying!.deleted - dying!.committed).toBeGreaterThan(0);

          const after = await shapes(world, ids);
          for (const [id, s] of after) expect(s.every((x) => x === s[0]), `invocation ${id} is half-deleted: ${JSON.stringify(s)}`).toBe(true);
          const gone = [...after.values()].filter((s) => !s[0]).length;
          expect(gone).toBe(dying!.committed);
          expect(await world.store.transact((tx) => Promise.all(SCOPES.map((s) => tx.readJournal(s))))).toEqual(before);
          for (const scope of SCOPES) await world.host.list(scope);
          await journalsVerify(world);

          // The restart: a prune in this process goes on where the dead one stopped.
          const report = await runRetention(world.store, { invocationsMs: 1, replayWindowMs: 1, completionsMs: 1, deliveriesMs: 1, batchSize: BATCH, pauseMs: 0, everyMs: 60_000, enabled: true }, { now: Date.now() + 60_000 });
          expect(report.pruned.invocations).toBeGreaterThanOrEqual(N - gone);
          expect([...(await shapes(world, ids)).values()].every((s) => s.every((x) => !x))).toBe(true);
          await journalsVerify(world);
        } finally {
          await world.close();
        }
      });
    }
  });
}
