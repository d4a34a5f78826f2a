/**
 * Model-based test of the memory store's claim index (heaps with lazy deletion and undo): random
 * sequences of inserts, status changes, claims, heartbeats and nextRunAt, some inside transactions
 * that roll back, are checked against a naive model that scans and sorts everything.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoreTx } from "../../src/core/store.js";
import type { Invocation, InvocationStatus, Scope } from "../../src/core/types.js";
import { invocation } from "../../src/stores/conformance/fixtures.js";
import { memoryStore } from "../../src/stores/memory/index.js";

interface Row {
  scope: number;
  status: InvocationStatus;
  runAt: number;
  createdAt: number;
  leaseOwner?: string;
  leaseToken?: string;
  leaseExpiresAt?: number;
  attemptCount: number;
}
type Model = Map<string, Row>;

const SCOPES: Scope[] = [0, 1, 2].map((i) => ({ tenantId: `model-t${i}`, spaceId: "s" }));
const OWNERS = ["w0", "w1", "w2"];

type Cmd =
  | { kind: "insert"; scope: number; status: "queued" | "running" | "succeeded"; runAt: number; createdAt: number; owner: number; expires: number; rollback: boolean }
  | { kind: "set"; pick: number; status: "queued" | "succeeded" | "parked"; runAt: number; rollback: boolean }
  | { kind: "claim"; now: number; limit: number; owner: number; leaseMs: number; rollback: boolean }
  | { kind: "heartbeat"; now: number; owner: number; leaseMs: number; rollback: boolean }
  | { kind: "next"; rollback: boolean };

const small = (max: number): fc.Arbitrary<number> => fc.integer({ min: 0, max });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  // Small time ranges and limits, so ties, expiries and partial claims are common.
  fc.record({ kind: fc.constant("insert" as const), scope: small(2), status: fc.constantFrom("queued" as const, "running" as const, "succeeded" as const), runAt: small(6), createdAt: small(3), owner: small(2), expires: small(8), rollback: fc.boolean() }),
  fc.record({ kind: fc.constant("set" as const), pick: small(1000), status: fc.constantFrom("queued" as const, "succeeded" as const, "parked" as const), runAt: small(6), rollback: fc.boolean() }),
  fc.record({ kind: fc.constant("claim" as const), now: small(8), limit: small(3), owner: small(2), leaseMs: fc.integer({ min: 1, max: 4 }), rollback: fc.boolean() }),
  fc.record({ kind: fc.constant("heartbeat" as const), now: small(8), owner: small(2), leaseMs: fc.integer({ min: 1, max: 4 }), rollback: fc.boolean() }),
  fc.record({ kind: fc.constant("next" as const), rollback: fc.boolean() }),
);

function sortKey(id: string, r: Row): [number, number, string] {
  return [r.runAt, r.createdAt, id];
}
function before(a: [number, number, string], b: [number, number, string]): number {
  return a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0);
}

function modelClaim(m: Model, c: Extract<Cmd, { kind: "claim" }>, tokens: string[]): string[] {
  const runnable = [...m].filter(([, r]) => (r.status === "queued" && r.runAt <= c.now) || (r.status === "running" && r.leaseExpiresAt !== undefined && r.leaseExpiresAt <= c.now));
  runnable.sort(([ia, a], [ib, b]) => before(sortKey(ia, a), sortKey(ib, b)));
  const taken = runnable.slice(0, c.limit);
  taken.forEach(([id, r], i) => m.set(id, { ...r, status: "running", leaseOwner: OWNERS[c.owner], leaseToken: tokens[i], leaseExpiresAt: c.now + c.leaseMs, attemptCount: r.attemptCount + 1 }));
  return taken.map(([id]) => id);
}

function modelHeartbeat(m: Model, c: Extract<Cmd, { kind: "heartbeat" }>): number {
  let n = 0;
  for (const [id, r] of m) {
    if (r.status === "running" && r.leaseOwner === OWNERS[c.owner] && r.leaseExpiresAt !== undefined && r.leaseExpiresAt > c.now) {
      m.set(id, { ...r, leaseExpiresAt: c.now + c.leaseMs });
      n += 1;
    }
  }
  return n;
}

function modelNext(m: Model): number | null {
  let min: number | null = null;
  for (const r of m.values()) if (r.status === "queued" && (min === null || r.runAt < min)) min = r.runAt;
  return min;
}

/** Applies `c` to the store inside `tx` and to the model; returns [store result, model result]. */
async function apply(tx: StoreTx, m: Model, c: Cmd, n: number): Promise<[unknown, unknown]> {
  switch (c.kind) {
    case "insert": {
      const id = `inv-${String(n).padStart(4, "0")}`;
      const running = c.status === "running";
      const row: Row = { scope: c.scope, status: c.status, runAt: c.runAt, createdAt: c.createdAt, attemptCount: running ? 1 : 0 };
      if (running) Object.assign(row, { leaseOwner: OWNERS[c.owner], leaseToken: `tok-${n}`, leaseExpiresAt: c.expires });
      const scope = SCOPES[c.scope]!;
      await tx.insertInvocation(scope, invocation(scope, { invocationId: id, ...fields(row) }));
      m.set(id, row);
      return [null, null];
    }
    case "set": {
      const ids = [...m.keys()];
      if (ids.length === 0) return [null, null];
      const id = ids[c.pick % ids.length]!;
      const row = m.get(id)!;
      const scope = SCOPES[row.scope]!;
      const stored = (await tx.getInvocation(scope, id))!;
      const next: Row = { scope: row.scope, status: c.status, runAt: c.runAt, createdAt: row.createdAt, attemptCount: row.attemptCount };
      await tx.updateInvocation(scope, { ...stored, leaseOwner: undefined, leaseToken: undefined, leaseExpiresAt: undefined, ...fields(next) });
      m.set(id, next);
      return [null, null];
    }
    case "claim": {
      const tokens = Array.from({ length: c.limit }, (_, i) => `claim-${n}-${i}`);
      const got = await tx.claimInvocations({ owner: OWNERS[c.owner]!, tokens, now: c.now, leaseMs: c.leaseMs, limit: c.limit });
      const expected = modelClaim(m, c, tokens);
      return [got.map((i) => [i.invocationId, i.leaseToken]), expected.map((id, i) => [id, tokens[i]])];
    }
    case "heartbeat":
      return [await tx.heartbeat(OWNERS[c.owner]!, c.now, c.leaseMs), modelHeartbeat(m, c)];
    case "next":
      return [await tx.nextRunAt(), modelNext(m)];
  }
}

function fields(r: Row): Partial<Invocation> {
  const out: Partial<Invocation> = { status: r.status, runAt: r.runAt, createdAt: r.createdAt, attemptCount: r.attemptCount };
  if (r.leaseOwner !== undefined) Object.assign(out, { leaseOwner: r.leaseOwner, leaseToken: r.leaseToken, leaseExpiresAt: r.leaseExpiresAt });
  return out;
}

describe("memory store claim index against a naive model", () => {
  it("claims, heartbeats and nextRunAt match the model, across rollbacks", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 20, maxLength: 80 }), async (cmds) => {
        const store = memoryStore();
        const model: Model = new Map();
        const abort = new Error("rollback");
        try {
          for (const [n, c] of cmds.entries()) {
            const scratch: Model = c.rollback ? new Map(model) : model;
            let results: [unknown, unknown] = [null, null];
            const run = store.transact(async (tx) => {
              results = await apply(tx, scratch, c, n);
              if (c.rollback) throw abort;
            });
            if (c.rollback) await expect(run).rejects.toBe(abort);
            else await run;
            expect(results[0], `${c.kind} #${n}`).toEqual(results[1]);
          }
          for (const [id, row] of model) {
            const stored = await store.transact((tx) => tx.getInvocation(SCOPES[row.scope]!, id));
            expect({ ...fields(row) }).toEqual({ status: stored?.status, runAt: stored?.runAt, createdAt: stored?.createdAt, attemptCount: stored?.attemptCount, ...(stored?.leaseOwner === undefined ? {} : { leaseOwner: stored.leaseOwner, leaseToken: stored.leaseToken, leaseExpiresAt: stored.leaseExpiresAt }) });
          }
        } finally {
          await store.close();
        }
      }),
      { numRuns: 300 },
    );
  });
});
