/**
 * `writ reconcile resolve-key` with the real binary (docs/cli.md). A bare boundary execution in
 * this process is interrupted mid-call (its connector never answers, its clock never moves); once
 * inProgressTimeoutMs has passed the key reports RECONCILIATION_PENDING, and the operator resolves
 * it from the CLI. Invariants: bad flags are usage errors (exit 2) and change nothing; the
 * resolution is journaled with the operator; a replay then answers the resolved result.
 */
import { join } from "node:path";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineAction, defineConnector, type Connector } from "../../src/core/action.js";
import { createBoundaryCore, type Boundary } from "../../src/core/boundary.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { createKeyring } from "../../src/core/keyring.js";
import { manualClock, type ManualClock } from "../../src/core/manual-clock.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import type { ActionRequest, Authority } from "../../src/core/types.js";
import { systemRandom } from "../../src/node/clock.js";
import { sqliteStore } from "../../src/stores/sqlite/index.js";
import { sealJournalNow } from "../../src/index.js";
import { KEYS, crypto } from "../boundary/fixture.js";
import { tick } from "../helpers/wait.js";
import { json, workspace, writ } from "./helpers.js";

const SCOPE = { tenantId: "acme", spaceId: "prod" };
const BOUND = 60_000;
const send = defineAction({ id: "messages.send", version: "1", idempotent: false, params: z.strictObject({ to: z.string(), body: z.string() }), steps: [{ name: "send", connector: "demo-messages", operation: "send" }] });
const authority: Authority = { ...SCOPE, authorityRef: "bot", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "alice" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };

let ws: ReturnType<typeof workspace>;
let store: Store;
beforeAll(async () => {
  ws = workspace();
  expect((await writ(ws.dir, ["migrate"])).code).toBe(0);
  store = sqliteStore({ path: join(ws.dir, ".writ", "writ.db") });
  await store.migrate();
});
afterAll(async () => {
  await store?.close();
  ws?.cleanup();
});

function boundaryOn(clock: ManualClock, connector: Connector): Boundary {
  return createBoundaryCore({
    store,
    keyring: createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]),
    actions: [send],
    connectors: [connector],
    authority: () => authority,
    acceptedPolicyRefs: ["p:1"],
    timeoutMs: 1000,
    inProgressTimeoutMs: BOUND,
    clock,
    crypto,
    random: systemRandom,
  });
}

const token = (req: ActionRequest, issuedAt: number): string =>
  signDecisionWith(crypto, KEYS.trusted, { v: 1, decisionId: `dec_${Math.random().toString(36).slice(2)}`, result: "ALLOW", requestDigest: computeRequestDigest(crypto, req), ...SCOPE, authorityRef: "bot", policyRef: "p:1", issuedAt, reasons: ["t"] });

describe("writ reconcile resolve-key", () => {
  it("resolves an interrupted execution's key; bad flags change nothing", async () => {
    const req: ActionRequest = { ...SCOPE, action: "messages.send", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "bot", params: { to: "a@example.com", body: "hi" }, idempotencyKey: "msg-cli-1" };
    const start = Date.now();
    const hung = boundaryOn(manualClock(start), defineConnector({ id: "demo-messages", operations: { send: () => new Promise(() => undefined) } }));
    void hung.execute(req, token(req, start));
    const idem = () => readCommitted(store, (tx) => tx.getIdempotency(SCOPE, req.action, req.idempotencyKey));
    for (let i = 0; i < 10_000 && (await idem())?.state !== "in_progress"; i++) await tick();
    const clock = manualClock(start + BOUND + 1);
    const calls: unknown[] = [];
    const live = boundaryOn(clock, defineConnector({ id: "demo-messages", operations: { send: () => (calls.push(1), { outcome: "success", externalRef: "never" }) } }));
    expect((await live.execute(req, token(req, clock.now()))).reasonCode).toBe("RECONCILIATION_PENDING");
    const before = await idem();
    expect(before?.state).toBe("unknown");

    // The operator finds the key in the reconciliation queue (not only by knowing it).
    const queue = await writ(ws.dir, ["reconcile", "ls"]);
    expect(queue.code, queue.stderr).toBe(0);
    expect(queue.stdout).toContain("keys left unknown by bare boundary executions");
    expect(queue.stdout).toContain(req.idempotencyKey);
    const queued = json<{ items: unknown[]; unknownKeys: Array<{ action: string; idempotencyKey: string }> }>(await writ(ws.dir, ["reconcile", "ls", "--json"]));
    expect(queued.unknownKeys).toEqual([expect.objectContaining({ action: req.action, idempotencyKey: req.idempotencyKey })]);

    const base = ["reconcile", "resolve-key", "--action", req.action, "--key", req.idempotencyKey];
    const bad: Array<[string[], string]> = [
      [["reconcile", "resolve-key", "--key", req.idempotencyKey, "--outcome", "failed", "--note", "x"], "needs --action"],
      [["reconcile", "resolve-key", "--action", req.action, "--outcome", "failed", "--note", "x"], "needs --key"],
      [[...base, "--outcome", "failed"], "needs --note"],
      [[...base, "--outcome", "maybe", "--note", "x"], "--outcome must be one of"],
      [[...base, "--note", "x"], "needs --outcome"],
      [[...base, "--outcome", "succeeded", "--note", "x"], "needs --external-ref"],
    ];
    const results = await Promise.all(bad.map(([args]) => writ(ws.dir, args)));
    results.forEach((r, i) => {
      expect(r.code, bad[i]![0].join(" ")).toBe(2);
      expect(r.stderr).toContain(bad[i]![1]);
    });
    const unknown = await writ(ws.dir, ["reconcile", "resolve-key", "--action", req.action, "--key", "never-used", "--outcome", "failed", "--note", "x"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no key messages.send/never-used");
    expect(await idem()).toEqual(before);

    const r = await writ(ws.dir, [...base, "--outcome", "succeeded", "--external-ref", "msg_77", "--note", "gateway log shows msg_77", "--as", "user:olga", "--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(json<{ idempotency: { state: string } }>(r).idempotency.state).toBe("succeeded");
    const replay = await live.execute(req, token(req, clock.now()));
    expect(replay).toMatchObject({ state: "DUPLICATE", externalRef: "msg_77" });
    expect(calls).toHaveLength(0);
    await sealJournalNow(store, SCOPE);
    const entries = await readCommitted(store, (tx) => tx.readJournal(SCOPE, { limit: 1000 }));
    expect(entries.find((e) => e.type === "key.resolved")?.data).toMatchObject({ outcome: "succeeded", by: { type: "user", id: "olga" }, externalRef: "msg_77", note: "gateway log shows msg_77" });
    expect(json<{ unknownKeys: unknown[] }>(await writ(ws.dir, ["reconcile", "ls", "--json"])).unknownKeys).toEqual([]);
    const twice = await writ(ws.dir, [...base, "--outcome", "failed", "--note", "again"]);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain("is succeeded, not unknown");
  });
});
