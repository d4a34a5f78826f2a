/**
 * The journal sequencer on every store (docs/journal.md).
 *
 * Invariants checked:
 * - Q1 with a sequencer attached, a transition's entries are sealed before `transact` resolves on
 *   memory and SQLite (synchronous after commit, through the sequencer), and within the bound on
 *   PostgreSQL (after commit, never before it).
 * - Q2 entries nobody's hint covered (written while no sequencer ran) are sealed by the bounded
 *   poll once a sequencer is started: its timer fires every quarter of `sealWithinMs`.
 * - Q3 verify reports an entry unsealed for longer than the bound as `unsealed_overdue` (and the
 *   sealed chain still verifies); younger unsealed entries are counted, not reported.
 * - Q4 `sealWithinMs` is validated wherever it is given (host, verify, sequencer).
 * - Q5 a sequencer nothing polls (a bare boundary's) coalesces the commit hints of a store that asks
 *   for a hint delay over that delay on the clock it was given: nothing is sealed before the delay
 *   ends, then one run seals every hinted entry; without such a clock each hint seals at once.
 * - Q6 on a store with sealer claims, a started sequencer seals at a hint only the scopes it holds or
 *   could claim; a scope another store holds is left to it until a poll finds the same oldest
 *   unsealed entry as the poll before, past a quarter of the bound, and then sealed anyway (the
 *   bound does not depend on the holder). Explicit
 *   seals seal whatever they are asked to, and a stop gives every claim up.
 * - Q7 a sequencer that is not started leaves a hinted scope another store holds to it (it asks,
 *   and never claims), and half a bound after its hint window seals the scope itself anyway, so
 *   that a holder that hangs cannot hold its commits back; its hints resolve with that seal.
 * - Q8 claims that cannot be asked about (their calls fail) change nothing: hints seal as without them.
 * - Q9 a claim still out when the sequencer stops is given up as soon as it lands (nothing else
 *   would give it up), the stop waits for it, and the scope it was asked for is sealed.
 * - Q10 a scope a hint window left to its holder is sealed by this process half a bound later
 *   (the backstop), or at once by `idle()`; the hint resolves only then (a store's close waits).
 * - Q11 a poll that finds the scope with nothing unsealed as old as the backstop's hint drops the
 *   backstop (the holder sealed those commits): no seal of its own, and the hint resolves.
 * - Q12 a backstop that comes due after the holder sealed its hint's commits (between the last
 *   poll and the due time) reads first and resolves the hint without a seal of its own: sealing
 *   anyway raced the holder for the chain's head.
 * - Q14 a due backstop whose read of the unsealed scopes fails seals as it did before the read.
 * - Q15 a stop waits for a due backstop's read still in flight (the timer's read is among the work
 *   it waits for), and the backstop's hint resolves with its seal before the stop does.
 * - Q13 a backstop keeps each hint's own due time: a hint its due read shows sealed resolves, a
 *   later one still unsealed goes back to wait and is sealed at its own due time, even when the
 *   timer was meanwhile armed for another scope's later one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendJournal, readWholeJournal, sealScopeNow } from "../../src/core/journal.js";
import { manualClock } from "../../src/core/manual-clock.js";
import { sequencerFor, sequencerHintClock } from "../../src/core/sequencer.js";
import type { JournalSealers, Store, StoreTx } from "../../src/core/store.js";
import type { Scope } from "../../src/core/types.js";
import { createKeyring, memoryStore, nodeCryptoPort, sealJournalNow, verifyJournalIn } from "../../src/index.js";
import { makeHostBench } from "../host/fixture.js";
import { allStoreFactories } from "../helpers/stores.js";

const crypto = nodeCryptoPort();
const keyring = createKeyring([]);
const T = 1_700_000_000_000;
let n = 0;
const newScope = (): Scope => ({ tenantId: `q${process.pid}x${++n}`, spaceId: "s" });
const draft = (id: string, at = T): Parameters<typeof appendJournal>[3][number] => ({ id, type: "test.entry", at, refs: {}, data: null });

for (const factory of allStoreFactories()) {
  describe(`the sequencer on ${factory.name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ store, cleanup } = await factory.make());
    });
    afterAll(async () => cleanup());

    // Q1
    it("seals a host transition's entries after its commit", async () => {
      const b = makeHostBench(store);
      const { invocation } = await b.host.submit(b.request());
      const scope = b.scope;
      if (factory.name !== "postgres") {
        // synchronous after commit: sealed when submit resolved
        expect(await store.transact((tx) => tx.listUnsealed(scope))).toEqual([]);
      } else {
        const deadline = Date.now() + 5_000;
        while ((await store.transact((tx) => tx.listUnsealed(scope))).length > 0) {
          if (Date.now() > deadline) throw new Error("not sealed within 5 s");
          await new Promise((r) => setTimeout(r, 10));
        }
      }
      const entries = await readWholeJournal(store, scope);
      expect(entries.map((e) => [e.seq, e.type, e.refs.invocationId])).toEqual([[1, "invocation.submitted", invocation.invocationId]]);
    });
  });
}

describe("the sequencer's poll and verify's findings (memory store)", () => {
  // Q2
  it("a started sequencer seals, within the bound, entries written while none ran", async () => {
    const store = memoryStore();
    const scope = newScope();
    // written before any sequencer exists for this store: no hint seals them
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("a"), draft("b")]));
    expect((await store.transact((tx) => tx.listUnsealed(scope))).map((u) => u.id)).toEqual(["a", "b"]);
    const clock = manualClock(T);
    const stop = sequencerFor(store, crypto).start({ clock, sealWithinMs: 200 });
    expect(await readWholeJournal(store, scope)).toEqual([]);
    clock.advance(49);
    await new Promise((r) => setImmediate(r));
    expect(await readWholeJournal(store, scope)).toEqual([]); // the poll is every 50 ms here
    clock.advance(1);
    await sequencerFor(store, crypto).idle();
    for (let i = 0; i < 20 && (await readWholeJournal(store, scope)).length < 2; i++) await new Promise((r) => setImmediate(r));
    expect((await readWholeJournal(store, scope)).map((e) => [e.seq, e.id])).toEqual([
      [1, "a"],
      [2, "b"],
    ]);
    await stop();
    expect(clock.pending()).toBe(0); // stopping leaves no timer behind
    await store.close();
  });

  // Q3
  it("verify reports an entry unsealed past the bound, and still checks the sealed chain", async () => {
    const store = memoryStore();
    const scope = newScope();
    // one sealed entry (sealed by the core step directly: no sequencer is attached to this store)
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("first", T)]));
    expect(await sealScopeNow(store, crypto, scope)).toBe(1);
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("old", T), draft("young", T + 200)]));
    const clock = manualClock(T + 300);
    const v = await verifyJournalIn(store, keyring, scope, { clock, sealWithinMs: 250 });
    expect(v.ok).toBe(false);
    expect(v.entries).toBe(1); // the sealed chain is verified as well
    expect(v.unsealed).toBe(2);
    expect(v.problems).toEqual([expect.objectContaining({ kind: "unsealed_overdue", id: "old" })]);
    // the default bound is 250 ms too
    expect((await verifyJournalIn(store, keyring, scope, { clock })).problems.map((p) => p.id)).toEqual(["old"]);
    expect(await verifyJournalIn(store, keyring, scope, { clock: manualClock(T + 250), sealWithinMs: 250 })).toMatchObject({ ok: true, unsealed: 2, problems: [] });
    expect(await sealJournalNow(store)).toBe(2);
    const after = await verifyJournalIn(store, keyring, scope, { clock });
    expect(after).toMatchObject({ ok: true, entries: 3, unsealed: 0, headSeq: 3, problems: [] });
    await store.close();
  });

  // Q4
  it("validates sealWithinMs", async () => {
    const store = memoryStore();
    for (const bad of [0, -1, 1.5, 60_001, "250", null, Number.NaN]) {
      expect(() => makeHostBench(store, { sealWithinMs: bad as number })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("sealWithinMs") }));
      await expect(verifyJournalIn(store, keyring, newScope(), { sealWithinMs: bad as number })).rejects.toMatchObject({ code: "INVALID_OPTION" });
      expect(() => sequencerFor(store, crypto).start({ clock: manualClock(T), sealWithinMs: bad as number })).toThrow(expect.objectContaining({ code: "INVALID_OPTION" }));
    }
    expect(() => makeHostBench(store, { sealWithinMs: 1 })).not.toThrow();
    await store.close();
  });

  // Q5
  it("an unpolled sequencer delays commit hints on its hint clock and seals them in one run", async () => {
    /** A memory store that asks for a 20 ms hint delay; its commit hints are fired by the test. */
    const withDelay = (): { store: Store; hint: (scope: Scope) => Promise<void>; seals: () => number } => {
      const inner = memoryStore();
      const listeners: Array<(scope: Scope) => void | Promise<void>> = [];
      let seals = 0;
      const store = new Proxy(inner, {
        get(target, prop) {
          if (prop === "journalHintDelayMs") return 20;
          if (prop === "onJournalAppend") return (cb: (scope: Scope) => void | Promise<void>) => void listeners.push(cb);
          if (prop === "transact") {
            return (fn: Parameters<Store["transact"]>[0]) => {
              // the sequencer's runs are the only transactions after the appends below
              seals += 1;
              return target.transact(fn);
            };
          }
          const v = Reflect.get(target, prop) as unknown;
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      }) as Store;
      return { store, hint: async (scope) => void (await Promise.all(listeners.map(async (l) => l(scope)))), seals: () => seals };
    };
    const scope = newScope();
    const a = withDelay();
    const clock = manualClock(T);
    sequencerFor(a.store, crypto);
    sequencerHintClock(a.store, clock);
    await a.store.transact((tx) => appendJournal(tx, crypto, scope, [draft("a"), draft("b"), draft("c")]));
    const before = a.seals();
    const hints = [a.hint(scope), a.hint(scope), a.hint(scope)];
    clock.advance(19);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(a.seals()).toBe(before);
    expect((await a.store.transact((tx) => tx.listUnsealed(scope))).length).toBe(3);
    const atDelay = a.seals();
    clock.advance(1);
    await Promise.all(hints);
    await sequencerFor(a.store, crypto).idle();
    const delayedRun = a.seals() - atDelay;
    expect((await readWholeJournal(a.store, scope)).map((e) => [e.seq, e.id])).toEqual([[1, "a"], [2, "b"], [3, "c"]]);

    // Without a hint clock (and not started), the first hint seals at once.
    const b = withDelay();
    const other = newScope();
    sequencerFor(b.store, crypto);
    await b.store.transact((tx) => appendJournal(tx, crypto, other, [draft("x")]));
    const beforeOne = b.seals();
    await b.hint(other);
    const oneRun = b.seals() - beforeOne;
    expect((await readWholeJournal(b.store, other)).map((e) => e.id)).toEqual(["x"]);
    // The three delayed hints cost what one hint's run costs: one run sealed them all.
    expect(oneRun).toBeGreaterThan(0);
    expect(delayedRun).toBe(oneRun);
  });
});

describe("one sealer per scope (memory store with stand-in claims)", () => {
  /** Claims as a store shared with other processes would answer: `elsewhere` are held by another store. */
  const standIn = () => {
    const key = (s: Scope): string => JSON.stringify([s.tenantId, s.spaceId]);
    const mine = new Set<string>();
    const elsewhere = new Set<string>();
    const calls = { claim: 0, held: 0, release: 0 };
    let failing = false;
    const api: JournalSealers = {
      async claim(scopes) {
        calls.claim++;
        if (failing) throw new Error("claims unreachable");
        return scopes.map((s) => (elsewhere.has(key(s)) ? false : (mine.add(key(s)), true)));
      },
      async held(scopes) {
        calls.held++;
        if (failing) throw new Error("claims unreachable");
        return scopes.map((s) => elsewhere.has(key(s)) || mine.has(key(s)));
      },
      async release(scopes) {
        calls.release++;
        for (const s of scopes) mine.delete(key(s));
      },
      holds: (s) => mine.has(key(s)),
      count: () => mine.size,
    };
    return { api, mine, elsewhere, calls, key, fail: (v: boolean) => void (failing = v) };
  };
  /**
   * A memory store with a 20 ms hint delay, claims, and hints fired by the test; while
   * `failScopeReads.on`, every read of the scopes with unsealed entries fails.
   */
  const failScopeReads = { on: false };
  /** While `until` is set, every read of the scopes with unsealed entries waits for it first. */
  const holdScopeReads: { until: Promise<void> | null } = { until: null };
  const shared = (claims: JournalSealers): { store: Store; hint: (scope: Scope) => Promise<void> } => {
    const inner = memoryStore();
    const listeners: Array<(scope: Scope) => void | Promise<void>> = [];
    const failing = (tx: StoreTx): StoreTx =>
      new Proxy(tx, {
        get(t, prop) {
          if (prop === "unsealedScopes" && failScopeReads.on) return () => Promise.reject(new Error("injected: the read of unsealed scopes failed"));
          if (prop === "unsealedScopes" && holdScopeReads.until !== null) {
            const until = holdScopeReads.until;
            return async (...a: unknown[]) => {
              await until;
              return (Reflect.get(t, prop) as (...x: unknown[]) => unknown).apply(t, a);
            };
          }
          const v = Reflect.get(t, prop) as unknown;
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      });
    const store = new Proxy(inner, {
      get(target, prop) {
        if (prop === "journalHintDelayMs") return 20;
        if (prop === "journalSealers") return claims;
        if (prop === "onJournalAppend") return (cb: (scope: Scope) => void | Promise<void>) => void listeners.push(cb);
        if (prop === "transact") return <T>(fn: (tx: StoreTx) => Promise<T>) => target.transact((tx) => fn(failing(tx)));
        if (prop === "read" && target.read !== undefined) return <T>(fn: (tx: StoreTx) => Promise<T>) => target.read!((tx) => fn(failing(tx)));
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Store;
    return { store, hint: async (scope) => void (await Promise.all(listeners.map(async (l) => l(scope)))) };
  };
  const turns = async (): Promise<void> => {
    for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
  };
  const sealedIds = async (store: Store, scope: Scope): Promise<string[]> => (await readWholeJournal(store, scope)).map((e) => e.id);
  /** A store whose scope `scope` another store holds (a stand-in's claims), a manual clock at T, and the store's sequencer. */
  const heldElsewhere = () => {
    const c = standIn();
    const { store, hint } = shared(c.api);
    const scope = newScope();
    c.elsewhere.add(c.key(scope));
    return { c, store, hint, scope, clock: manualClock(T), seq: sequencerFor(store, crypto) };
  };
  /**
   * A started sequencer (bound `sealWithinMs`) whose store holds one entry `id` in a scope another
   * store holds, hinted and left to that holder by the window at T + 20; `hinted` resolves with
   * the hint (`resolved()` says whether it has).
   */
  const leftToHolder = async (sealWithinMs: number, id: string) => {
    const { store, hint, scope, clock, seq } = heldElsewhere();
    const stop = seq.start({ clock, sealWithinMs });
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft(id, T)]));
    let done = false;
    const hinted = hint(scope).then(() => void (done = true));
    clock.advance(20);
    await turns();
    expect(await sealedIds(store, scope)).toEqual([]); // left to its holder
    return { store, scope, clock, seq, stop, hinted, resolved: () => done };
  };

  // Q6
  it("a started sequencer seals what it holds at once, leaves another holder's scope until half the bound, and gives its claims up at stop", async () => {
    const c = standIn();
    const { store, hint } = shared(c.api);
    const held = newScope();
    const free = newScope();
    c.elsewhere.add(c.key(held));
    const clock = manualClock(T);
    const seq = sequencerFor(store, crypto);
    const stop = seq.start({ clock, sealWithinMs: 200 }); // polls every 50 ms; half the bound is 100 ms
    await store.transact((tx) => appendJournal(tx, crypto, held, [draft("h1", T)]));
    await store.transact((tx) => appendJournal(tx, crypto, free, [draft("f1", T)]));
    const hints = Promise.all([hint(held), hint(free)]); // the left scope's hint resolves with its backstop
    clock.advance(20); // the hint window ends
    await turns();
    expect(await sealedIds(store, free)).toEqual(["f1"]); // claimed, then sealed
    expect(c.mine.has(c.key(free))).toBe(true);
    expect(await sealedIds(store, held)).toEqual([]); // left to its holder
    clock.advance(30); // poll at 50 ms: its oldest entry seen for the first time
    await turns();
    expect(await sealedIds(store, held)).toEqual([]);
    clock.advance(49);
    await turns();
    expect(await sealedIds(store, held)).toEqual([]);
    clock.advance(1); // poll at 100 ms: the same oldest entry again, past a quarter of the bound: sealed whoever holds it
    await turns();
    expect(await sealedIds(store, held)).toEqual(["h1"]);
    clock.advance(20); // the window's backstop (half the bound after it) finds nothing left, and its hint resolves
    await hints;
    // An explicit seal does not ask who holds the scope.
    await store.transact((tx) => appendJournal(tx, crypto, held, [draft("h2", T + 150)]));
    expect(await seq.seal(held)).toBe(1);
    expect(c.mine.has(c.key(held))).toBe(false);
    await stop();
    expect(c.mine.size).toBe(0); // the stop gave the claim on `free` up
    expect(c.calls.release).toBeGreaterThan(0);
    await store.close();
  });

  // Q7
  it("a sequencer that is not started leaves a held scope to its holder, and seals it itself half a bound later", async () => {
    const { c, store, hint, scope, clock } = heldElsewhere();
    sequencerHintClock(store, clock); // half the default bound: 125 ms
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("a", T)]));
    const h = hint(scope);
    clock.advance(20);
    await turns();
    expect(await sealedIds(store, scope)).toEqual([]);
    expect(c.calls.held).toBe(1);
    expect(c.calls.claim).toBe(0); // a sequencer that does not poll never claims
    // Another hint meanwhile is left too, on the answer it has (no second question).
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("b", T + 60)]));
    clock.advance(40);
    const h2 = hint(scope);
    clock.advance(20);
    await turns();
    expect(c.calls.held).toBe(1);
    expect(await sealedIds(store, scope)).toEqual([]);
    clock.advance(64); // T + 144: 124 ms after the first window
    await turns();
    expect(await sealedIds(store, scope)).toEqual([]);
    clock.advance(1); // half a bound after the first window left the scope: sealed here, held or not
    await Promise.all([h, h2]); // both hints resolve with that seal
    expect(await sealedIds(store, scope)).toEqual(["a", "b"]);
    expect(clock.pending()).toBe(0);
    await store.close();
  });

  // Q8
  it("claims that cannot be asked about change nothing: the hint seals", async () => {
    const c = standIn();
    c.fail(true);
    for (const started of [true, false]) {
      const { store, hint } = shared(c.api);
      const scope = newScope();
      const clock = manualClock(T);
      const seq = sequencerFor(store, crypto);
      const stop = started ? seq.start({ clock, sealWithinMs: 200 }) : null;
      if (!started) sequencerHintClock(store, clock);
      await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("x", T)]));
      const h = hint(scope);
      clock.advance(20);
      await h;
      await turns();
      expect(await sealedIds(store, scope)).toEqual(["x"]);
      await stop?.();
      await store.close();
    }
    expect(c.calls.claim + c.calls.held).toBe(2);
  });

  // Q9
  it("a claim that lands after the stop is given up at once, and the window's scope is sealed", async () => {
    const c = standIn();
    let land!: () => void;
    const landed = new Promise<void>((r) => (land = r));
    const slow: JournalSealers = { ...c.api, claim: async (scopes) => (await landed, c.api.claim(scopes)) };
    const { store, hint } = shared(slow);
    const scope = newScope();
    const clock = manualClock(T);
    const seq = sequencerFor(store, crypto);
    const stop = seq.start({ clock, sealWithinMs: 200 });
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("s1", T)]));
    const h = hint(scope);
    clock.advance(20); // the window asks for the claim, which hangs
    await turns();
    const stopping = stop(); // the stop waits for the window still deciding
    await turns();
    land(); // the claim lands after the stop began
    await stopping;
    await h;
    await seq.idle();
    expect(c.mine.size).toBe(0); // the claim that landed after the stop was given up
    expect(await sealedIds(store, scope)).toEqual(["s1"]);
    await store.close();
  });

  // Q10
  it("a started sequencer's window leaves a held scope to its backstop, which idle() seals at once", async () => {
    const { store, scope, seq, stop, hinted, resolved } = await leftToHolder(2_000, "q"); // polls every 500 ms: none here
    expect(resolved()).toBe(false); // the hint waits for the backstop
    await seq.idle(); // seals the backstop now
    await hinted;
    expect(await sealedIds(store, scope)).toEqual(["q"]);
    await stop();
    await store.close();
  });

  // Q12
  it("a backstop due after the holder sealed its hint's commits resolves it without a seal of its own", async () => {
    const { store, hint, scope, clock, seq } = heldElsewhere();
    const stop = seq.start({ clock, sealWithinMs: 200 }); // polls every 50 ms; a backstop 100 ms after its window
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("s0", T - 5), draft("s1", T)]));
    let done = false;
    const hinted = hint(scope).then(() => void (done = true));
    clock.advance(20); // T + 20: the window leaves the scope to its holder; the backstop is due at T + 120
    await turns();
    clock.advance(30); // the poll at T + 50 sees s0 as the oldest unsealed entry
    await turns();
    expect(await sealScopeNow(store, crypto, scope)).toBe(2); // the holder seals s0 and s1
    // A commit of another process, stamped before the hint, lands unsealed.
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("s2", T + 1)]));
    clock.advance(50); // the poll at T + 100 sees s2 for the first time: older than the hint, so it waits
    await turns();
    expect(done).toBe(false);
    expect(await sealScopeNow(store, crypto, scope)).toBe(1); // the holder seals s2
    await store.transact((tx) => appendJournal(tx, crypto, scope, [draft("s3", T + 110)])); // not hinted here
    clock.advance(20); // T + 120: the backstop reads, finds nothing unsealed as old as its hint
    await hinted;
    await turns();
    expect(await sealedIds(store, scope)).toEqual(["s0", "s1", "s2"]); // s3 left to its holder: no seal here
    await stop();
    await store.close();
  });

  // Q13
  it("a later hint still unsealed at the first one's due time is sealed at its own due time", async () => {
    const { store, hint, scope: a, clock, seq, c } = heldElsewhere();
    const b = newScope();
    c.elsewhere.add(c.key(b));
    const stop = seq.start({ clock, sealWithinMs: 200 }); // polls every 50 ms; a hint's backstop 100 ms after its window
    const append = (scope: Scope, id: string, at: number): Promise<unknown> => store.transact((tx) => appendJournal(tx, crypto, scope, [draft(id, at)]));
    const hints: string[] = [];
    await append(a, "a0", T - 5);
    const hA1 = hint(a).then(() => void hints.push("A1"));
    clock.advance(20); // T + 20: the window leaves A to its holder; A1 due at T + 120
    await turns();
    clock.advance(30); // the poll at T + 50 sees a0
    await turns();
    clock.advance(5);
    await sealScopeNow(store, crypto, a); // the holder seals a0
    await append(a, "a1", T + 1); // another process's commit, stamped before A1
    clock.advance(5); // T + 60
    await append(a, "a2", T + 60);
    const hA2 = hint(a).then(() => void hints.push("A2"));
    clock.advance(20); // T + 80: A2 due at T + 180
    await turns();
    clock.advance(10); // T + 90
    await append(b, "b1", T + 90);
    const hB = hint(b).then(() => void hints.push("B"));
    clock.advance(10); // the poll at T + 100 sees a1, older than both of A's hints
    await turns();
    clock.advance(5);
    await sealScopeNow(store, crypto, a); // the holder seals a1 and a2
    await append(a, "a3", T + 70); // another late one: older than A2, not than A1
    clock.advance(5); // T + 110: B's window, B due at T + 210
    await turns();
    clock.advance(10); // T + 120: A1's due read resolves A1; A2 goes back to wait
    await hA1;
    await turns();
    expect(hints).toEqual(["A1"]);
    expect(await sealedIds(store, a)).toEqual(["a0", "a1", "a2"]); // no seal here yet
    clock.advance(30); // the poll at T + 150 sees a3 for the first time
    await turns();
    clock.advance(30); // T + 180: A2's due time (B's, at T + 210, goes with it: due within a quarter bound)
    await turns();
    expect(await sealedIds(store, a)).toEqual(["a0", "a1", "a2", "a3"]);
    await Promise.all([hA2, hB]);
    expect(hints.sort()).toEqual(["A1", "A2", "B"]);
    await stop();
    await store.close();
  });

  // Q14
  it("a due backstop whose read fails seals anyway", async () => {
    const { store, scope, clock, stop, hinted } = await leftToHolder(200, "f"); // polls every 50 ms; the backstop at T + 120
    failScopeReads.on = true; // the polls' reads fail too, so no poll resolves or seals it
    try {
      clock.advance(100); // T + 120: the backstop's read fails; it seals
      await hinted;
      expect(await sealedIds(store, scope)).toEqual(["f"]);
    } finally {
      failScopeReads.on = false;
    }
    await stop();
    await store.close();
  });

  // Q15
  it("a stop waits for a due backstop's read in flight, and its hint resolves with the seal", async () => {
    const { store, scope, clock, stop, hinted, resolved } = await leftToHolder(200, "w"); // polls every 50 ms; the backstop at T + 120
    failScopeReads.on = true; // the polls at T + 50 and T + 100 read nothing, so none seals or resolves it
    clock.advance(80);
    await turns();
    failScopeReads.on = false;
    let release!: () => void;
    holdScopeReads.until = new Promise<void>((r) => (release = r));
    let stopped = false;
    try {
      clock.advance(20); // T + 120: the backstop takes its hint and reads, held
      await turns();
      const stopping = stop().then(() => void (stopped = true));
      await turns();
      expect(stopped).toBe(false); // the stop waits for that read
      expect(resolved()).toBe(false);
      release();
      await stopping;
      // The read answered after the poll was gone: what it took is sealed before the stop resolves.
      expect(resolved()).toBe(true);
      await hinted;
      expect(await sealedIds(store, scope)).toEqual(["w"]);
    } finally {
      holdScopeReads.until = null;
      release();
    }
    await store.close();
  });

  // Q11
  it("a poll that finds a left scope sealed past its hint drops the backstop: no seal of its own", async () => {
    const { store, scope, clock, stop, hinted, resolved } = await leftToHolder(200, "r"); // polls every 50 ms; backstop at 120 ms
    expect(await sealScopeNow(store, crypto, scope)).toBe(1); // the holder seals it
    clock.advance(30); // the poll at 50 ms finds nothing unsealed: the backstop is dropped
    await hinted;
    expect(resolved()).toBe(true);
    expect(clock.pending()).toBe(1); // only the next poll's timer: no backstop left
    await stop();
    await store.close();
  });
});
