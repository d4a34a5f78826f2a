/**
 * Data at rest (docs/security.md). Invariants:
 * - whatever command runs first (`writ migrate`, `writ api-keys create`, `writ keys generate`), the
 *   state directory is 0700 and the database, its WAL/SHM and every key file 0600;
 * - a signing key file or data key file readable by others is refused at start with a clear error;
 * - on every store, params and outputs an action marks sensitive are sealed before they are stored:
 *   the SQLite file (and WAL), the PostgreSQL tables and the memory store's rows hold no sensitive
 *   value in clear; the connector still sees the clear value, the run succeeds, answers stay
 *   redacted, and a sealed value moved to another invocation does not open.
 */
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { defineConfig } from "../../src/config/define-config.js";
import { WritError } from "../../src/core/errors.js";
import { SEALED_FIELD, sealedStore } from "../../src/core/sealing.js";
import type { Store } from "../../src/core/store.js";
import type { Json } from "../../src/core/types.js";
import { localDataKey } from "../../src/runtime/data-key-file.js";
import { localDataKey as localDataKeyOf } from "../../src/node/index.js";
import { createHost, defineAction, functionPolicy, generateSigningKey, sealJournalNow } from "../../src/index.js";
import { z } from "zod";
import { openReads } from "../../src/runtime/reads.js";
import { openRuntime } from "../../src/runtime/runtime.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { postgresStore } from "../../src/stores/postgres/index.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { step } from "../../src/stores/conformance/fixtures.js";
import { faultStore } from "../helpers/fault-store.js";
import { freshDatabase } from "../helpers/pg.js";
import { grantAuthority, makeHostBench } from "../host/fixture.js";
import { workspace, writ } from "../cli/helpers.js";
import { startReceiver } from "../host/notify-fixture.js";
import { untilRead } from "../helpers/wait.js";

const CARD = "4111-SECRET-CARD-9731";
const TOKEN = "tok-SECRET-OUTPUT-5520";
const mode = (p: string): number => statSync(p).mode & 0o777;
const dirs: string[] = [];
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), "writ-rest-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Counts the calls of `store[method]` from now on; returns the count's reader. */
function countCalls(store: Store, method: "migrate" | "close"): () => number {
  let n = 0;
  const original = store[method].bind(store);
  store[method] = async () => {
    n++;
    await original();
  };
  return () => n;
}

describe("file modes after each first command", () => {
  // (`writ ls` first creates nothing at all: a read never creates a store; tests/mcp/first-hour.test.ts.)
  for (const first of [["migrate"], ["api-keys", "create", "--role", "submit"], ["keys", "generate"]]) {
    it(`writ ${first.join(" ")} first`, async () => {
      const ws = workspace();
      try {
        const r = await writ(ws.dir, first);
        expect(r.code, r.stderr).toBe(0);
        const state = join(ws.dir, ".writ");
        expect(mode(state)).toBe(0o700);
        const files: string[] = [];
        const walk = (d: string): void => {
          for (const f of readdirSync(d)) {
            const p = join(d, f);
            if (statSync(p).isDirectory()) {
              expect(mode(p), p).toBe(0o700);
              walk(p);
            } else files.push(p);
          }
        };
        walk(state);
        const secret = files.filter((f) => /writ\.db(-wal|-shm)?$|private\.json$|data-key\.json$/.test(f));
        expect(secret.length).toBeGreaterThan(0);
        for (const f of secret) expect(mode(f), f).toBe(0o600);
      } finally {
        ws.cleanup();
      }
    });
  }

  it("a signing key or data key file readable by others is refused at start", async () => {
    const dir = tmp();
    const config = defineConfig({ store: { kind: "memory" }, keys: { dir: join(dir, "keys") }, actions: [], connectors: [], policy: { cedar: { policies: "" } } });
    const rt = await openRuntime(config, { cwd: dir });
    await rt.close();
    const priv = readdirSync(join(dir, "keys")).find((f) => f.endsWith(".private.json"))!;
    chmodSync(join(dir, "keys", priv), 0o644);
    await expect(openRuntime(config, { cwd: dir })).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "KEY_ERROR" && /readable or writable by others/.test(e.message));
    chmodSync(join(dir, "keys", priv), 0o600);
    chmodSync(join(dir, "keys", "data-key.json"), 0o640);
    await expect(openRuntime(config, { cwd: dir })).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "KEY_ERROR" && /data key file/.test(e.message));
  });

  // Invariant: the read-only runtime (`writ ls`, `writ get`) refuses the same data key file, before
  // it touches the store (nothing migrated, nothing left to close).
  it("the read-only runtime refuses a data key file readable by others before it uses the store", async () => {
    const dir = tmp();
    const config = defineConfig({ store: { kind: "sqlite", path: "writ.db" }, keys: { dir: join(dir, "keys") }, actions: [], connectors: [], policy: { cedar: { policies: "" } } });
    await (await openReads(config, { cwd: dir })).close();
    chmodSync(join(dir, "keys", "data-key.json"), 0o640);
    const inner = sqliteStore({ path: join(dir, "writ.db") });
    const migrated = countCalls(inner, "migrate");
    await expect(openReads({ ...config, store: { kind: "custom", store: inner } }, { cwd: dir })).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "KEY_ERROR" && /data key file/.test(e.message));
    expect(migrated()).toBe(0);
    await inner.close();
    chmodSync(join(dir, "keys", "data-key.json"), 0o600);
    await (await openReads(config, { cwd: dir })).close();
  });

  // Invariant: a library host with an action that marks values sensitive and no data key refuses
  // to start (naming the action and its pointers) instead of storing them in clear silently;
  // allowCleartextSensitive: true or a dataKey lets it start; an action without sensitive
  // pointers needs neither.
  it("createHost refuses a sensitive action without a data key unless cleartext is allowed", async () => {
    const action = defineAction({ id: "cards.charge", params: z.object({ card: z.string() }), sensitive: ["/params/card"], version: "1", idempotent: false, steps: [{ name: "charge", connector: "noop", operation: "charge" }] });
    const plain = defineAction({ id: "notes.add", params: z.object({ text: z.string() }), version: "1", idempotent: false, steps: [{ name: "add", connector: "noop", operation: "add" }] });
    const base = { store: memoryStore(), connectors: [], policy: functionPolicy("p", () => "ALLOW"), signingKey: generateSigningKey({ kid: "k" }) };
    expect(() => createHost({ ...base, actions: [plain, action] })).toThrow(
      expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringMatching(/action cards\.charge marks \/params\/card sensitive, but no dataKey is given.*allowCleartextSensitive: true/) }),
    );
    expect(() => createHost({ ...base, actions: [action], allowCleartextSensitive: "yes" as unknown as boolean })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringContaining("allowCleartextSensitive must be a boolean") }));
    expect(createHost({ ...base, actions: [action], allowCleartextSensitive: true })).toBeDefined();
    expect(createHost({ ...base, actions: [action], dataKey: localDataKeyOf(join(tmp(), "data-key.json")) })).toBeDefined();
    expect(createHost({ ...base, actions: [plain] })).toBeDefined();
  });

  // Invariant: a runtime whose host refuses an option (after the store opened) closes that store
  // before the error reaches the caller, and the error names the option.
  it("openRuntime closes its store when the host refuses an option", async () => {
    const dir = tmp();
    const inner = sqliteStore({ path: join(dir, "writ.db") });
    const closed = countCalls(inner, "close");
    const config = defineConfig({ store: { kind: "custom", store: inner }, keys: { dir: join(dir, "keys") }, actions: [], connectors: [], policy: { cedar: { policies: "" } }, host: { recoveryMaxAttempts: 0 } });
    await expect(openRuntime(config, { cwd: dir })).rejects.toSatisfy((e: unknown) => e instanceof WritError && e.code === "INVALID_OPTION" && /recoveryMaxAttempts/.test(e.message));
    expect(closed()).toBe(1);
  });
});

interface Rest {
  name: string;
  open(): Promise<{ store: Store; raw: () => Promise<string>; close: () => Promise<void> }>;
}

const rests: Rest[] = [
  {
    name: "sqlite",
    async open() {
      const dir = tmp();
      const path = join(dir, "writ.db");
      const store = sqliteStore({ path });
      await store.migrate();
      return {
        store,
        raw: async () => [path, `${path}-wal`].filter((f) => existsSync(f)).map((f) => readFileSync(f).toString("latin1")).join(""),
        close: () => store.close(),
      };
    },
  },
  {
    name: "postgres",
    async open() {
      const db = await freshDatabase();
      const store = postgresStore({ url: db.url });
      await store.migrate();
      return {
        store,
        async raw() {
          const c = new pg.Client({ connectionString: db.url });
          await c.connect();
          const tables = (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map((r) => r.t);
          let all = "";
          for (const t of tables) all += (await c.query<{ j: string }>(`SELECT coalesce(string_agg(row_to_json(x)::text, ''), '') AS j FROM "${t}" x`)).rows[0]!.j;
          await c.end();
          return all;
        },
        async close() {
          await store.close();
          await db.drop();
        },
      };
    },
  },
  {
    name: "memory",
    async open() {
      const store = memoryStore();
      await store.migrate();
      // The memory store's "disk" is its rows: read them through the store itself, unsealed.
      return { store, raw: async () => JSON.stringify(await store.transact(async (tx) => ({ inv: await tx.listInvocations({ tenantId: lastScope!.tenantId, spaceId: "s" }), steps: await Promise.all((await tx.listInvocations({ tenantId: lastScope!.tenantId, spaceId: "s" })).map((i) => tx.getSteps({ tenantId: lastScope!.tenantId, spaceId: "s" }, i.invocationId))) }))), close: () => store.close() };
    },
  },
];
let lastScope: { tenantId: string } | null = null;
/** What a test started beside its store (a receiver), stopped when `onStore` ends. */
const onClose: (() => Promise<void>)[] = [];

/** Runs `fn` on a fresh store of `r`, then stops what it registered in `onClose` and closes the store. */
async function onStore(r: Rest, fn: (store: Store) => Promise<void>): Promise<void> {
  const { store, close } = await r.open();
  try {
    await fn(store);
  } finally {
    for (const f of onClose.splice(0)) await f();
    await close();
  }
}

/** Two hosts on one store, each with a data key of its own; authority granted in the holder's scope. */
async function twoKeys(store: Store, strangerStore: Store = store): Promise<{ holder: ReturnType<typeof makeHostBench>; stranger: ReturnType<typeof makeHostBench> }> {
  const holder = makeHostBench(store, { dataKey: localDataKey(join(tmp(), "data-key.json")) });
  const stranger = makeHostBench(strangerStore, { dataKey: localDataKey(join(tmp(), "data-key.json")) });
  lastScope = holder.scope;
  await grantAuthority(holder);
  return { holder, stranger };
}

for (const r of rests) {
  describe(`sensitive values at rest on ${r.name}`, () => {
    it("are sealed in the store, clear to the connector, redacted in answers", async () => {
      const { store, raw, close } = await r.open();
      try {
        const dataKey = localDataKey(join(tmp(), "data-key.json"));
        const b = makeHostBench(store, { dataKey });
        lastScope = b.scope;
        await grantAuthority(b);
        b.replies.set("a", { outcome: "success", externalRef: "pay-1", output: { token: TOKEN, last4: "9731" } });
        const { invocation } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
        expect(await b.host.worker().runOnce()).toEqual(["succeeded"]);
        expect((b.calls[0]!.input as { card: string }).card).toBe(CARD);
        const shown = await b.host.get(b.scope, invocation.invocationId);
        expect(JSON.stringify(shown)).not.toContain(CARD);
        const text = await raw();
        expect(text.length).toBeGreaterThan(0);
        expect(text).toContain("secret.pay");
        expect(text).not.toContain(CARD);
        expect(text).not.toContain(TOKEN);
        // The rows hold envelopes; the sealing store opens them; one moved elsewhere does not open.
        const inner = await store.transact((tx) => tx.getInvocation(b.scope, invocation.invocationId));
        const sealed = (inner!.request.params as Record<string, unknown>).card as Record<string, string>;
        expect(typeof sealed[SEALED_FIELD]).toBe("string");
        const opened = await sealedStore(store, dataKey, new Map([["secret.pay", ["/params/card"]]])).transact((tx) => tx.getInvocation(b.scope, invocation.invocationId));
        expect(opened!.request.params.card).toBe(CARD);
        const { invocation: other } = await b.host.submit(b.request({ action: "secret.pay", params: { n: 2, card: "other" } }));
        const moved = { ...(await store.transact((tx) => tx.getInvocation(b.scope, other.invocationId)))! };
        moved.request = { ...moved.request, params: { ...moved.request.params, card: sealed } };
        await store.transact((tx) => tx.updateInvocation(b.scope, moved));
        await expect(sealedStore(store, dataKey, new Map([["secret.pay", ["/params/card"]]])).transact((tx) => tx.getInvocation(b.scope, other.invocationId))).rejects.toThrow(/could not be opened/);
        // The host's reads are redacted and need no value opened: the moved one is answered, masked.
        expect((await b.host.get(b.scope, other.invocationId))!.request.params).toEqual({ n: 2, card: "[REDACTED]" });
      } finally {
        await close();
      }
    });

    // Invariants: a claim that takes an invocation this process cannot open (sealed under a data
    // key it does not hold) still runs the others it claimed; the one it cannot open is handed
    // back unrun (no connector call), queued with why, its claim not counted as an attempt, its
    // values left sealed as they were; a process holding the key then runs it with the clear value.
    it("an invocation sealed under a key this process does not hold is handed back unrun; the rest of its claim runs", async () => {
      await onStore(r, async (store) => {
        const { holder, stranger } = await twoKeys(store);
        const { invocation: secret } = await holder.host.submit(holder.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
        const plain = [];
        for (const n of [2, 3]) plain.push((await holder.host.submit(holder.request({ action: "one.idem", params: { n } }))).invocation);
        const sealedBefore = (await store.transact((tx) => tx.getInvocation(holder.scope, secret.invocationId)))!.request.params.card;

        const results = await stranger.host.worker({ batchSize: 10 }).runOnce();
        expect([...results].sort()).toEqual(["queued", "succeeded", "succeeded"]);
        expect(stranger.calls).toHaveLength(2);
        expect(JSON.stringify(stranger.calls.map((c) => c.input))).not.toContain("SECRET");
        for (const p of plain) expect((await store.transact((tx) => tx.getInvocation(holder.scope, p.invocationId)))!.status).toBe("succeeded");
        const back = (await store.transact((tx) => tx.getInvocation(holder.scope, secret.invocationId)))!;
        expect(back.status).toBe("queued");
        expect(back.attemptCount).toBe(0);
        expect(back.leaseOwner).toBeUndefined();
        expect(back.runAt).toBe(stranger.clock.now() + 30_000);
        expect(back.lastError).toMatch(/could not be opened.*handed back for a process that holds the key/);
        expect(back.request.params.card).toEqual(sealedBefore);

        // Not claimable before its time, then the holder of the key runs it.
        expect(await holder.host.worker().runOnce()).toEqual([]);
        holder.clock.advance(30_000);
        expect(await holder.host.worker().runOnce()).toEqual(["succeeded"]);
        expect(holder.calls.map((c) => (c.input as { card?: string }).card)).toEqual([CARD]);
        const done = (await store.transact((tx) => tx.getInvocation(holder.scope, secret.invocationId)))!;
        expect(done.attemptCount).toBe(1);

        // A process without the key cancels one it cannot open; its value stays sealed as it was.
        const { invocation: again } = await holder.host.submit(holder.request({ action: "secret.pay", params: { n: 4, card: CARD } }));
        const sealedAgain = (await store.transact((tx) => tx.getInvocation(holder.scope, again.invocationId)))!.request.params.card;
        stranger.clock.advance(30_000); // its clock to the holder's, where the new invocation is due
        expect(await stranger.host.worker().runOnce()).toEqual(["queued"]);
        const cancelled = await stranger.host.cancel(holder.scope, again.invocationId, { type: "user", id: "ops" });
        expect(cancelled.status).toBe("cancelled");
        expect(JSON.stringify(cancelled)).not.toContain(CARD);
        const stored = (await store.transact((tx) => tx.getInvocation(holder.scope, again.invocationId)))!;
        expect(stored.status).toBe("cancelled");
        expect(stored.request.params.card).toEqual(sealedAgain);
      });
    });

    // Invariants: a hand-back whose write fails changes nothing (the transaction rolls back): the
    // invocation stays leased to the process without the key, nothing is called, its value stays
    // sealed; once that lease lapses, a process holding the key runs it with the clear value.
    it("a hand-back whose write fails: nothing is called, and a process holding the key runs it after the lease", async () => {
      await onStore(r, async (store) => {
        const failing = faultStore(store, { failWhen: (c) => c.method === "updateInvocation" && ((c.args[1] as { lastError?: string }).lastError ?? "").includes("handed back") });
        const { holder, stranger } = await twoKeys(store, failing);
        const { invocation: secret } = await holder.host.submit(holder.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
        expect(await stranger.host.worker().runOnce()).toEqual(["abandoned"]);
        expect(failing.fault()?.method).toBe("updateInvocation");
        expect(stranger.calls).toHaveLength(0);
        const held = (await store.transact((tx) => tx.getInvocation(holder.scope, secret.invocationId)))!;
        expect(held).toMatchObject({ status: "running", attemptCount: 1 });
        expect(JSON.stringify(held)).not.toContain(CARD);
        holder.clock.advance(31_000); // past the stranger's 30-s lease
        expect(await holder.host.worker().runOnce()).toEqual(["succeeded"]);
        expect(holder.calls.map((c) => (c.input as { card?: string }).card)).toEqual([CARD]);
      });
    });

    // Invariants: a worker's heartbeat needs no sealed value opened. While it holds the lease of an
    // invocation it abandoned and cannot open (its hand-back failed), each beat still commits: the
    // lease of the invocation it is running is extended, the abandoned one keeps its expiry (so it
    // lapses for recovery); the running one then succeeds.
    it("a heartbeat goes on while the worker holds an abandoned invocation it cannot open", async () => {
      await onStore(r, async (store) => {
        const failing = faultStore(store, { failWhen: (c) => c.method === "updateInvocation" && ((c.args[1] as { lastError?: string }).lastError ?? "").includes("handed back") });
        const { holder, stranger } = await twoKeys(store, failing);
        let release!: () => void;
        const gate = new Promise<void>((res) => (release = res));
        stranger.replies.set("a", async () => {
          await gate;
          return { outcome: "success", externalRef: "slow-1" };
        });
        const { invocation: secret } = await holder.host.submit(holder.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
        const { invocation: plain } = await holder.host.submit(holder.request({ action: "one.idem", params: { n: 2 } }));
        const read = async (id: string) => (await store.transact((tx) => tx.getInvocation(holder.scope, id)))!;
        const worker = stranger.host.worker({ batchSize: 10, concurrency: 2, leaseMs: 3_000, heartbeatMs: 1_000, pollMs: 200 });
        worker.start();
        try {
          // One in flight: the secret one's processing has ended (abandoned, registered as such before it
          // leaves the count), the plain one is in its connector call.
          await untilRead(async () => failing.fault() !== null && stranger.calls.length === 1 && worker.inFlight() === 1, "the hand-back failed and the plain invocation is in its call");
          const secretExpiry = (await read(secret.invocationId)).leaseExpiresAt!;
          const first = (await read(plain.invocationId)).leaseExpiresAt!;
          // Up to two heartbeats, never to the end of the lease: the plain lease must move.
          await untilRead(async () => {
            if ((await read(plain.invocationId)).leaseExpiresAt! > first) return true;
            if (stranger.clock.now() + 100 < first - 500) stranger.clock.advance(100);
            return false;
          }, "a heartbeat extended the running invocation's lease");
          const kept = await read(secret.invocationId);
          expect(kept).toMatchObject({ status: "running", leaseExpiresAt: secretExpiry });
          expect(JSON.stringify(kept)).not.toContain(CARD);
          release();
          await untilRead(async () => (await read(plain.invocationId)).status === "succeeded", "the running invocation succeeded");
        } finally {
          release();
          await worker.stop();
        }
        expect(stranger.calls).toHaveLength(1);
      });
    });

    // Invariants: what a process does with an invocation without running it needs no sealed value
    // opened, so one it cannot open (sealed under another key) stops none of it: `get` and `list`
    // answer it redacted; the overdue sweep moves it to reconciliation, its value left sealed as it
    // was (and the sweep goes on to the next); the notification fan-out writes its events, params
    // masked, and goes on past it.
    it("reads, the overdue sweep and notifications go on past an invocation this process cannot open", async () => {
      await onStore(r, async (store) => {
        const { holder, stranger } = await twoKeys(store);
        const rx = await startReceiver();
        onClose.push(() => rx.close());
        const { subscription } = await stranger.host.notifications.create(holder.scope.tenantId, { url: rx.url, events: ["reconciliation.opened"] });
        holder.replies.set("a", { outcome: "accepted", externalRef: "op-unopened" });
        const { invocation: parked } = await holder.host.submit(holder.request({ action: "secret.long", params: { n: 1, card: CARD } }));
        expect(await holder.host.worker().runOnce()).toEqual(["parked"]);
        holder.replies.set("a", { outcome: "accepted", externalRef: "op-plain" });
        const { invocation: plain } = await holder.host.submit(holder.request({ action: "long.one", params: { n: 2 } }));
        expect(await holder.host.worker().runOnce()).toEqual(["parked"]);
        const sealedBefore = (await store.transact((tx) => tx.getInvocation(holder.scope, parked.invocationId)))!.request.params.card;

        const shown = await stranger.host.get(holder.scope, parked.invocationId);
        expect(shown!.request.params).toEqual({ n: 1, card: "[REDACTED]" });
        expect((await stranger.host.list(holder.scope)).map((i) => i.invocationId).sort()).toEqual([parked.invocationId, plain.invocationId].sort());

        stranger.clock.advance(61_000); // past both deadlines
        expect((await stranger.host.sweep()).overdue).toBe(2);
        for (const inv of [parked, plain]) expect((await store.transact((tx) => tx.getInvocation(holder.scope, inv.invocationId)))!.status).toBe("reconciliation_required");
        const moved = (await store.transact((tx) => tx.getInvocation(holder.scope, parked.invocationId)))!;
        expect(moved.request.params.card).toEqual(sealedBefore);
        expect(JSON.stringify(moved)).not.toContain(CARD);

        await sealJournalNow(store);
        await stranger.host.notifications.dispatchOnce();
        const written = await stranger.host.notifications.deliveries(holder.scope.tenantId);
        const bodies = written.filter((d) => d.subscriptionId === subscription.subscriptionId).map((d) => JSON.parse(d.body) as { type: string; data: { invocationId: string; params?: Json } });
        expect(bodies.map((b) => b.data.invocationId).sort()).toEqual([parked.invocationId, plain.invocationId].sort());
        expect(JSON.stringify(written)).not.toContain(CARD);
        expect(bodies.find((b) => b.data.invocationId === parked.invocationId)!.data.params).toEqual({ n: 1, card: "[REDACTED]" });
        expect(rx.requests.map((q) => q.body).join("")).toContain(parked.invocationId);
      });
    });

    // Invariants: deciding an approval moves only the invocation's status, so a process that cannot
    // open the invocation approves it (queued, its value sealed as it was) and its expiry sweep
    // denies one whose approval ran out, and goes on to the rest.
    it("approvals of an invocation this process cannot open are decided and expire", async () => {
      await onStore(r, async (store) => {
        const { holder, stranger } = await twoKeys(store);
        holder.verdict.current = "REQUIRE_APPROVAL";
        const ids: string[] = [];
        for (const n of [1, 2]) ids.push((await holder.host.submit(holder.request({ action: "secret.pay", params: { n, card: CARD } }))).invocation.invocationId);
        expect(await holder.host.worker({ batchSize: 10 }).runOnce()).toEqual(["awaiting_approval", "awaiting_approval"]);
        const before = await Promise.all(ids.map(async (id) => (await store.transact((tx) => tx.getInvocation(holder.scope, id)))!));
        const approver = { actor: { type: "user" as const, id: "alice" }, roles: ["approve"] };
        expect((await stranger.host.approvals.approve(holder.scope, before[0]!.approvalId!, approver)).status).toBe("approved");
        stranger.clock.advance(86_400_001);
        expect((await stranger.host.sweep()).approvalsExpired).toBe(1);
        const after = await Promise.all(ids.map(async (id) => (await store.transact((tx) => tx.getInvocation(holder.scope, id)))!));
        expect(after.map((i) => i.status)).toEqual(["queued", "denied"]);
        for (const [i, inv] of after.entries()) expect(inv.request.params.card).toEqual(before[i]!.request.params.card);
        expect(JSON.stringify(after)).not.toContain(CARD);
      });
    });

    // Invariant: an early completion sealed whole under a key this process does not hold is listed
    // (without its result, as every early completion) and expired by the sweep, its result left
    // sealed as stored.
    it("early completions sealed under another key are listed and expire", async () => {
      await onStore(r, async (store) => {
        const { holder, stranger } = await twoKeys(store);
        // Arrives while a call is in flight (so it is kept as early), for a reference that call never returns.
        let early: unknown = null;
        holder.replies.set("a", async () => {
          early = await holder.host.complete(holder.scope, { connector: "c", externalRef: "op-never", outcome: "success", result: { token: TOKEN } }).catch((e: unknown) => e);
          return { outcome: "accepted", externalRef: "op-other" };
        });
        await holder.host.submit(holder.request({ action: "secret.long", params: { n: 1, card: CARD } }));
        expect(await holder.host.worker().runOnce()).toEqual(["parked"]);
        expect(early).toEqual({ disposition: "early" });
        const listed = await stranger.host.earlyCompletions(holder.scope);
        expect(listed.map((c) => [c.externalRef, c.disposition])).toEqual([["op-never", "early"]]);
        expect(JSON.stringify(listed)).not.toContain(TOKEN);
        stranger.clock.advance(604_800_001);
        expect((await stranger.host.sweep()).earlyExpired).toBe(1);
        const [stored] = await store.transact((tx) => tx.listCompletions(holder.scope, "c", "op-never"));
        expect(stored!.disposition).toBe("expired");
        expect(typeof (stored!.result as Record<string, unknown>)[SEALED_FIELD]).toBe("string");
        expect(JSON.stringify(stored)).not.toContain(TOKEN);
      });
    });

    // Invariant: a step output this process cannot open is handed back like an unopenable param,
    // whether the claim read the steps (PostgreSQL's claim with its prepare read) or the worker
    // reads them after the claim (SQLite, memory): queued, not counted, nothing called.
    it("a step output sealed under a key this process does not hold is handed back unrun", async () => {
      await onStore(r, async (store) => {
        const { holder, stranger } = await twoKeys(store);
        // An envelope only the holder's key opens (bound to its own place, so nothing opens it elsewhere).
        const { invocation: theirs } = await holder.host.submit(holder.request({ action: "secret.pay", params: { n: 1, card: CARD } }));
        const envelope = (await store.transact((tx) => tx.getInvocation(holder.scope, theirs.invocationId)))!.request.params.card;
        await holder.host.cancel(holder.scope, theirs.invocationId, { type: "user", id: "ops" });
        // The stranger's own invocation (its params sealed under its own key), with a failed first
        // attempt whose step output holds that envelope.
        const { invocation: mine } = await stranger.host.submit(holder.request({ action: "secret.pay", params: { n: 2, card: "4000-OWN" } }));
        await store.transact((tx) => tx.putStep(holder.scope, { ...step(holder.scope, mine.invocationId, 0, { status: "failed", stepName: "a", connector: "c" }), output: { token: envelope as Json } }));
        // A second one past its recovery budget: the read of its checkpoints, before any call,
        // meets the same envelope (on SQLite and memory first there, not at the claim).
        const { invocation: spent } = await stranger.host.submit(holder.request({ action: "secret.pay", params: { n: 3, card: "4000-OWN" } }));
        await store.transact(async (tx) => {
          await tx.putStep(holder.scope, { ...step(holder.scope, spent.invocationId, 0, { status: "failed", stepName: "a", connector: "c" }), output: { token: envelope as Json } });
          const cur = (await tx.getInvocation(holder.scope, spent.invocationId))!;
          await tx.updateInvocation(holder.scope, { ...cur, attemptCount: 99 });
        });
        // A third that compensates: the compensation's read of the steps comes before any undo call.
        const { invocation: comp } = await stranger.host.submit(holder.request({ action: "secret.pay", params: { n: 4, card: "4000-OWN" } }));
        await store.transact(async (tx) => {
          await tx.putStep(holder.scope, { ...step(holder.scope, comp.invocationId, 0, { status: "succeeded", stepName: "a", connector: "c" }), output: { token: envelope as Json } });
          const cur = (await tx.getInvocation(holder.scope, comp.invocationId))!;
          await tx.updateInvocation(holder.scope, { ...cur, compensating: true, nextStep: 1 });
        });
        expect(await stranger.host.worker({ batchSize: 10 }).runOnce()).toEqual(["queued", "queued", "queued"]);
        expect(stranger.calls).toHaveLength(0);
        const compBack = (await store.transact((tx) => tx.getInvocation(holder.scope, comp.invocationId)))!;
        expect(compBack).toMatchObject({ status: "queued", compensating: true, nextStep: 1, attemptCount: 0 });
        expect(compBack.lastError).toMatch(/could not be opened.*handed back/);
        const spentBack = (await store.transact((tx) => tx.getInvocation(holder.scope, spent.invocationId)))!;
        expect(spentBack).toMatchObject({ status: "queued", attemptCount: 99 });
        expect(JSON.stringify(spentBack)).not.toContain("4000-OWN");
        const back = (await store.transact((tx) => tx.getInvocation(holder.scope, mine.invocationId)))!;
        expect(back).toMatchObject({ status: "queued", attemptCount: 0 });
        expect(back.lastError).toMatch(/could not be opened.*handed back/);
        // Its own param, opened by the claim, is written back sealed, never in clear.
        expect(typeof (back.request.params.card as Record<string, unknown>)[SEALED_FIELD]).toBe("string");
        expect(JSON.stringify(back)).not.toContain("4000-OWN");
      });
    });
  });
}
