/**
 * `admitClaimed` on PostgreSQL (docs/stores.md, "Batches"; docs/host.md, "Hand-off to an idle
 * worker"): an admission that also claims the invocation it created, with its prepare read, in one
 * statement and one commit.
 *
 * Invariants:
 * - a new invocation comes back claimed as `claim` would claim it (running, the owner and token,
 *   the lease from `now`, attempt 1), inserted so (rev 1: one row version), with the authority and breakers a prepare read
 *   answers; its submitted and claimed entries are both written; no wake-up notification is sent;
 * - the same key again answers the existing invocation (`created: false`) and claims nothing;
 * - an invocation not yet due is admitted and left queued, unclaimed, and its wake-up is sent;
 * - bad input (no lease token, breakers not a list) is refused with INVALID_ARGUMENT and writes
 *   nothing;
 * - several admissions with claims issued at once travel in one `writ_batch`, each answering
 *   alone (a duplicate key among them answers the existing invocation), and send no wake-up; a
 *   plain admission issued beside one of them still sends its wake-up.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readCommitted } from "../../src/core/store.js";
import { transitionsOf } from "../../src/core/transitions.js";
import { postgresStore, type PostgresStore } from "../../src/stores/postgres/index.js";
import { entry } from "../../src/stores/conformance/cases-transitions.js";
import { T0, authority, invocation, newScope } from "../../src/stores/conformance/fixtures.js";
import { countStatements, freshDatabase, type FreshDatabase, testPool, wakeListener, type WakeListener } from "../helpers/pg.js";

let db: FreshDatabase;
let store: PostgresStore;
let pool: pg.Pool;
let listener: WakeListener;
let statements: Map<string, number>;

beforeAll(async () => {
  db = await freshDatabase();
  pool = testPool({ connectionString: db.url, max: 4 });
  statements = countStatements(pool);
  store = postgresStore({ pool });
  await store.migrate();
  listener = await wakeListener(db.url);
});

afterAll(async () => {
  await listener?.end();
  await store?.close();
  await pool?.end();
  await db?.drop();
});

const claim = (token: string, now = T0) => ({ owner: "w-local", tokens: [token], now, leaseMs: 30_000, limit: 1 });
const BREAKERS = [{ connector: "c", operation: "a" }];

it("admits and claims a new invocation in one commit, without a wake-up; a replay claims nothing", async () => {
  const scope = newScope();
  const auth = authority(scope, { authorityRef: "auth-1" });
  await store.transact((tx) => tx.putAuthority(scope, auth));
  const inv = invocation(scope);
  await listener.settle();
  const notes = listener.count();
  const t = transitionsOf(store);
  const out = await t.admitClaimed!(scope, { invocation: inv, entries: [entry(scope, `invocation.submitted:${inv.invocationId}`)] }, claim("tok-1"), BREAKERS);
  expect(out.created).toBe(true);
  if (!out.created) throw new Error("unreachable");
  expect(out.claimed?.invocation).toMatchObject({ invocationId: inv.invocationId, status: "running", leaseOwner: "w-local", leaseToken: "tok-1", leaseExpiresAt: T0 + 30_000, attemptCount: 1, rev: 1 });
  expect(out.claimed?.prepared).toMatchObject({ steps: [], authority: { authorityRef: "auth-1" }, approval: null, breakers: [null], invocation: { status: "running", leaseOwner: "w-local", leaseToken: "tok-1" } });
  const stored = await readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId));
  expect(stored).toMatchObject({ status: "running", leaseOwner: "w-local", leaseToken: "tok-1", attemptCount: 1 });
  const unsealed = await readCommitted(store, (tx) => tx.listUnsealed(scope, { limit: 10 }));
  expect(unsealed.map((e) => e.id).sort()).toEqual([`invocation.claimed:${inv.invocationId}:tok-1`, `invocation.submitted:${inv.invocationId}`].sort());
  await listener.settle();
  expect(listener.count()).toBe(notes);

  const again = await t.admitClaimed!(scope, { invocation: { ...inv, invocationId: `${inv.invocationId}-2` }, entries: [] }, claim("tok-2"), BREAKERS);
  expect(again).toMatchObject({ created: false, existing: { invocationId: inv.invocationId, leaseToken: "tok-1", attemptCount: 1 } });
  expect(await readCommitted(store, (tx) => tx.getInvocation(scope, `${inv.invocationId}-2`))).toBeNull();
});

it("an invocation not yet due is admitted unclaimed, and its wake-up is sent", async () => {
  const scope = newScope();
  const inv = invocation(scope, { runAt: T0 + 60_000 });
  await listener.settle();
  const notes = listener.count();
  const out = await transitionsOf(store).admitClaimed!(scope, { invocation: inv, entries: [] }, claim("tok-3"), BREAKERS);
  expect(out).toEqual({ created: true });
  expect(await readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId))).toMatchObject({ status: "queued", attemptCount: 0 });
  await listener.settle();
  expect(listener.count()).toBeGreaterThan(notes);
});

it("bad input is refused by name and writes nothing", async () => {
  const scope = newScope();
  const inv = invocation(scope);
  const t = transitionsOf(store);
  await expect(t.admitClaimed!(scope, { invocation: inv, entries: [] }, { ...claim("x"), tokens: [] }, BREAKERS)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/token/) });
  await expect(t.admitClaimed!(scope, { invocation: inv, entries: [] }, claim("x"), "c/a" as never)).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/breakers/) });
  expect(await readCommitted(store, (tx) => tx.getInvocation(scope, inv.invocationId))).toBeNull();
});

it("admissions with claims issued at once share one writ_batch with a plain admission; each answers alone", async () => {
  const scope = newScope();
  const invs = Array.from({ length: 5 }, () => invocation(scope));
  const dup = { ...invocation(scope, { idempotencyKey: invs[0]!.idempotencyKey }) };
  const plain = invocation(scope);
  const t = transitionsOf(store);
  const batches = statements.get("writ_t_batch") ?? 0;
  const singles = statements.get("writ_t_admit_claimed") ?? 0;
  await listener.settle();
  const notes = listener.count();
  // The first goes alone (nothing in flight); the rest queue behind it and travel together.
  const claimedOnes = await Promise.all([
    ...invs.map((inv, i) => t.admitClaimed!(scope, { invocation: inv, entries: [] }, claim(`tok-b${i}`), BREAKERS)),
    t.admitClaimed!(scope, { invocation: dup, entries: [] }, claim("tok-dup"), BREAKERS),
  ]);
  expect((statements.get("writ_t_batch") ?? 0) - batches + (statements.get("writ_t_admit_claimed") ?? 0) - singles).toBeLessThanOrEqual(2);
  await listener.settle();
  expect(listener.count()).toBe(notes);
  // A plain admission in a batch beside one with a claim still wakes the workers.
  const [beside, plainOut] = await Promise.all([t.admitClaimed!(scope, { invocation: invocation(scope), entries: [] }, claim("tok-beside"), BREAKERS), t.admit(scope, { invocation: plain, entries: [] })]);
  expect(beside).toMatchObject({ created: true, claimed: { invocation: { leaseToken: "tok-beside" } } });
  await listener.settle();
  expect(listener.count()).toBeGreaterThan(notes);
  const all = [...claimedOnes, plainOut];
  all.slice(0, 5).forEach((o, i) => expect(o).toMatchObject({ created: true, claimed: { invocation: { invocationId: invs[i]!.invocationId, leaseToken: `tok-b${i}` } } }));
  expect(all[5]).toMatchObject({ created: false, existing: { invocationId: invs[0]!.invocationId } });
  expect(all[6]).toEqual({ created: true });
  expect(await readCommitted(store, (tx) => tx.getInvocation(scope, plain.invocationId))).toMatchObject({ status: "queued" });
});
