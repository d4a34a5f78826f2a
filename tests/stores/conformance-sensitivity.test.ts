/**
 * The conformance suite must be able to fail (a test that cannot fail is a defect): each mutant
 * below breaks one Store rule on top of the memory store, and the cases guarding that rule must
 * report it, while the other cases stay green. Also checks that a case leaking a store fails.
 */
import { describe, expect, it } from "vitest";
import { isWritError } from "../../src/core/errors.js";
import type { Store, StoreTx } from "../../src/core/store.js";
import type { Scope } from "../../src/core/types.js";
import { runConformanceCase, runStoreConformance, storeConformanceCases, type MakeStore } from "../../src/stores/conformance/index.js";
import { memoryStore } from "../../src/stores/memory/index.js";

type TxPatch = (inner: StoreTx) => Partial<StoreTx>;

/** A memory store whose transactions see `patch(tx)` in place of some methods, and whose store methods `over` replaces. */
function mutant(patch: TxPatch, over: (inner: Store) => Partial<Store> = () => ({})): MakeStore {
  return async () => {
    const inner = memoryStore();
    const wrap = (tx: StoreTx): StoreTx => {
      const p = patch(tx) as Record<PropertyKey, unknown>;
      return new Proxy(tx, {
        get(target, key) {
          if (key in p) return p[key];
          const v: unknown = Reflect.get(target, key);
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    };
    return {
      kind: "mutant",
      migrate: () => inner.migrate(),
      transact: <T>(fn: (tx: StoreTx) => Promise<T>) => inner.transact((tx) => fn(wrap(tx))),
      close: () => inner.close(),
      ...over(inner),
    };
  };
}

const swallow =
  (code: string) =>
  async (p: Promise<unknown>): Promise<void> => {
    try {
      await p;
    } catch (e) {
      if (!isWritError(e, code as never)) throw e;
    }
  };

/** Maps every scope (and scoped record) to one space per tenant: the "forgot space_id in WHERE" bug. */
function collapseSpaces(tx: StoreTx): Partial<StoreTx> {
  const isScoped = (v: unknown): v is Scope => typeof v === "object" && v !== null && "tenantId" in v && "spaceId" in v;
  const down = (v: unknown): unknown => (Array.isArray(v) ? v.map(down) : isScoped(v) ? { ...v, spaceId: "*" } : v);
  const up = (v: unknown, spaceId: string): unknown => (Array.isArray(v) ? v.map((x) => up(x, spaceId)) : isScoped(v) ? { ...v, spaceId } : v);
  const out: Record<string, unknown> = {};
  for (const key of ["getIdempotency", "putIdempotency", "listInvocations", "getInvocation", "insertInvocation", "listAttempts", "insertAttempt", "getAttempt"] as const) {
    out[key] = async (...args: unknown[]) => {
      const spaceId = (args[0] as Scope).spaceId;
      const fn = Reflect.get(tx, key) as (...a: unknown[]) => Promise<unknown>;
      return up(await fn.apply(tx, args.map(down)), spaceId);
    };
  }
  return out;
}

const MUTANTS: Array<{ name: string; make: MakeStore; mustFail: string[] }> = [
  {
    name: "transactions that commit when fn throws",
    make: mutant(
      () => ({}),
      (inner) => ({
        transact: async <T>(fn: (tx: StoreTx) => Promise<T>) => {
          let failure: { error: unknown } | undefined;
          const value = await inner.transact(async (tx) => {
            try {
              return await fn(tx);
            } catch (error) {
              failure = { error };
              return undefined as T;
            }
          });
          if (failure !== undefined) throw failure.error;
          return value;
        },
      }),
    ),
    mustFail: ["transactions: a fault injected after writes of every kind leaves nothing visible", "transactions: a refused write rolls back the transaction's earlier writes"],
  },
  {
    name: "decisions without a unique constraint",
    make: mutant(() => ({ consumeDecision: async () => true, getConsumedDecision: async () => null })),
    mustFail: ["decisions: consumption is recorded once; a repeat returns false and writes nothing", "decisions: exactly one of 20 concurrent consumers wins"],
  },
  {
    name: "idempotency writes that trust the record's scope",
    make: mutant((tx) => ({ putIdempotency: (_scope, rec) => tx.putIdempotency({ tenantId: rec.tenantId, spaceId: rec.spaceId }, rec) })),
    mustFail: ["isolation: consumed decisions and idempotency records stay in their scope"],
  },
  {
    name: "queries that ignore spaceId",
    make: mutant(collapseSpaces),
    mustFail: ["isolation: consumed decisions and idempotency records stay in their scope", "isolation: attempts stay in their scope, each scope with its own seq", "isolation: invocations, leases and steps stay in their scope"],
  },
  {
    name: "fences ignored",
    make: mutant((tx) => ({ updateInvocation: (scope, inv) => tx.updateInvocation(scope, inv), putStep: (scope, s) => tx.putStep(scope, s), assertLease: async () => undefined })),
    mustFail: ["leases: fenced writes are refused with LeaseLostError unless running under owner and token", "claims: runAt respected; an expired lease is reclaimable and fences out the old holder"],
  },
  {
    name: "step monotonicity not enforced (refusal swallowed)",
    make: mutant((tx) => ({ putStep: (scope, s, f) => swallow("CONFLICT")(tx.putStep(scope, s, f)) })),
    mustFail: ["steps: settled steps never return to started; getSteps is ordered by stepIndex"],
  },
  {
    name: "journal conflicts swallowed",
    make: mutant((tx) => ({ insertJournal: (scope, e) => swallow("CONFLICT")(tx.insertJournal(scope, e)) })),
    mustFail: ["journal: append continues the head; seq clash, gap and id clash are refused"],
  },
  {
    name: "claims that do not count attempts",
    make: mutant((tx) => ({
      claimInvocations: async (opts) => {
        const claimed = await tx.claimInvocations(opts);
        for (const inv of claimed) {
          inv.attemptCount -= 1;
          await tx.updateInvocation(inv, inv);
        }
        return claimed;
      },
    })),
    mustFail: ["claims: runnable invocations of every scope, in order, stamped with the lease", "claims: runAt respected; an expired lease is reclaimable and fences out the old holder", "claims: concurrent claimers never receive the same invocation"],
  },
  {
    name: "close that does nothing",
    make: mutant(() => ({}), () => ({ close: async () => undefined })),
    mustFail: ["close: a closed store refuses further calls with STORE_CLOSED"],
  },
];

describe("conformance suite sensitivity", () => {
  it("has unique case names", () => {
    const names = storeConformanceCases.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  for (const m of MUTANTS) {
    it(`fails a store with ${m.name}`, async () => {
      const report = await runStoreConformance(m.make);
      const failed = report.failed.map((f) => f.name);
      for (const name of m.mustFail) {
        expect(storeConformanceCases.map((c) => c.name)).toContain(name);
        expect(failed).toContain(name);
      }
    });
  }

  it("passes the unmodified memory store", async () => {
    const report = await runStoreConformance(async () => memoryStore());
    expect(report.failed).toEqual([]);
    expect(report.passed.length).toBe(storeConformanceCases.length);
  });

  it("fails a case that leaves a store open, and closes it", async () => {
    let closed = false;
    const makeStore: MakeStore = async () => {
      const s = memoryStore();
      return { kind: s.kind, migrate: () => s.migrate(), transact: (fn) => s.transact(fn), close: async () => {
        closed = true;
        await s.close();
      } };
    };
    const leaky = { name: "leaky", run: async (make: MakeStore) => void (await make()) };
    await expect(runConformanceCase(leaky, makeStore)).rejects.toThrow("left 1 store(s) open");
    expect(closed).toBe(true);
  });

  it("honours the filter option", async () => {
    const report = await runStoreConformance(async () => memoryStore(), { filter: (n) => n.startsWith("journal:") });
    expect(report.passed.length).toBeGreaterThan(0);
    expect(report.passed.every((n) => n.startsWith("journal:"))).toBe(true);
  });
});
