/**
 * The coalescer (src/core/batch.ts) that groups store transitions into batches.
 *
 * Invariants: every call settles exactly once with its own member's outcome; a call that finds
 * nothing in flight goes at once and alone; calls made while a batch is in flight go together in
 * the next one (at most maxBatch each); `apply` failing in any way (rejecting, throwing at once,
 * answering the wrong number of outcomes) fails that batch's members and leaves the queue working;
 * no more than maxInFlight batches are in flight; with `defer` a later hop than a microtask, what a
 * landed batch's members call at once (after any number of awaits) goes in the very next batch.
 */
import { describe, expect, it } from "vitest";
import { coalescer, type BatchOutcome } from "../src/core/batch.js";

const deferred = <T>() => {
  let resolve!: (v: T) => void;
  const p = new Promise<T>((r) => (resolve = r));
  return { p, resolve };
};

describe("coalescer", () => {
  it("a lone call goes at once; calls during the flight go together next, each answered alone", async () => {
    const batches: number[][] = [];
    const gates: Array<ReturnType<typeof deferred<void>>> = [];
    const c = coalescer<number, number>(
      async (xs) => {
        batches.push(xs);
        const g = deferred<void>();
        gates.push(g);
        await g.p;
        return xs.map((x): BatchOutcome<number> => (x % 2 === 0 ? { ok: true, value: x * 10 } : { ok: false, error: new Error(`odd ${x}`) }));
      },
      { maxBatch: 3 },
    );
    const first = c(2);
    await Promise.resolve();
    await Promise.resolve();
    expect(batches).toEqual([[2]]);
    const rest = [c(4), c(5), c(6), c(8)];
    const restSettled = Promise.allSettled(rest);
    expect(c.pending()).toBe(5);
    gates[0]!.resolve();
    expect(await first).toBe(20);
    while (gates.length < 2) await new Promise((r) => setTimeout(r, 1));
    expect(batches[1]).toEqual([4, 5, 6]);
    gates[1]!.resolve();
    while (gates.length < 3) await new Promise((r) => setTimeout(r, 1));
    expect(batches[2]).toEqual([8]);
    gates[2]!.resolve();
    const settled = await restSettled;
    expect(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message))).toEqual([40, "odd 5", 60, 80]);
    expect(c.pending()).toBe(0);
  });

  it("apply throwing at once, rejecting, or answering the wrong count fails that batch only", async () => {
    let mode: "throw" | "reject" | "short" | "ok" = "throw";
    const c = coalescer<number, number>(
      (xs) => {
        if (mode === "throw") throw new Error("sync boom");
        if (mode === "reject") return Promise.reject(new Error("async boom"));
        if (mode === "short") return Promise.resolve([{ ok: true as const, value: 1 }]);
        return Promise.resolve(xs.map((x) => ({ ok: true as const, value: x })));
      },
      { maxBatch: 8 },
    );
    await expect(c(1)).rejects.toThrow("sync boom");
    mode = "reject";
    await expect(c(2)).rejects.toThrow("async boom");
    mode = "short";
    const two = await Promise.allSettled([c(3), c(4)]);
    expect(two.every((s) => s.status === "rejected" && /answered 1 outcomes for 2 members/.test((s.reason as Error).message))).toBe(true);
    mode = "ok";
    expect(await c(5)).toBe(5);
    expect(c.pending()).toBe(0);
  });

  it("keeps at most maxInFlight batches in flight", async () => {
    let inFlight = 0;
    let most = 0;
    const c = coalescer<number, number>(
      async (xs) => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 5));
        inFlight--;
        return xs.map((x) => ({ ok: true as const, value: x }));
      },
      { maxBatch: 2, maxInFlight: 2 },
    );
    const out = await Promise.all(Array.from({ length: 12 }, (_, i) => c(i)));
    expect(out).toEqual(Array.from({ length: 12 }, (_, i) => i));
    expect(most).toBe(2);
  });

  describe("with defer = setImmediate", () => {
    /**
     * Batch 1 ("lead") is alone; batch 2 holds two 'begins'. Once a begin is answered, its caller
     * awaits a few times (a connector call that returns at once: 'a' once, 'b' ten times) and
     * calls its 'settle'. With `other`, a third call queues while batch 2 is in flight. Returns
     * the batches sent.
     */
    const side = async (opts: { defer?: (cb: () => void) => void; other: boolean }): Promise<string[][]> => {
      const batches: string[][] = [];
      const gates = [deferred<void>(), deferred<void>()];
      const c = coalescer<string, string>(
        async (xs) => {
          batches.push(xs);
          // The first two batches wait for the test; later ones answer after an event-loop hop.
          await (batches.length <= 2 ? gates[batches.length - 1]!.p : new Promise((r) => setImmediate(r)));
          return xs.map((x): BatchOutcome<string> => ({ ok: true, value: x }));
        },
        { maxBatch: 8, maxInFlight: 1, ...(opts.defer ? { defer: opts.defer } : {}) },
      );
      const lead = c("lead");
      while (batches.length < 1) await new Promise((r) => setImmediate(r));
      const work = ["a", "b"].map(async (k) => {
        await c(`begin ${k}`);
        for (let i = 0; i < (k === "a" ? 1 : 10); i++) await Promise.resolve();
        return c(`settle ${k}`);
      });
      gates[0]!.resolve();
      await lead;
      while (batches.length < 2) await new Promise((r) => setImmediate(r));
      const other = opts.other ? [c("other")] : [];
      gates[1]!.resolve();
      await Promise.all([...work, ...other]);
      return batches;
    };

    it("what a landed batch's answers call at once goes in the next batch", async () => {
      expect(await side({ other: true })).toEqual([["lead"], ["begin a", "begin b"], ["other"], ["settle a", "settle b"]]);
      expect(await side({ other: true, defer: setImmediate })).toEqual([["lead"], ["begin a", "begin b"], ["other", "settle a", "settle b"]]);
    });

    it("the calls those answers make go together even when nothing else queued", async () => {
      expect(await side({ other: false })).toEqual([["lead"], ["begin a", "begin b"], ["settle a"], ["settle b"]]);
      expect(await side({ other: false, defer: setImmediate })).toEqual([["lead"], ["begin a", "begin b"], ["settle a", "settle b"]]);
    });

    it("a batch that failed opens the turn too: the retries its callers make at once go together", async () => {
      const batches: number[][] = [];
      let fail = true;
      const c = coalescer<number, number>(
        async (xs) => {
          batches.push(xs);
          await new Promise((r) => setImmediate(r));
          if (fail) throw new Error("connection lost");
          return xs.map((x): BatchOutcome<number> => ({ ok: true, value: x }));
        },
        { maxBatch: 8, defer: setImmediate },
      );
      const retry = async (x: number, awaits: number): Promise<number> => {
        try {
          return await c(x);
        } catch {
          fail = false;
          for (let i = 0; i < awaits; i++) await Promise.resolve();
          return c(x);
        }
      };
      const lead = c(0).catch(() => "failed");
      await Promise.resolve();
      const out = await Promise.all([lead, retry(1, 1), retry(2, 10)]);
      expect(out).toEqual(["failed", 1, 2]);
      expect(batches).toEqual([[0], [1, 2], [1, 2]]);
    });

    it("a defer that throws: every call is still answered, on microtasks", { timeout: 5_000 }, async () => {
      const batches: number[][] = [];
      const c = coalescer<number, number>(
        async (xs) => {
          batches.push(xs);
          await new Promise((r) => setImmediate(r));
          return xs.map((x): BatchOutcome<number> => ({ ok: true, value: x }));
        },
        {
          maxBatch: 8,
          defer: () => {
            throw new Error("no hop here");
          },
        },
      );
      const first = c(1);
      await Promise.resolve();
      const rest = [c(2), c(3)];
      expect(await Promise.all([first, ...rest])).toEqual([1, 2, 3]);
      // After the landing (whose hop threw), calls still go.
      expect(await Promise.all([c(4), c(5)])).toEqual([4, 5]);
      expect(batches.flat()).toEqual([1, 2, 3, 4, 5]);
    });

    it("a call made at any other moment goes at once, on a microtask", async () => {
      let deferred = 0;
      const batches: number[][] = [];
      const c = coalescer<number, number>(
        async (xs) => {
          batches.push(xs);
          return xs.map((x): BatchOutcome<number> => ({ ok: true, value: x }));
        },
        { maxBatch: 8, defer: (cb) => (deferred++, setImmediate(cb)) },
      );
      const first = c(1);
      await Promise.resolve();
      await Promise.resolve();
      expect(batches).toEqual([[1]]);
      expect(await first).toBe(1);
      // An event-loop turn later, a lone call again goes on a microtask.
      await new Promise((r) => setImmediate(r));
      const second = c(2);
      await Promise.resolve();
      await Promise.resolve();
      expect(batches).toEqual([[1], [2]]);
      expect(await second).toBe(2);
      // The landings ended their turns through defer; no batch waited for it.
      expect(deferred).toBe(2);
    });
  });

  it("refuses bad options with INVALID_OPTION", () => {
    const apply = async (): Promise<BatchOutcome<number>[]> => [];
    expect(() => coalescer(apply, { maxBatch: 0 })).toThrow(/maxBatch/);
    expect(() => coalescer(apply, { maxBatch: 1, lingerMs: 5 })).toThrow(/setTimer/);
    expect(() => coalescer(apply, { maxBatch: 1, maxInFlight: 0 })).toThrow(/maxInFlight/);
    expect(() => coalescer(apply, { maxBatch: 1, defer: 5 as unknown as () => void })).toThrow(/defer must be a function/);
  });
});
