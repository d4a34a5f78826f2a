/**
 * Circuit breakers held in the store (docs/host.md, "Circuit breakers"): one row per (scope,
 * connector, operation), written only conditionally (insert, or the rev read), so that of two
 * workers that saw the cooldown end, exactly one claims the probe slot.
 */
import assert from "node:assert/strict";
import { checkBreaker, gateBreaker, recordBreaker, type BreakerKey, type BreakerPolicy } from "../../core/breaker.js";
import { isWritError } from "../../core/errors.js";
import type { Store } from "../../core/store.js";
import type { BreakerRecord, Scope } from "../../core/types.js";
import { assertRecord, rejectsWithCode, withStore } from "./assertions.js";
import type { ConformanceEnv, MakeStore, StoreConformanceCase } from "./case.js";
import { T0, newScope, uid } from "./fixtures.js";

const POLICY: BreakerPolicy = { failureThreshold: 2, cooldownMs: 1000, probeTimeoutMs: 5000 };

function keyIn(scope: Scope): BreakerKey {
  return { ...scope, connector: uid("conn"), operation: "op" };
}

/** A breaker that opened at T0 and whose cooldown ended at T0 + cooldown. */
function openBreaker(key: BreakerKey, over: Partial<BreakerRecord> = {}): BreakerRecord {
  return { ...key, state: "open", failures: 2, openedAt: T0, openUntil: T0 + POLICY.cooldownMs, updatedAt: T0, ...over };
}

const AFTER = T0 + POLICY.cooldownMs + 1;

async function seed(store: Store, rec: BreakerRecord): Promise<BreakerRecord> {
  const copy = { ...rec };
  await store.transact((tx) => tx.putBreaker(copy, copy));
  return copy;
}

async function read(store: Store, key: BreakerKey): Promise<BreakerRecord | null> {
  return store.transact((tx) => tx.getBreaker(key, key.connector, key.operation));
}

/** Two workers decide on the same read, then write in turn: the second's write must be refused. */
async function interleavedProbe(store: Store, first: "a" | "b"): Promise<void> {
  const key = keyIn(newScope());
  await seed(store, openBreaker(key));
  const seenA = await read(store, key);
  const seenB = await read(store, key);
  const ga = gateBreaker(seenA, "holder-a", AFTER, POLICY);
  const gb = gateBreaker(seenB, "holder-b", AFTER, POLICY);
  assert.ok(ga.kind === "probe" && gb.kind === "probe", "both workers see the cooldown over and the slot free");
  const [w1, w2] = first === "a" ? [ga.write, gb.write] : [gb.write, ga.write];
  await store.transact((tx) => tx.putBreaker(key, w1));
  await rejectsWithCode(
    store.transact((tx) => tx.putBreaker(key, w2)),
    "STALE",
    "the second probe claim on the same read",
  );
  const winner = first === "a" ? "holder-a" : "holder-b";
  const loser = first === "a" ? "holder-b" : "holder-a";
  const after = await read(store, key);
  assert.equal(after?.state, "half_open");
  assert.equal(after?.probeHolder, winner, "the first writer holds the probe slot");
  // The loser decides again on what the winner wrote: refused while the probe is live.
  const again = await checkBreaker(store, key, loser, AFTER, POLICY);
  assert.equal(again.gate.kind, "refuse", "the loser is refused while the probe is live");
}

export const breakerCases: StoreConformanceCase[] = [
  {
    name: "breakers: insert, read, conditional update (rev), stale and missing refused",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const key = keyIn(newScope());
        assert.equal(await read(store, key), null, "no breaker before the first write");
        const rec: BreakerRecord = { ...key, state: "closed", failures: 1, openedAt: 0, openUntil: 0, updatedAt: T0 };
        await store.transact((tx) => tx.putBreaker(key, rec));
        assert.equal(rec.rev, 1, "an insert stamps rev 1");
        assertRecord(await read(store, key), { ...rec, rev: 1 }, "inserted breaker");
        await rejectsWithCode(
          store.transact((tx) => tx.putBreaker(key, { ...rec, rev: undefined })),
          "CONFLICT",
          "a second insert",
        );
        const next: BreakerRecord = { ...rec, state: "open", failures: 2, openedAt: T0 + 1, openUntil: T0 + 1001, updatedAt: T0 + 1 };
        await store.transact((tx) => tx.putBreaker(key, next));
        assert.equal(next.rev, 2, "an update moves the rev on and stamps it");
        assertRecord(await read(store, key), next, "updated breaker");
        await rejectsWithCode(
          store.transact((tx) => tx.putBreaker(key, { ...next, failures: 9, rev: 1 })),
          "STALE",
          "an update carrying an old rev",
        );
        assertRecord(await read(store, key), next, "a stale write changed nothing");
        const missing = keyIn(key);
        await rejectsWithCode(
          store.transact((tx) => tx.putBreaker(missing, { ...next, ...missing, rev: 1 })),
          "NOT_FOUND",
          "an update of a breaker that does not exist",
        );
      });
    },
  },
  {
    name: "breakers: lists are per scope, ordered by connector then operation; other scopes see nothing",
    async run(makeStore) {
      await withStore(makeStore, async (store) => {
        const scope = newScope();
        const other = newScope();
        const recs = [
          { ...scope, connector: "b-conn", operation: "x" },
          { ...scope, connector: "a-conn", operation: "z" },
          { ...scope, connector: "a-conn", operation: "y" },
        ].map((k): BreakerRecord => ({ ...k, state: "closed", failures: 1, openedAt: 0, openUntil: 0, updatedAt: T0 }));
        for (const r of recs) await store.transact((tx) => tx.putBreaker(scope, r));
        const listed = await store.transact((tx) => tx.listBreakers(scope));
        assert.deepEqual(
          listed.map((b) => `${b.connector}.${b.operation}`),
          ["a-conn.y", "a-conn.z", "b-conn.x"],
        );
        assert.equal((await store.transact((tx) => tx.listBreakers(scope, { limit: 2 }))).length, 2);
        assert.deepEqual(await store.transact((tx) => tx.listBreakers(other)), [], "another scope lists nothing");
        assert.equal(await store.transact((tx) => tx.getBreaker(other, "a-conn", "y")), null, "another scope reads nothing");
        await rejectsWithCode(
          store.transact((tx) => tx.putBreaker(other, recs[0]!)),
          "SCOPE_VIOLATION",
          "a breaker written in another scope",
        );
        await rejectsWithCode(
          store.transact((tx) => tx.putBreaker(scope, { ...recs[0]!, connector: "" })),
          "INVALID_ARGUMENT",
          "an empty connector",
        );
      });
    },
  },
  {
    name: "breakers: two workers after the cooldown, each on its own read: exactly one claims the probe",
    async run(makeStore: MakeStore, env: ConformanceEnv = {}) {
      await withStore(makeStore, async (store) => {
        await interleavedProbe(store, "a");
        await interleavedProbe(store, "b");
        if (env.concurrent !== true) return;
        await withStore(makeStore, async (other) => {
          for (let round = 0; round < 4; round++) {
            // Two transactions on two pools read the open breaker, meet, then both try to claim.
            const key = keyIn(newScope());
            await seed(store, openBreaker(key));
            let arrived = 0;
            let release: () => void = () => undefined;
            const barrier = new Promise<void>((resolve) => (release = resolve));
            const side = (s: Store, holder: string): Promise<string> =>
              s
                .transact(async (tx) => {
                  let seen: BreakerRecord | null;
                  try {
                    seen = await tx.getBreaker(key, key.connector, key.operation);
                  } finally {
                    arrived += 1;
                    if (arrived === 2) release();
                    await barrier;
                  }
                  const g = gateBreaker(seen, holder, AFTER, POLICY);
                  if (g.kind !== "probe") return g.kind;
                  await tx.putBreaker(key, g.write);
                  return "probe";
                })
                .catch((e: unknown) => {
                  if (isWritError(e, "STALE")) return "stale";
                  throw e;
                });
            const answers = await Promise.all([side(store, "holder-a"), side(other, "holder-b")]);
            assert.deepEqual([...answers].sort(), ["probe", "stale"], `round ${round + 1}: exactly one concurrent claim wins`);
          }
        });
      });
    },
  },
  {
    name: "breakers: many checks at once after the cooldown let exactly one probe through",
    async run(makeStore: MakeStore, env: ConformanceEnv = {}) {
      await withStore(makeStore, async (store) => {
        await withStore(makeStore, async (other) => {
          const key = keyIn(newScope());
          await seed(store, openBreaker(key));
          // Memory stores from `makeStore` do not share storage: only concurrent stores use the second.
          const second = env.concurrent === true ? other : store;
          const stores = [store, second];
          const gates = await Promise.all(Array.from({ length: 6 }, (_, i) => checkBreaker(stores[i % stores.length]!, key, `holder-${i}`, AFTER, POLICY)));
          const probes = gates.filter((g) => g.gate.kind === "probe");
          assert.equal(probes.length, 1, "exactly one check claims the probe slot");
          assert.ok(gates.every((g) => g.gate.kind !== "pass"), "nobody passes a half-open breaker without the slot");
          // A probe whose worker died: the slot expires after probeTimeoutMs and one other call probes.
          const late = AFTER + POLICY.probeTimeoutMs;
          const again = await Promise.all([checkBreaker(store, key, "holder-x", late, POLICY), checkBreaker(second, key, "holder-y", late, POLICY)]);
          assert.equal(again.filter((g) => g.gate.kind === "probe").length, 1, "an expired probe slot is claimed once");
        });
      });
    },
  },
  {
    name: "breakers: failures recorded at once are all counted and open the breaker at the threshold",
    async run(makeStore: MakeStore, env: ConformanceEnv = {}) {
      await withStore(makeStore, async (store) => {
        await withStore(makeStore, async (other) => {
          const key = keyIn(newScope());
          const second = env.concurrent === true ? other : store;
          const stores = [store, second];
          const policy = { ...POLICY, failureThreshold: 3 };
          await Promise.all([0, 1].map((i) => recordBreaker(stores[i % stores.length]!, key, "failure", `h${i}`, undefined, T0, policy)));
          const two = await read(store, key);
          assert.equal(two?.failures, 2, "two concurrent failures, two counted (no lost update)");
          assert.equal(two?.state, "closed");
          await recordBreaker(second, key, "failure", "h2", undefined, T0 + 5, policy);
          const open = await read(store, key);
          assert.equal(open?.state, "open", "the third consecutive failure opens it");
          assert.equal(open?.openUntil, T0 + 5 + policy.cooldownMs);
          await recordBreaker(store, key, "success", "h3", open, T0 + 6, policy);
          assert.equal((await read(second, key))?.state, "closed", "a success closes it, seen from another store instance");
        });
      });
    },
  },
];
