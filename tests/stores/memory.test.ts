/**
 * Memory-store behaviour beyond the shared conformance suite: options, the fault hook, the
 * transaction lifecycle (serialisation, ended transactions, close while busy), wake-ups and the
 * JSON-only copies.
 */
import { describe, expect, it } from "vitest";
import { isWritError } from "../../src/core/errors.js";
import type { StoreTx } from "../../src/core/store.js";
import { memoryStore, type MemoryFaultPoint, type MemoryStoreOptions } from "../../src/stores/memory/index.js";
import { attempt, idempotency, invocation, journalChain, newScope } from "../../src/stores/conformance/fixtures.js";

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return isWritError(e) ? e.code : `not a WritError: ${String(e)}`;
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("memoryStore options", () => {
  it("rejects unknown options and a non-function fault hook with INVALID_OPTION", () => {
    expect(() => memoryStore({ fualts: () => undefined } as unknown as MemoryStoreOptions)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => memoryStore({ faults: "yes" } as unknown as MemoryStoreOptions)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(() => memoryStore(null as unknown as MemoryStoreOptions)).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    expect(memoryStore({}).kind).toBe("memory");
  });
});

describe("memoryStore fault hook", () => {
  it("fails the named operation, and the transaction with it", async () => {
    const store = memoryStore({
      faults: (point) => {
        if (point === "insertJournal") throw new Error("disk full");
      },
    });
    const scope = newScope();
    await expect(
      store.transact(async (tx) => {
        await tx.insertAttempt(scope, attempt(scope));
        await tx.insertJournal(scope, journalChain(scope, 1));
      }),
    ).rejects.toThrow("disk full");
    expect(await store.transact((tx) => tx.listAttempts(scope))).toEqual([]);
    await store.close();
  });

  it("a commit fault rolls back after fn resolved", async () => {
    let failCommit = true;
    const seen: MemoryFaultPoint[] = [];
    const store = memoryStore({
      faults: (point) => {
        seen.push(point);
        if (point === "commit" && failCommit) throw new Error("commit lost");
      },
    });
    const scope = newScope();
    const rec = idempotency(scope);
    await expect(store.transact((tx) => tx.putIdempotency(scope, rec))).rejects.toThrow("commit lost");
    failCommit = false;
    expect(await store.transact((tx) => tx.getIdempotency(scope, rec.action, rec.idempotencyKey))).toBeNull();
    expect(seen).toEqual(["putIdempotency", "commit", "getIdempotency", "commit"]);
    await store.close();
  });
});

describe("memoryStore transactions", () => {
  it("runs transactions one at a time, in arrival order, even when fn awaits", async () => {
    const store = memoryStore();
    const log: string[] = [];
    const gate = deferred();
    const first = store.transact(async () => {
      log.push("1 start");
      await gate.promise;
      log.push("1 end");
    });
    const second = store.transact(async () => {
      log.push("2 start");
    });
    await Promise.resolve();
    expect(log).toEqual(["1 start"]);
    gate.resolve();
    await Promise.all([first, second]);
    expect(log).toEqual(["1 start", "1 end", "2 start"]);
    await store.close();
  });

  it("refuses a transaction object used after its transaction ended (INVALID_STATE)", async () => {
    const store = memoryStore();
    const scope = newScope();
    let leaked: StoreTx | undefined;
    await store.transact(async (tx) => {
      leaked = tx;
    });
    expect(await codeOf(leaked!.insertAttempt(scope, attempt(scope)))).toBe("INVALID_STATE");
    expect(await store.transact((tx) => tx.listAttempts(scope))).toEqual([]);
    await store.close();
  });

  it("close lets running and waiting transactions finish, refuses new ones at once", async () => {
    const store = memoryStore();
    const scope = newScope();
    const gate = deferred();
    const running = store.transact(async (tx) => {
      await gate.promise;
      return tx.insertAttempt(scope, attempt(scope));
    });
    const waiting = store.transact((tx) => tx.insertAttempt(scope, attempt(scope)));
    const closing = store.close();
    expect(await codeOf(store.transact(async () => 1))).toBe("STORE_CLOSED");
    gate.resolve();
    expect(await running).toBe(1);
    expect(await waiting).toBe(2);
    await closing;
    await store.close(); // idempotent
    expect(await codeOf(store.migrate())).toBe("STORE_CLOSED");
  });

  it("a scope without tenant or space is INVALID_ARGUMENT", async () => {
    const store = memoryStore();
    expect(await codeOf(store.transact((tx) => tx.getAttempt({ tenantId: "", spaceId: "s" }, "a")))).toBe("INVALID_ARGUMENT");
    await store.close();
  });
});

describe("memoryStore wake-ups", () => {
  it("wakes listeners after a commit that wrote a queued invocation, not after a rollback or other writes", async () => {
    const store = memoryStore();
    const scope = newScope();
    let wakes = 0;
    const off = store.onWake(() => {
      wakes += 1;
    });
    await store.transact((tx) => tx.insertAttempt(scope, attempt(scope)));
    expect(wakes).toBe(0);
    await expect(
      store.transact(async (tx) => {
        await tx.insertInvocation(scope, invocation(scope));
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(wakes).toBe(0);
    await store.transact((tx) => tx.insertInvocation(scope, invocation(scope)));
    expect(wakes).toBe(1);
    off();
    await store.transact((tx) => tx.insertInvocation(scope, invocation(scope)));
    expect(wakes).toBe(1);
    await store.close();
  });
});

describe("memoryStore copies", () => {
  it("stores JSON data only: non-plain values are INVALID_ARGUMENT, absent fields stay absent", async () => {
    const store = memoryStore();
    const scope = newScope();
    const bad = invocation(scope);
    (bad.request.params as Record<string, unknown>).when = new Date(0);
    expect(await codeOf(store.transact((tx) => tx.insertInvocation(scope, bad)))).toBe("INVALID_ARGUMENT");
    const withUndefined = { ...attempt(scope), reason: undefined };
    await store.transact((tx) => tx.insertAttempt(scope, withUndefined));
    const [stored] = await store.transact((tx) => tx.listAttempts(scope));
    expect(Object.keys(stored!)).not.toContain("reason");
    await store.close();
  });

  it("keeps a __proto__ key as data without touching prototypes", async () => {
    const store = memoryStore();
    const scope = newScope();
    const inv = invocation(scope);
    inv.request.params = JSON.parse('{"__proto__": {"polluted": true}}') as typeof inv.request.params;
    await store.transact((tx) => tx.insertInvocation(scope, inv));
    const read = await store.transact((tx) => tx.getInvocation(scope, inv.invocationId));
    expect(Object.getPrototypeOf(read!.request.params)).toBe(Object.prototype);
    expect(Object.keys(read!.request.params)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await store.close();
  });
});

describe("memoryStore sealing", () => {
  // Invariant: sealJournal seals any unsealed entries, not only the oldest ones in order (the
  // store keeps a shortcut for that usual case): sealing the second and third of four leaves the
  // first and fourth unsealed in their order, and a rolled-back seal restores the list exactly.
  it("seals entries that are not the oldest, and a rollback restores the unsealed list", async () => {
    const store = memoryStore();
    const scope = newScope();
    const chain = journalChain(scope, 4);
    const unsealed = chain.map(({ seq: _s, prevHash: _p, hash: _h, ...u }) => u);
    await store.transact((tx) => tx.insertUnsealed(scope, unsealed));
    const ids = async (): Promise<string[]> => (await store.transact((tx) => tx.listUnsealed(scope))).map((u) => u.id);
    const sealMiddle = [
      { ...chain[1]!, seq: 1, prevHash: null },
      { ...chain[2]!, seq: 2, prevHash: chain[1]!.hash },
    ];
    await expect(
      store.transact(async (tx) => {
        await tx.sealJournal(scope, sealMiddle);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    expect(await ids()).toEqual(unsealed.map((u) => u.id));
    await store.transact((tx) => tx.sealJournal(scope, sealMiddle));
    expect(await ids()).toEqual([unsealed[0]!.id, unsealed[3]!.id]);
    expect((await store.transact((tx) => tx.readJournal(scope))).map((e) => e.id)).toEqual([unsealed[1]!.id, unsealed[2]!.id]);
    // The oldest one after them: a prefix again.
    await store.transact((tx) => tx.sealJournal(scope, [{ ...chain[0]!, seq: 3, prevHash: chain[2]!.hash }]));
    expect(await ids()).toEqual([unsealed[3]!.id]);
    await store.close();
  });
});
