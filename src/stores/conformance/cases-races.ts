/**
 * Races: two writers that read the same row and both write it (docs/stores.md, "Conditional
 * writes"). Each writer is a whole transition as the host runs it: read, decide, write (a
 * conditional write: the rev it read, or the lease fence). A writer that loses (STALE or
 * LEASE_LOST) runs its whole transition once more, as the host does, and then applies to the new
 * state or refuses it.
 *
 * Invariant of every case: the final state and what each writer reported equal those of one of
 * the two serial orders (A then B, or B then A). A lost update (the second write landing on a
 * row the first one changed after the second writer read it) produces an outcome no serial order
 * produces, so it fails the case.
 *
 * Interleavings: on every store, both reads then the writes in each order (A's write first, then
 * B's write first), each step its own transaction (the reads' revisions are what the writes carry).
 * Where the store's transactions run concurrently (`env.concurrent`, PostgreSQL), also rounds of
 * two transactions on two store instances (two pools), each reading, meeting at a barrier, then
 * writing, so both reads happen before either write.
 */
import assert from "node:assert/strict";
import { isWritError } from "../../core/errors.js";
import type { Store, StoreTx } from "../../core/store.js";
import type { Approval, Invocation, Json, ReconciliationRecord, Scope } from "../../core/types.js";
import { withStore } from "./assertions.js";
import type { ConformanceEnv, MakeStore, StoreConformanceCase } from "./case.js";
import { T0, approval, fenceOf, invocation, newScope, reconciliation, uid } from "./fixtures.js";

/** One writer: `read` in one transaction, `write` with what it read (in the same or a later one). */
interface Writer<C> {
  name: string;
  read(tx: StoreTx, c: C): Promise<unknown>;
  /** What the writer reports (applied, or refused and why). Throws STALE / LEASE_LOST when it lost. */
  write(tx: StoreTx, c: C, seen: unknown): Promise<string>;
}

interface RaceSpec<C> {
  name: string;
  setup(store: Store, scope: Scope): Promise<C>;
  a: Writer<C>;
  b: Writer<C>;
  /** The final state that matters, as JSON. */
  state(tx: StoreTx, c: C): Promise<Json>;
}

interface Outcome {
  a: string;
  b: string;
  state: Json;
}

const lost = (e: unknown): boolean => isWritError(e, "STALE") || isWritError(e, "LEASE_LOST");

/** Runs `write`; if it lost the race, the whole transition once more (read and write in one transaction). */
async function settle<C>(store: Store, w: Writer<C>, c: C, attempt: () => Promise<string>): Promise<string> {
  try {
    return await attempt();
  } catch (e) {
    if (!lost(e)) throw e;
  }
  return store.transact(async (tx) => w.write(tx, c, await w.read(tx, c)));
}

async function whole<C>(store: Store, w: Writer<C>, c: C): Promise<string> {
  return settle(store, w, c, () => store.transact(async (tx) => w.write(tx, c, await w.read(tx, c))));
}

async function finalState<C>(store: Store, spec: RaceSpec<C>, c: C): Promise<Json> {
  return store.transact((tx) => spec.state(tx, c));
}

async function serialOutcomes<C>(store: Store, spec: RaceSpec<C>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const order of ["ab", "ba"] as const) {
    const c = await spec.setup(store, newScope());
    const first = order === "ab" ? spec.a : spec.b;
    const second = order === "ab" ? spec.b : spec.a;
    const r1 = await whole(store, first, c);
    const r2 = await whole(store, second, c);
    out.push(order === "ab" ? { a: r1, b: r2, state: await finalState(store, spec, c) } : { a: r2, b: r1, state: await finalState(store, spec, c) });
  }
  return out;
}

function assertSerial(got: Outcome, serial: Outcome[], what: string): void {
  const ok = serial.some((s) => JSON.stringify(s) === JSON.stringify(got));
  assert.ok(ok, `${what}: outcome ${JSON.stringify(got)} is not one a serial order produces (${serial.map((s) => JSON.stringify(s)).join(" or ")})`);
}

/** Both reads, then the writes in the given order, each step its own transaction. */
async function interleaved<C>(store: Store, spec: RaceSpec<C>, firstWriter: "a" | "b"): Promise<Outcome> {
  const c = await spec.setup(store, newScope());
  const seenA = await store.transact((tx) => spec.a.read(tx, c));
  const seenB = await store.transact((tx) => spec.b.read(tx, c));
  const run = (w: Writer<C>, seen: unknown): Promise<string> => settle(store, w, c, () => store.transact((tx) => w.write(tx, c, seen)));
  let ra: string;
  let rb: string;
  if (firstWriter === "a") {
    ra = await run(spec.a, seenA);
    rb = await run(spec.b, seenB);
  } else {
    rb = await run(spec.b, seenB);
    ra = await run(spec.a, seenA);
  }
  return { a: ra, b: rb, state: await finalState(store, spec, c) };
}

/** Two concurrent transactions on two stores: read, barrier, write. */
async function concurrent<C>(s1: Store, s2: Store, spec: RaceSpec<C>): Promise<Outcome> {
  const c = await spec.setup(s1, newScope());
  let arrived = 0;
  let release: () => void = () => undefined;
  const barrier = new Promise<void>((resolve) => (release = resolve));
  const meet = async (): Promise<void> => {
    arrived += 1;
    if (arrived === 2) release();
    await barrier;
  };
  const side = (store: Store, w: Writer<C>): Promise<string> =>
    settle(store, w, c, () =>
      store.transact(async (tx) => {
        let seen: unknown;
        try {
          seen = await w.read(tx, c);
        } finally {
          await meet();
        }
        return w.write(tx, c, seen);
      }),
    );
  const [ra, rb] = await Promise.all([side(s1, spec.a), side(s2, spec.b)]);
  return { a: ra, b: rb, state: await finalState(s1, spec, c) };
}

const ROUNDS = 4;

function raceCase<C>(spec: RaceSpec<C>): StoreConformanceCase {
  return {
    name: `races: ${spec.name} ends as a serial order would`,
    async run(makeStore: MakeStore, env: ConformanceEnv = {}) {
      await withStore(makeStore, async (store) => {
        const serial = await serialOutcomes(store, spec);
        assertSerial(await interleaved(store, spec, "a"), serial, `${spec.name}, ${spec.a.name} writes first`);
        assertSerial(await interleaved(store, spec, "b"), serial, `${spec.name}, ${spec.b.name} writes first`);
        if (env.concurrent === true) {
          await withStore(makeStore, async (other) => {
            for (let i = 0; i < ROUNDS; i++) assertSerial(await concurrent(store, other, spec), serial, `${spec.name}, concurrent round ${i + 1}`);
          });
        }
      });
    },
  };
}

// ---- writers ---------------------------------------------------------------------------------

/** The invocation as read, or null. */
function readInv(tx: StoreTx, c: { scope: Scope; inv: Invocation }): Promise<Invocation | null> {
  return tx.getInvocation(c.scope, c.inv.invocationId);
}

/** An administrative move `from` → `to` (cancel, sweep, completion, resolve), conditional on the rev read. */
function adminMove<C extends { scope: Scope; inv: Invocation }>(name: string, from: Invocation["status"], to: Invocation["status"], patch: Partial<Invocation> = {}): Writer<C> {
  return {
    name,
    read: readInv,
    async write(tx, c, seen) {
      const cur = seen as Invocation | null;
      if (!cur || cur.status !== from || cur.overdueAt !== undefined) return `refused: ${cur?.status ?? "missing"}`;
      await tx.updateInvocation(c.scope, { ...cur, ...patch, status: to, updatedAt: cur.updatedAt + 1 });
      return to;
    },
  };
}

/** A worker's claim; reports whether it got this case's invocation. */
function claimer<C extends { scope: Scope; inv: Invocation; now: number }>(name: string): Writer<C> {
  return {
    name,
    read: async () => null,
    async write(tx, c) {
      const got = await tx.claimInvocations({ owner: uid("worker"), tokens: [uid("tok"), uid("tok")], now: c.now, leaseMs: 60_000, limit: 2 });
      return got.some((i) => i.invocationId === c.inv.invocationId) ? "claimed" : "not claimed";
    },
  };
}

/** The lease holder settles the invocation (fenced). */
function settler<C extends { scope: Scope; inv: Invocation }>(name: string): Writer<C> {
  return {
    name,
    read: readInv,
    async write(tx, c, seen) {
      const cur = seen as Invocation | null;
      const fence = fenceOf(c.inv);
      if (!cur || cur.status !== "running" || cur.leaseToken !== fence.token) return "refused: lease lost";
      await tx.updateInvocation(c.scope, { ...cur, status: "succeeded", result: { by: name }, updatedAt: cur.updatedAt + 1 }, fence);
      return "succeeded";
    },
  };
}

function invState(tx: StoreTx, c: { scope: Scope; inv: Invocation }): Promise<Json> {
  return tx.getInvocation(c.scope, c.inv.invocationId).then((i) => ({ status: i?.status ?? null, result: i?.result ?? null, overdue: i?.overdueAt !== undefined }));
}

async function seedInvocation(store: Store, scope: Scope, over: Partial<Invocation>): Promise<{ scope: Scope; inv: Invocation; now: number }> {
  // runAt 1: before anything other cases leave runnable, so a claim with a small limit finds it.
  const inv = invocation(scope, { runAt: 1, createdAt: 1, ...over });
  await store.transact((tx) => tx.insertInvocation(scope, inv));
  return { scope, inv, now: T0 };
}

const running = (): Partial<Invocation> => ({ status: "running", leaseOwner: uid("worker"), leaseToken: uid("tok"), leaseExpiresAt: T0 + 60_000, attemptCount: 1 });

// ---- approvals -------------------------------------------------------------------------------

interface ApprovalCtx {
  scope: Scope;
  ap: Approval;
}

function readAp(tx: StoreTx, c: ApprovalCtx): Promise<Approval | null> {
  return tx.getApproval(c.scope, c.ap.approvalId);
}

function voter(name: string): Writer<ApprovalCtx> {
  return {
    name,
    read: readAp,
    async write(tx, c, seen) {
      const cur = seen as Approval | null;
      if (!cur || cur.status !== "pending") return `refused: ${cur?.status ?? "missing"}`;
      const votes = [...cur.votes, { approver: { type: "user" as const, id: name }, verdict: "approve" as const, at: T0 }];
      await tx.putApproval(c.scope, { ...cur, votes, status: votes.length >= cur.quorum ? "approved" : "pending", updatedAt: T0 + votes.length });
      return votes.length >= cur.quorum ? "approved" : "voted";
    },
  };
}

const revoker: Writer<ApprovalCtx> = {
  name: "revoke",
  read: readAp,
  async write(tx, c, seen) {
    const cur = seen as Approval | null;
    if (!cur || (cur.status !== "pending" && cur.status !== "approved")) return `refused: ${cur?.status ?? "missing"}`;
    await tx.putApproval(c.scope, { ...cur, status: "revoked", updatedAt: T0 + 100 });
    return "revoked";
  },
};

async function seedApproval(store: Store, scope: Scope, quorum: number): Promise<ApprovalCtx> {
  const ap = approval(scope, { quorum });
  await store.transact((tx) => tx.putApproval(scope, ap));
  return { scope, ap };
}

function apState(tx: StoreTx, c: ApprovalCtx): Promise<Json> {
  return readAp(tx, c).then((a) => ({ status: a?.status ?? null, votes: (a?.votes ?? []).map((v) => v.approver.id).sort() }));
}

// ---- reconciliations -------------------------------------------------------------------------

interface RecCtx {
  scope: Scope;
  inv: Invocation;
  rec: ReconciliationRecord;
}

/** Settles an open reconciliation and its invocation in one transaction (an operator's resolve, a late completion). */
function resolver(name: string, outcome: "succeeded" | "failed"): Writer<RecCtx> {
  return {
    name,
    read: (tx, c) => tx.getReconciliation(c.scope, c.rec.reconciliationId),
    async write(tx, c, seen) {
      const rec = seen as ReconciliationRecord | null;
      if (!rec || rec.status !== "open") return `refused: ${rec?.status ?? "missing"}`;
      // As the host does: the invocation row first, then the reconciliation, conditional on the rev read.
      const inv = await tx.getInvocation(c.scope, c.inv.invocationId, { forUpdate: true });
      await tx.updateReconciliation(c.scope, { ...rec, status: "resolved", resolution: { outcome, note: name, by: { type: "user", id: name }, at: T0 }, updatedAt: T0 + 1 });
      await tx.updateInvocation(c.scope, { ...inv!, status: outcome, updatedAt: T0 + 1 });
      return `resolved ${outcome}`;
    },
  };
}

async function seedReconciliation(store: Store, scope: Scope): Promise<RecCtx> {
  const inv = invocation(scope, { status: "reconciliation_required", overdueAt: T0 });
  const rec = reconciliation(scope, { invocationId: inv.invocationId });
  await store.transact(async (tx) => {
    await tx.insertInvocation(scope, inv);
    await tx.insertReconciliation(scope, rec);
  });
  return { scope, inv, rec };
}

function recState(tx: StoreTx, c: RecCtx): Promise<Json> {
  return Promise.all([tx.getReconciliation(c.scope, c.rec.reconciliationId), tx.getInvocation(c.scope, c.inv.invocationId)]).then(([r, i]) => ({
    rec: r?.status ?? null,
    by: r?.resolution?.by.id ?? null,
    inv: i?.status ?? null,
  }));
}

type InvCtx = { scope: Scope; inv: Invocation; now: number };

export const raceCases: StoreConformanceCase[] = [
  raceCase<InvCtx>({
    name: "cancel vs claim of a queued invocation",
    setup: (store, scope) => seedInvocation(store, scope, {}),
    a: adminMove("cancel", "queued", "cancelled"),
    b: claimer("claim"),
    state: invState,
  }),
  raceCase<InvCtx>({
    name: "two claims of one queued invocation",
    setup: (store, scope) => seedInvocation(store, scope, {}),
    a: claimer("claim-1"),
    b: claimer("claim-2"),
    state: invState,
  }),
  raceCase<InvCtx>({
    name: "settle by the lease holder vs reclaim after the lease expired",
    setup: async (store, scope) => ({ ...(await seedInvocation(store, scope, { ...running(), leaseExpiresAt: T0 - 1 })), now: T0 }),
    a: settler("settle"),
    b: claimer("reclaim"),
    state: invState,
  }),
  raceCase<InvCtx>({
    name: "completion vs overdue sweep of a parked invocation",
    setup: (store, scope) => seedInvocation(store, scope, { status: "parked", deadlineAt: T0 - 1 }),
    a: adminMove("completion", "parked", "succeeded", { result: { by: "completion" } }),
    b: adminMove("sweep", "parked", "reconciliation_required", { overdueAt: T0 }),
    state: invState,
  }),
  raceCase<InvCtx>({
    name: "cancel vs approval follow-up of an invocation awaiting approval",
    setup: (store, scope) => seedInvocation(store, scope, { status: "awaiting_approval" }),
    a: adminMove("cancel", "awaiting_approval", "cancelled"),
    // Queued far in the future: not claimable by the claim races of later cases on shared storage.
    b: adminMove("approved", "awaiting_approval", "queued", { runAt: T0 + 1_000_000_000 }),
    state: invState,
  }),
  raceCase<RecCtx>({
    name: "operator resolve vs late completion of one reconciliation",
    setup: seedReconciliation,
    a: resolver("operator", "failed"),
    b: resolver("late-completion", "succeeded"),
    state: recState,
  }),
  raceCase<ApprovalCtx>({
    name: "vote vs revoke of one approval",
    setup: (store, scope) => seedApproval(store, scope, 1),
    a: voter("alice"),
    b: revoker,
    state: apState,
  }),
  raceCase<ApprovalCtx>({
    name: "two votes on one approval (quorum 2)",
    setup: (store, scope) => seedApproval(store, scope, 2),
    a: voter("alice"),
    b: voter("bob"),
    state: apState,
  }),
];
