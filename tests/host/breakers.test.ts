/**
 * Circuit breakers held in the store (docs/host.md, "Circuit breakers"), on every store: shared
 * by every host and worker on the same storage, surviving a restart, checked before every step of
 * an attempt, and letting exactly one probe through after the cooldown across workers.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import fc from "fast-check";
import { checkBreaker, probeRecheckMs, PROBE_RECHECK_MS } from "../../src/core/breaker.js";
import { defineAction, defineConnector, type ConnectorContext, type ConnectorReply } from "../../src/core/action.js";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { createKeyring } from "../../src/core/keyring.js";
import { manualClock, type ManualClock } from "../../src/core/manual-clock.js";
import type { PolicyEngine } from "../../src/core/policy.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import type { Authority, Scope } from "../../src/core/types.js";
import { createHostCore, type Host } from "../../src/host/host.js";
import type { HostOptions } from "../../src/host/options.js";
import { systemRandom } from "../../src/node/clock.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { KEYS } from "../boundary/fixture.js";
import { faultStore } from "../helpers/fault-store.js";
import { freshDatabase } from "../helpers/pg.js";
import { fcRun } from "../helpers/seed.js";
import { until } from "../helpers/wait.js";
import { crypto } from "./fixture.js";

/** Storage that several store instances (hosts, processes) can open: the same file or database. */
interface Storage {
  name: string;
  /** A new store instance on the storage (memory: the one shared instance). */
  open(): Promise<Store>;
  /** Closes an instance (memory: kept, it is the storage). */
  close(s: Store): Promise<void>;
  cleanup(): Promise<void>;
}

function memoryStorage(): Storage {
  const store = memoryStore();
  return { name: "memory", open: async () => store, close: async () => undefined, cleanup: () => store.close() };
}

function sqliteStorage(): Storage {
  const dir = mkdtempSync(join(tmpdir(), "writ-breakers-"));
  return {
    name: "sqlite",
    open: async () => sqliteStore({ path: join(dir, "writ.db") }),
    close: (s) => s.close(),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function postgresStorage(): Promise<Storage> {
  const db = await freshDatabase();
  return { name: "postgres", open: async () => postgresStore({ url: db.url }, { max: 8 }), close: (s) => s.close(), cleanup: () => db.drop() };
}

const params = z.object({ n: z.number() });
const actions = [
  defineAction({ id: "only.b", version: "1", params, idempotent: true, steps: [{ name: "b", connector: "c", operation: "b" }] }),
  defineAction({
    id: "two.idem",
    version: "1",
    params,
    idempotent: true,
    steps: [
      { name: "a", connector: "c", operation: "a" },
      { name: "b", connector: "c", operation: "b" },
    ],
  }),
  defineAction({
    id: "two.once",
    version: "1",
    params,
    idempotent: false,
    steps: [
      { name: "a", connector: "c", operation: "a" },
      { name: "b", connector: "c", operation: "b" },
    ],
  }),
];

type Reply = ConnectorReply | ((ctx: ConnectorContext) => Promise<ConnectorReply>);

/** What the hosts of one test share: the scope, the clock, the connector's script and its calls. */
interface World {
  scope: Scope;
  clock: ManualClock;
  calls: ConnectorContext[];
  replies: Map<string, Reply>;
  hosts: Host[];
}

let n = 0;
function world(): World {
  return { scope: { tenantId: `brk${process.pid}x${++n}`, spaceId: "s" }, clock: manualClock(1_800_000_000_000), calls: [], replies: new Map(), hosts: [] };
}

const BREAKER = { failureThreshold: 2, cooldownMs: 10_000, probeTimeoutMs: 20_000 };

function hostOn(w: World, store: Store, over: Partial<HostOptions> = {}): Host {
  const op = (name: string) => async (ctx: ConnectorContext): Promise<ConnectorReply> => {
    w.calls.push(ctx);
    const r = w.replies.get(name) ?? { outcome: "success", externalRef: `ref-${name}-${w.calls.length}`, output: { step: name } };
    return typeof r === "function" ? r(ctx) : r;
  };
  const policy: PolicyEngine = {
    evaluate: async (input) => ({ result: "ALLOW", reasons: [`allow ${input.request.action}`], policyRef: "test:v1" }),
    acceptedPolicyRefs: () => ["test:v1"],
  };
  const host = createHostCore({
    store,
    actions,
    connectors: [defineConnector({ id: "c", operations: { a: op("a"), b: op("b") } })],
    policy,
    signingKey: KEYS.trusted,
    clock: w.clock,
    crypto,
    random: systemRandom,
    timeoutMs: 5000,
    retry: { maxAttempts: 1 },
    breaker: BREAKER,
    ...over,
  });
  w.hosts.push(host);
  return host;
}

async function grant(w: World, store: Store): Promise<void> {
  const a: Authority = { ...w.scope, authorityRef: "auth", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "alice" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };
  await store.transact((tx) => tx.putAuthority(w.scope, a));
}

function request(w: World, action: string) {
  return { ...w.scope, action, actionVersion: "1", actor: { type: "agent" as const, id: "bot" }, authorityRef: "auth", params: { n: 1 }, idempotencyKey: `key-${++n}` };
}

/** Opens c.b with `failureThreshold` transient failures through `host`. */
async function openB(w: World, host: Host): Promise<void> {
  w.replies.set("b", { outcome: "transient_failure", reason: "503" });
  for (let i = 0; i < BREAKER.failureThreshold; i++) {
    await host.submit(request(w, "only.b"));
    expect(await host.worker().runOnce()).toEqual(["failed"]);
  }
  w.replies.delete("b");
}

const callsOf = (w: World, op: string): number => w.calls.filter((c) => c.operation === op).length;

async function journalOk(store: Store, scope: Scope): Promise<void> {
  const v = await verifyStoredJournal(store, crypto, createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]), scope);
  expect(v.problems).toEqual([]);
}

const storages: Array<{ name: string; make: () => Promise<Storage> }> = [
  { name: "memory", make: async () => memoryStorage() },
  { name: "sqlite", make: async () => sqliteStorage() },
  { name: "postgres", make: postgresStorage },
];

for (const kind of storages) {
  describe(`circuit breakers on ${kind.name}`, () => {
    let storage: Storage;
    const opened: Store[] = [];
    const open = async (): Promise<Store> => {
      const s = await storage.open();
      await s.migrate();
      opened.push(s);
      return s;
    };
    // Fresh storage per test: workers claim across scopes, so one test's leftovers stay its own.
    beforeEach(async () => {
      storage = await kind.make();
    });
    afterEach(async () => {
      for (const s of opened.splice(0)) await storage.close(s).catch(() => undefined);
      await storage.cleanup();
    });

    // Invariant: a breaker one host opened refuses the call on another host instance (another store
    // instance on the same storage), and is still open for a host started after a restart.
    it("opened by one host is seen by another, and survives a restart", async () => {
      const w = world();
      const s1 = await open();
      await grant(w, s1);
      const h1 = hostOn(w, s1);
      await openB(w, h1);
      expect(callsOf(w, "b")).toBe(2);

      const s2 = await open();
      const h2 = hostOn(w, s2);
      expect((await h2.breakers(w.scope))[0]).toMatchObject({ connector: "c", operation: "b", state: "open", failures: 2, openUntil: w.clock.now() + BREAKER.cooldownMs });
      const { invocation } = await h2.submit(request(w, "only.b"));
      expect(await h2.worker().runOnce()).toEqual(["queued"]);
      expect(callsOf(w, "b")).toBe(2); // refused before the provider
      const q = await h2.get(w.scope, invocation.invocationId);
      expect(q).toMatchObject({ status: "queued", runAt: w.clock.now() + BREAKER.cooldownMs, lastError: "circuit open for c.b" });

      // Restart: every instance closed, a new one opened on the same file or database.
      await storage.close(s1);
      await storage.close(s2);
      const s3 = await open();
      const h3 = hostOn(w, s3);
      expect((await h3.breakers(w.scope))[0]?.state).toBe("open");
      w.clock.advance(BREAKER.cooldownMs);
      expect(await h3.worker().runOnce()).toEqual(["succeeded"]); // the probe, which succeeds
      expect(callsOf(w, "b")).toBe(3);
      expect((await h3.breakers(w.scope))[0]).toMatchObject({ state: "closed", failures: 0 });
      await journalOk(s3, w.scope);
    });

    // Invariant: the breaker is checked before every step, not only the first; an open breaker on
    // step 2 ends the attempt after step 1 (durable), step 2 never starts, and the invocation is
    // re-queued at step 2 and resumes there under a new decision, without repeating step 1.
    for (const action of ["two.idem", "two.once"]) {
      it(`checked before the second step of a two-step action (${action})`, async () => {
        const w = world();
        const store = await open();
        await grant(w, store);
        const host = hostOn(w, store);
        const { invocation } = await host.submit(request(w, action));
        // Step a runs first; while it runs, another caller's failures open c.b.
        w.replies.set("a", async () => {
          await openB(w, host);
          return { outcome: "success", externalRef: "ref-a", output: { step: "a" } };
        });
        // The nested runOnce calls above claim only their own (new) invocations: ours is running.
        const id = invocation.invocationId;
        expect(await host.worker({ batchSize: 1 }).runOnce()).toEqual(["queued"]);
        w.replies.delete("a");
        expect(w.calls.filter((c) => c.invocationId === id).map((c) => c.operation)).toEqual(["a"]); // step b never called
        const q = await host.get(w.scope, id);
        expect(q).toMatchObject({ status: "queued", nextStep: 1, runAt: w.clock.now() + BREAKER.cooldownMs, lastError: "circuit open for c.b" });
        const steps = await readCommitted(store, (tx) => tx.getSteps(w.scope, id));
        expect(steps.map((s) => [s.stepIndex, s.status])).toEqual([[0, "succeeded"]]);
        const attempts = await readCommitted(store, (tx) => tx.listAttempts(w.scope, { invocationId: id }));
        expect(attempts.map((a) => [a.state, a.reasonCode ?? null, a.stepIndex])).toEqual([["FAILED", "CIRCUIT_OPEN", 0]]);

        w.clock.advance(BREAKER.cooldownMs);
        expect(await host.worker().runOnce()).toEqual(["succeeded"]);
        const done = await host.get(w.scope, id);
        expect(done?.result).toEqual({ a: { step: "a" }, b: { step: "b" } });
        expect(w.calls.filter((c) => c.invocationId === id).map((c) => c.operation)).toEqual(["a", "b"]);
        const all = await readCommitted(store, (tx) => tx.listAttempts(w.scope, { invocationId: id }));
        expect(new Set(all.map((a) => a.decisionId)).size).toBe(2); // a new decision for the resumed attempt
        expect((await host.breakers(w.scope))[0]?.state).toBe("closed");
        await journalOk(store, w.scope);
      });
    }

    // Invariant: a breaker the store cannot answer for between steps fails closed: step b is not
    // called, step a's outcome is durable, the attempt ends CIRCUIT_OPEN with a reason that names
    // the read failure (not the store's error text), and the next claim resumes at step b.
    it("a breaker read that fails before a later step stops the attempt there", async () => {
      const w = world();
      const inner = await open();
      await grant(w, inner);
      let failing = false;
      const store = faultStore(inner, { failRead: (method, args) => failing && method === "getBreaker" && args[2] === "b" });
      const host = hostOn(w, store);
      const { invocation } = await host.submit(request(w, "two.once"));
      const id = invocation.invocationId;
      w.replies.set("a", async () => {
        failing = true; // the check before step b, after step a's reply, cannot read the breaker
        return { outcome: "success", externalRef: "ref-a", output: { step: "a" } };
      });
      expect(await host.worker().runOnce()).toEqual(["queued"]);
      failing = false;
      w.replies.delete("a");
      expect(w.calls.filter((c) => c.invocationId === id).map((c) => c.operation)).toEqual(["a"]);
      const q = await host.get(w.scope, id);
      expect(q).toMatchObject({ status: "queued", nextStep: 1 });
      expect(q?.lastError).toBe("circuit breaker for c.b could not be read (store error, logged); step b not started");
      expect(q!.runAt).toBeGreaterThan(w.clock.now());
      const attempts = await readCommitted(inner, (tx) => tx.listAttempts(w.scope, { invocationId: id }));
      expect(attempts.map((a) => [a.state, a.reasonCode ?? null, a.stepIndex])).toEqual([["FAILED", "CIRCUIT_OPEN", 0]]);

      w.clock.advance(q!.runAt - w.clock.now());
      expect(await host.worker().runOnce()).toEqual(["succeeded"]);
      expect(w.calls.filter((c) => c.invocationId === id).map((c) => c.operation)).toEqual(["a", "b"]);
      await journalOk(inner, w.scope);
    });

    // Invariant: after the cooldown exactly one probe goes through across workers on different
    // store instances; a call that finds the probe in flight is refused and re-queued.
    it("half-open: one probe across two workers", async () => {
      const w = world();
      const s1 = await open();
      const s2 = await open();
      await grant(w, s1);
      const h1 = hostOn(w, s1);
      const h2 = hostOn(w, s2);
      await openB(w, h1);
      w.clock.advance(BREAKER.cooldownMs);

      let answer: (r: ConnectorReply) => void = () => undefined;
      w.replies.set("b", () => new Promise<ConnectorReply>((resolve) => (answer = resolve)));
      await h1.submit(request(w, "only.b"));
      const probing = h1.worker().runOnce();
      await until(() => callsOf(w, "b") === 3, "the probe's call");
      expect((await h2.breakers(w.scope))[0]).toMatchObject({ state: "half_open", probeUntil: w.clock.now() + BREAKER.probeTimeoutMs });

      const { invocation: second } = await h2.submit(request(w, "only.b"));
      expect(await h2.worker().runOnce()).toEqual(["queued"]);
      expect(callsOf(w, "b")).toBe(3); // refused: the probe is in flight
      // Refused for a short recheck (the probe just started), not until its slot expires.
      expect(await h2.get(w.scope, second.invocationId)).toMatchObject({ status: "queued", runAt: w.clock.now() + PROBE_RECHECK_MS, lastError: "circuit half-open for c.b: another call is probing" });

      answer({ outcome: "success", externalRef: "ref-probe" });
      expect(await probing).toEqual(["succeeded"]);
      expect((await h2.breakers(w.scope))[0]).toMatchObject({ state: "closed", failures: 0 });
      w.replies.delete("b");
      // The probe's success frees the held call at its recheck, a cooldown and a probe slot early.
      w.clock.advance(PROBE_RECHECK_MS);
      expect(await h2.worker().runOnce()).toEqual(["succeeded"]);
      expect(callsOf(w, "b")).toBe(4);
    });

    // Invariant: a probe that failed opens the breaker again for a new cooldown; a probe slot that
    // was never answered (its worker died) lets one other call probe after probeTimeoutMs.
    it("a failed probe reopens; an abandoned probe slot is replaced after probeTimeoutMs", async () => {
      const w = world();
      const store = await open();
      await grant(w, store);
      const host = hostOn(w, store);
      await openB(w, host);
      w.clock.advance(BREAKER.cooldownMs);
      w.replies.set("b", { outcome: "transient_failure", reason: "still 503" });
      await host.submit(request(w, "only.b"));
      expect(await host.worker().runOnce()).toEqual(["failed"]);
      expect((await host.breakers(w.scope))[0]).toMatchObject({ state: "open", openUntil: w.clock.now() + BREAKER.cooldownMs });

      // A worker claims the probe slot and dies before it calls: the slot is held, then expires.
      w.clock.advance(BREAKER.cooldownMs);
      const key = { ...w.scope, connector: "c", operation: "b" };
      const policy = { ...BREAKER };
      expect((await checkBreaker(store, key, "dead-worker", w.clock.now(), policy)).gate.kind).toBe("probe");
      w.replies.delete("b");
      const { invocation } = await host.submit(request(w, "only.b"));
      expect(await host.worker().runOnce()).toEqual(["queued"]);
      w.clock.advance(BREAKER.probeTimeoutMs);
      expect(await host.worker().runOnce()).toEqual(["succeeded"]);
      expect((await host.get(w.scope, invocation.invocationId))?.status).toBe("succeeded");
      expect((await host.breakers(w.scope))[0]?.state).toBe("closed");
    });
  });
}

// Invariant: bad breaker options are refused at construction with an error naming the option.
describe("breaker options", () => {
  const base = (): HostOptions => ({
    store: memoryStore(),
    actions,
    connectors: [],
    policy: { evaluate: async () => ({ result: "ALLOW", reasons: [], policyRef: "p" }), acceptedPolicyRefs: () => ["p"] },
    signingKey: KEYS.trusted,
    clock: manualClock(0),
    crypto,
    random: systemRandom,
  });
  it.each([
    [{ failureThreshold: 0 }, "breaker.failureThreshold must be a number >= 1"],
    [{ failureThreshold: 1.5 }, "breaker.failureThreshold must be an integer"],
    [{ failureThreshold: "3" }, "breaker.failureThreshold must be a number"],
    [{ cooldownMs: 0 }, "breaker.cooldownMs must be a number >= 1"],
    [{ cooldownMs: 2.5 }, "breaker.cooldownMs must be an integer"],
    [{ cooldownMs: Number.POSITIVE_INFINITY }, "breaker.cooldownMs must be a number"],
    [{ probeTimeoutMs: 1000 }, "breaker.probeTimeoutMs (1000) must be at least timeoutMs (30000)"],
  ])("%j is refused", (breaker, message) => {
    expect(() => createHostCore({ ...base(), breaker: breaker as HostOptions["breaker"] })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining(message) }));
  });
  it("defaults: 5 failures, 30 s cooldown, probe slot of timeoutMs + 10 s", () => {
    const h = createHostCore({ ...base(), timeoutMs: 2000 });
    expect(h.context.r.breaker).toEqual({ failureThreshold: 5, cooldownMs: 30_000, probeTimeoutMs: 12_000 });
  });
});

// Invariants of the recheck a call refused by a live probe gets (pure, random probe windows):
// it is positive, never past the probe's slot or a cooldown from now, at least PROBE_RECHECK_MS
// when those allow it, and a call refused again and again through one probe's whole slot looks
// only O(log(probeTimeoutMs / PROBE_RECHECK_MS)) times.
describe("probe recheck", () => {
  it("bounded, short for a young probe, logarithmic over a probe's slot", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120_000 }), fc.integer({ min: 1, max: 600_000 }), fc.double({ min: 0, max: 1, noNaN: true }), (cooldownMs, probeTimeoutMs, at) => {
        const p = { failureThreshold: 1, cooldownMs, probeTimeoutMs };
        const probeUntil = 1_000_000 + probeTimeoutMs;
        const now = Math.min(probeUntil - 1, 1_000_000 + Math.floor(at * probeTimeoutMs));
        const r = probeRecheckMs(probeUntil, now, p);
        expect(r).toBeGreaterThanOrEqual(1);
        expect(r).toBeLessThanOrEqual(Math.max(1, Math.min(probeUntil - now, cooldownMs)));
        expect(r).toBeGreaterThanOrEqual(Math.min(PROBE_RECHECK_MS, probeUntil - now, cooldownMs));
        // A call refused from the probe's start to its slot's end.
        let t = 1_000_000;
        let looks = 0;
        while (t < probeUntil) {
          t += probeRecheckMs(probeUntil, t, p);
          looks += 1;
        }
        const bound = Math.ceil(Math.log2(Math.max(2, probeTimeoutMs / PROBE_RECHECK_MS))) + 2 + Math.ceil(probeTimeoutMs / cooldownMs);
        expect(looks).toBeLessThanOrEqual(bound);
      }),
      fcRun("breakers", "probe recheck", 500),
    );
  });
});
