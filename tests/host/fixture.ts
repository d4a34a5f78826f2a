/** A host test bench: a host on a given store, a manual clock, a scriptable policy and connector. */
import { z } from "zod";
import { defineAction, defineConnector, type ConnectorContext, type ConnectorReply } from "../../src/core/action.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { manualClock, type ManualClock } from "../../src/core/manual-clock.js";
import type { PolicyEngine, PolicyInput } from "../../src/core/policy.js";
import { readCommitted, type Store } from "../../src/core/store.js";
import type { ActionRequest, Authority, DecisionPayload, DecisionResult, Scope } from "../../src/core/types.js";
import type { HostEvent } from "../../src/host/events.js";
import { createHostCore, type Host } from "../../src/host/host.js";
import type { HostOptions } from "../../src/host/options.js";
import { systemRandom } from "../../src/node/clock.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { KEYS } from "../boundary/fixture.js";
import { untilRead } from "../helpers/wait.js";

export const crypto = defaultCrypto();

/** A signed ALLOW decision for `req` under the trusted key, issued at `issuedAt` (a bare boundary.execute's token). */
export function decisionFor(req: ActionRequest, issuedAt: number, o: Partial<DecisionPayload> = {}): string {
  return signDecisionWith(crypto, KEYS.trusted, {
    v: 1,
    decisionId: `dec_${Math.random().toString(36).slice(2)}`,
    result: "ALLOW",
    requestDigest: computeRequestDigest(crypto, req),
    tenantId: req.tenantId,
    spaceId: req.spaceId,
    authorityRef: req.authorityRef,
    policyRef: "test:v1",
    issuedAt,
    reasons: ["test"],
    ...o,
  });
}

export type Reply = ConnectorReply | "throw" | ((ctx: ConnectorContext) => unknown);

export interface HostBench {
  host: Host;
  store: Store;
  clock: ManualClock;
  scope: Scope;
  calls: ConnectorContext[];
  /** Per operation (step name), what the connector answers; default success. */
  replies: Map<string, Reply>;
  verdict: { current: DecisionResult };
  /** Runs inside policy evaluation (to simulate changes racing the decision). */
  duringEvaluate: { current: ((input: PolicyInput) => Promise<void>) | null };
  events: HostEvent[];
  /** Policy refs the engine accepts; the first is the one it signs under. */
  acceptedRefs: string[];
  quorum: { current: number };
  request(o?: Partial<ActionRequest>): ActionRequest;
}

const params = z.object({ n: z.number() });

export const actions = [
  defineAction({ id: "one.idem", version: "1", params, idempotent: true, steps: [{ name: "a", connector: "c", operation: "a" }] }),
  defineAction({ id: "one.once", version: "1", params, idempotent: false, steps: [{ name: "a", connector: "c", operation: "a" }] }),
  defineAction({
    id: "three.idem",
    version: "1",
    params,
    idempotent: true,
    steps: [
      { name: "a", connector: "c", operation: "a", compensate: { connector: "c", operation: "undo-a" } },
      { name: "b", connector: "c", operation: "b", compensate: { connector: "c", operation: "undo-b" } },
      { name: "c", connector: "c", operation: "c" },
    ],
  }),
  defineAction({ id: "limited", version: "1", params, idempotent: true, retry: { maxAttempts: 2, baseDelayMs: 100, maxDelayMs: 1000 }, steps: [{ name: "a", connector: "c", operation: "a" }] }),
  defineAction({
    id: "secret.pay",
    version: "1",
    params: z.object({ n: z.number(), card: z.string() }),
    idempotent: true,
    sensitive: ["/params/card", "/outputs/a/token"],
    steps: [{ name: "a", connector: "c", operation: "a" }],
  }),
  defineAction({
    id: "secret.long",
    version: "1",
    params: z.object({ n: z.number(), card: z.string() }),
    idempotent: true,
    completion: { deadlineMs: 60_000 },
    sensitive: ["/params/card", "/outputs/a/token"],
    steps: [{ name: "a", connector: "c", operation: "a" }],
  }),
  defineAction({ id: "long.one", version: "1", params, idempotent: true, completion: { deadlineMs: 60_000 }, steps: [{ name: "a", connector: "c", operation: "a" }] }),
  defineAction({
    id: "long.two",
    version: "1",
    params,
    idempotent: true,
    completion: { deadlineMs: 60_000 },
    steps: [
      { name: "a", connector: "c", operation: "a" },
      { name: "b", connector: "c", operation: "b", input: ({ outputs }) => ({ fromA: outputs.a ?? null }) },
    ],
  }),
];

let n = 0;
export function makeHostBench(store: Store, overrides: Partial<HostOptions> = {}): HostBench {
  const clock = manualClock(1_800_000_000_000);
  const scope: Scope = { tenantId: `t${process.pid}x${++n}`, spaceId: "s" };
  const calls: ConnectorContext[] = [];
  const replies = new Map<string, Reply>();
  const verdict = { current: "ALLOW" as DecisionResult };
  const duringEvaluate: HostBench["duringEvaluate"] = { current: null };
  const events: HostEvent[] = [];
  const acceptedRefs = ["test:v1"];
  const quorum = { current: 1 };
  const op = (name: string) => async (ctx: ConnectorContext): Promise<ConnectorReply> => {
    calls.push(ctx);
    const r = replies.get(name) ?? { outcome: "success", externalRef: `ref-${name}-${calls.length}`, output: { step: name } };
    if (r === "throw") throw new Error("boom");
    if (typeof r === "function") return (await r(ctx)) as ConnectorReply;
    return r;
  };
  const connector = defineConnector({ id: "c", operations: Object.fromEntries(["a", "b", "c", "undo-a", "undo-b"].map((k) => [k, op(k)])) });
  const policy: PolicyEngine = {
    evaluate: async (input: PolicyInput) => {
      const policyRef = acceptedRefs[0]!; // the version in force when the decision is made
      if (duringEvaluate.current) await duringEvaluate.current(input);
      // REQUIRE_APPROVAL is satisfied by an approved approval, like an @approval("required") permit.
      const result = verdict.current === "REQUIRE_APPROVAL" && input.approval?.status === "approved" ? "ALLOW" : verdict.current;
      return { result, reasons: [`test policy: ${result} ${input.request.action}`], policyRef, approval: { approverRoles: ["approve"], quorum: quorum.current } };
    },
    acceptedPolicyRefs: () => acceptedRefs,
  };
  const host = createHostCore({
    store,
    actions,
    connectors: [connector],
    policy,
    signingKey: KEYS.trusted,
    clock,
    crypto,
    random: systemRandom,
    timeoutMs: 5000,
    retry: { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 10_000 },
    onEvent: (e) => events.push(e),
    // The fixture's sensitive actions test redaction in answers and the journal; sealing at rest
    // (a data key) is tested in tests/security/at-rest.test.ts.
    allowCleartextSensitive: true,
    ...overrides,
  });
  return {
    host,
    store,
    clock,
    scope,
    calls,
    replies,
    verdict,
    duringEvaluate,
    acceptedRefs,
    quorum,
    events,
    request: (o = {}) => ({ ...scope, action: "one.idem", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth", params: { n: 1 }, idempotencyKey: `key-${++n}`, ...o }),
  };
}

/** Writes the authority the bench's requests run under. */
export async function grantAuthority(b: HostBench, patch: Partial<Authority> = {}): Promise<void> {
  const a: Authority = { ...b.scope, authorityRef: "auth", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "alice" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0, ...patch };
  await b.store.transact((tx) => tx.putAuthority(b.scope, a));
}

/**
 * For an invocation leased to a worker that was never told it holds the lease (an admission or a
 * claim whose answer was lost): moves the manual clock, never up to the lease's end, until
 * `beats()` (heartbeat statements answered) has grown by two, pausing after each beat until its
 * transaction ended (`settled`, else 300 ms) so that the next period's timer is set before the
 * clock moves on (the timer counts from the clock at that moment: a clock that ran on meanwhile
 * would push it later; the lease's end leaves two periods of slack for that). Then checks the lease
 * was not extended and nothing was called, moves the clock past the lease's end, at most four polls
 * (the worker sets each poll's timer from the clock when it sleeps, which under load may be later
 * than its empty claim) and never as far as the new lease's end, until the worker has claimed and
 * run the invocation, and checks it succeeded with one connector call and two attempts.
 */
export async function expectLapsedThenRun(
  b: HostBench,
  store: Store,
  invocationId: string,
  o: {
    leaseMs: number;
    heartbeatMs: number;
    pollMs: number;
    /**
     * True while nothing of the store is in flight (no open transaction, or no statement on its
     * way, as the caller counts). Given, the clock moves only then, and each beat is followed by a
     * wait for it; else a 300-ms pause stands in. Moving the clock while a beat's statement is on
     * its way (a slow commit on a busy machine) would carry the next beat's due time past the
     * lease, where this helper never takes the clock.
     */
    settled?: () => boolean;
  },
  beats: () => number,
): Promise<void> {
  const expiry = (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocationId)))!.leaseExpiresAt!;
  if (2 * o.heartbeatMs >= o.leaseMs) throw new Error("expectLapsedThenRun needs two heartbeats within the lease");
  if (4 * o.pollMs >= o.leaseMs) throw new Error("expectLapsedThenRun needs four polls within the lease (the new lease must never lapse)");
  for (let k = 1; k <= 2; k++) {
    const want = beats() + 1;
    await untilRead(async () => {
      if (beats() >= want) return true;
      if (b.clock.now() + 100 < expiry && (o.settled === undefined || o.settled())) b.clock.advance(100);
      return false;
    }, `heartbeat ${k} answered`);
    if (o.settled) await untilRead(async () => o.settled!(), `heartbeat ${k}'s transaction ended`);
    else await new Promise((r) => setTimeout(r, 300));
  }
  const held = await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocationId));
  if (held?.status !== "running" || held.leaseExpiresAt !== expiry) throw new Error(`the lost lease changed: ${JSON.stringify({ status: held?.status, leaseExpiresAt: held?.leaseExpiresAt, expiry })}`);
  if (b.calls.length !== 0) throw new Error(`a connector was called before the lease lapsed (${b.calls.length} calls)`);
  // Past the lease and a poll, the worker claims it under its new owner name and runs it. The loop
  // sets each poll's timer from the clock when it goes to sleep, which under load may be a step or
  // two of this loop after the claim that found nothing: the clock may go a few polls past the
  // lease (the check is that the lapsed lease is taken and run once, not how soon).
  const until = expiry + 4 * o.pollMs;
  await untilRead(
    async () => {
      if (b.clock.now() < until) b.clock.advance(Math.min(500, until - b.clock.now()));
      return (await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocationId)))?.status === "succeeded";
    },
    "the lapsed invocation succeeded",
    30_000,
  );
  const done = await readCommitted(store, (tx) => tx.getInvocation(b.scope, invocationId));
  const calls: number = b.calls.length;
  if (done!.attemptCount !== 2 || calls !== 1) throw new Error(`expected one call and two attempts, got ${calls} calls and ${done!.attemptCount} attempts`);
}
