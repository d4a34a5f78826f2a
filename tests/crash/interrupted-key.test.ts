/**
 * An interrupted bare execution with a real process (docs/boundary.md, "Interrupted executions"):
 * a child runs two bare boundary executions (a one-step and a two-step action) whose connector
 * never answers; the test SIGKILLs it mid-call, reopens the store, and checks on SQLite and
 * PostgreSQL that
 * (a) within inProgressTimeoutMs the keys still answer EXECUTION_IN_PROGRESS, nothing changed;
 * (b) after it each key reports RECONCILIATION_PENDING, its attempt UNKNOWN (EXECUTION_INTERRUPTED)
 *     at the step the kill caught, journaled;
 * (c) an operator resolves one as succeeded (a replay answers the resolved reference) and the other
 *     as failed (a later decision retries it, resuming at the interrupted step); no connector call
 *     happens before the retry; the journal verifies.
 */
import { afterEach, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { defineConnector, type ConnectorContext } from "../../src/core/action.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { verifyStoredJournal } from "../../src/core/journal.js";
import { manualClock } from "../../src/core/manual-clock.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import type { ActionRequest } from "../../src/core/types.js";
import { createHostCore } from "../../src/host/host.js";
import { createKeyring, generateSigningKey } from "../../src/index.js";
import { systemRandom } from "../../src/node/clock.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { pgServerOrNull } from "../helpers/pg.js";
import { INTERRUPTED_ACTIONS } from "./interrupted.js";
import { onFreshPostgres, onTempSqlite, type CrashTarget } from "./targets.js";
import { CRASH_ACTOR, CRASH_AUTHORITY, CRASH_POLICY, requestOf } from "./workload.js";

const server = await pgServerOrNull();
const CHILD = fileURLToPath(new URL("./fixtures/interrupted-child.ts", import.meta.url));
const BOUND = 600_000; // far longer than the kill-to-check time on a loaded machine
const ONE = "r0-c0-n0-1ok";
const TWO = "r0-c1-n1-2ok";
const OPERATOR = { type: "user" as const, id: "olga" };
const crypto = defaultCrypto();
const children = new Set<ChildProcess>();

afterEach(() => {
  for (const c of children) c.kill("SIGKILL");
});

/** Spawns the child, waits until both connector calls are in flight, SIGKILLs it, reaps it. */
async function killMidCall(target: CrashTarget, key: ReturnType<typeof generateSigningKey>): Promise<void> {
  const child = spawn(process.execPath, ["--import", "tsx", CHILD], {
    env: { ...process.env, WRIT_CRASH_STORE: target.child.store, WRIT_CRASH_TARGET: target.child.target, WRIT_CRASH_KEY: JSON.stringify(key), WRIT_CRASH_KEYS: JSON.stringify([ONE, TWO]) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  const closed = new Promise<{ signal: NodeJS.Signals | null }>((resolve) => child.on("close", (_code, signal) => resolve({ signal })));
  let out = "";
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => (err += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the child never called both connectors; stderr:\n${err}`)), 60_000);
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
      if (out.includes(`"calling":"${ONE}"`) && out.includes(`"calling":"${TWO}"`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void closed.then(() => reject(new Error(`the child exited early; stderr:\n${err}`)));
  });
  child.kill("SIGKILL");
  expect((await closed).signal).toBe("SIGKILL");
  children.delete(child);
}

async function scenario(target: CrashTarget): Promise<void> {
  const key = generateSigningKey({ kid: "crash-key" });
  await killMidCall(target, key);
  await target.quiesce(0);
  const store: Store = await target.open();
  try {
    const calls: ConnectorContext[] = [];
    const live = defineConnector({ id: "crash", operations: { first: (c) => (calls.push(c), { outcome: "success", externalRef: "first" }), last: (c) => (calls.push(c), { outcome: "success", externalRef: `live-${c.request.idempotencyKey}` }) } });
    const clock = manualClock(Date.now());
    const host = createHostCore({
      store,
      actions: INTERRUPTED_ACTIONS,
      connectors: [live],
      policy: { evaluate: async () => ({ result: "DENY", reasons: ["unused"], policyRef: CRASH_POLICY }), acceptedPolicyRefs: () => [CRASH_POLICY] },
      signingKey: key,
      keyring: createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]),
      clock,
      crypto,
      random: systemRandom,
      timeoutMs: 1000,
      inProgressTimeoutMs: BOUND,
    });
    for (const req of [requestOf(ONE), requestOf(TWO)]) {
      await store.transact((tx) => tx.putAuthority(req, { tenantId: req.tenantId, spaceId: req.spaceId, authorityRef: CRASH_AUTHORITY, principal: { ...CRASH_ACTOR }, grantor: { type: "user", id: "crash-admin" }, actions: ["crash.*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 }));
    }
    const token = (req: ActionRequest): string =>
      signDecisionWith(crypto, key, { v: 1, decisionId: `dec_${Math.random().toString(36).slice(2)}`, result: "ALLOW", requestDigest: computeRequestDigest(crypto, req), tenantId: req.tenantId, spaceId: req.spaceId, authorityRef: req.authorityRef, policyRef: CRASH_POLICY, issuedAt: clock.now(), reasons: ["t"] });
    const exec = (k: string) => host.context.boundary.execute(requestOf(k), token(requestOf(k)));
    const idem = (k: string) => readCommitted(store, (tx) => tx.getIdempotency(requestOf(k), requestOf(k).action, k));

    // (a) Within the bound (the kill happened at most a few seconds of wall time ago).
    const held = { one: await idem(ONE), two: await idem(TWO) };
    expect([held.one?.state, held.two?.state]).toEqual(["in_progress", "in_progress"]);
    expect((await exec(ONE)).reasonCode).toBe("EXECUTION_IN_PROGRESS");
    expect(await idem(ONE)).toEqual(held.one);

    // (b) After it.
    clock.advance(BOUND + 1);
    for (const [k, rec, step] of [[ONE, held.one!, 0], [TWO, held.two!, 1]] as const) {
      const a = await exec(k);
      expect(a).toMatchObject({ state: "REFUSED", reasonCode: "RECONCILIATION_PENDING" });
      const old = await readCommitted(store, (tx) => tx.getAttempt(requestOf(k), rec.attemptId));
      expect(old).toMatchObject({ state: "UNKNOWN", reasonCode: "EXECUTION_INTERRUPTED", stepIndex: step });
      expect((await idem(k))?.state).toBe("unknown");
      const ids = await readCommitted(store, (tx) => tx.journalIdsPresent(requestOf(k), [`attempt.settled:${rec.attemptId}`, `attempt.refused:${a.attemptId}`]));
      expect(ids.size).toBe(2);
    }
    expect(calls).toHaveLength(0);

    // (c) Resolutions.
    const one = requestOf(ONE);
    await host.reconcile.resolveKey(one, { action: one.action, idempotencyKey: ONE }, { outcome: "succeeded", externalRef: "provider-ref-1", note: "found at the provider", by: OPERATOR });
    expect(await exec(ONE)).toMatchObject({ state: "DUPLICATE", externalRef: "provider-ref-1", originalAttemptId: held.one!.attemptId });
    const two = requestOf(TWO);
    await host.reconcile.resolveKey(two, { action: two.action, idempotencyKey: TWO }, { outcome: "failed", note: "nothing at the provider", by: OPERATOR });
    expect(calls).toHaveLength(0);
    clock.advance(1);
    expect(await exec(TWO)).toMatchObject({ state: "SUCCEEDED", externalRef: `live-${TWO}` });
    // Resumed at the interrupted step: the succeeded first step is not called again.
    expect(calls.map((c) => c.step.name)).toEqual(["commit"]);
    for (const s of [one, two]) {
      const v = await verifyStoredJournal(store, crypto, createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]), { tenantId: s.tenantId, spaceId: s.spaceId });
      expect(v.problems).toEqual([]);
    }
  } finally {
    await store.close();
  }
}

describe("an interrupted bare execution (real process, SIGKILL mid-call)", () => {
  it("sqlite: reports reconciliation pending after the bound; an operator resolves it", async () => {
    await onTempSqlite(scenario);
  }, 120_000);
  it.skipIf(server === null)("postgres: reports reconciliation pending after the bound; an operator resolves it", async () => {
    await onFreshPostgres(scenario);
  }, 120_000);
});
