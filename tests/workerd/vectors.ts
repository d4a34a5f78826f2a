/**
 * The boundary conformance vectors, portable: the same function runs in the vitest process (Node
 * ports) and inside workerd (web ports, tests/workerd/worker.ts), and the two reports must be
 * equal (docs/portable-core.md, "The workerd vector run"). Deterministic: fixed keys, a manual
 * clock, a seeded random, counter-minted keys; the vectors run one after another.
 *
 * Covered: every refusal code of the check table (one breaker each, tests/boundary/checks.ts), each
 * connector reply shape, a two-step action, duplicates (the same decision again, a new decision for
 * the same idempotency key, a retry after a transient failure), the journal those wrote (sealed,
 * checkpointed with a signature, verified, digested) and, when the runtime installed one, Cedar.
 */
import type { Attempt } from "../../src/core/boundary.js";
import { digestOf } from "../../src/core/digest.js";
import { base64url } from "../../src/core/encoding.js";
import { readWholeJournal, sealScopeNow, verifyJournal, writeCheckpoint } from "../../src/core/journal.js";
import type { SigningKey } from "../../src/core/keyring.js";
import type { CryptoPort, Random } from "../../src/core/ports.js";
import type { ActionRequest, Authority, Json } from "../../src/core/types.js";
import type { CedarPolicyEngine, CedarPolicyOptions } from "../../src/policy/cedar-engine.js";
import { memoryStore } from "../../src/stores/memory/index.js";
import { SCOPE, makeBenchIn, type Bench, type BenchEnv, type ConnectorMode } from "../boundary/bench.js";
import { BREAKERS, baseSpec, build } from "../boundary/checks.js";

/** Fixed Ed25519 keys (test keys, public by design): seeds are sha256("writ workerd vectors " + kid). */
const key = (kid: string, x: string, d: string): SigningKey => ({ kid, publicJwk: { kty: "OKP", crv: "Ed25519", x }, privateJwk: { kty: "OKP", crv: "Ed25519", x, d } });
export const FIXED_KEYS = {
  trusted: key("k-trusted", "nifr3jKRLAwgCsg8zEYsOiCtqMDZ7sf88IpGGKtJIac", "y2LSXUlQ4c-YauQqZCf3C-ASPJmcTFamWCsF7uBZM9c"),
  revoked: key("k-revoked", "8qENiOOSJn5lOWa4FPl2hbNwP2xr_501kpvwmZOSR0s", "Mq5ty0QC_YWfdsCA5ESNqZSnYmZp2Pndyy7R1_c-J9g"),
  stranger: key("k-stranger", "2p1yLeFjHO_w_oNMUHNspL7_waCAdCzBNIbkicG5H6I", "tP_NxPGc3z8H8bQ2-vfl89RQ-wBCd4AOaZihoUJEFoo"),
};

/** A seeded, non-cryptographic Random (mulberry32): the same ids on every runtime. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
  return { bytes: (n) => Uint8Array.from({ length: n }, () => next() & 0xff) };
}

export interface VectorRuntime {
  /** Which runtime ran (not compared). */
  name: string;
  crypto: CryptoPort;
  /** The Cedar engine of this runtime (Node build or web build); omitted: no Cedar vectors. */
  cedarPolicy?: (options: CedarPolicyOptions) => CedarPolicyEngine;
}

export interface VectorAttempt {
  vector: string;
  attempt: Attempt;
  connectorCalls: number;
}

export interface VectorReport {
  runtime: string;
  attempts: VectorAttempt[];
  journal: { entries: number; headHash: string | null; contentDigest: string; checkpoint: Json; verified: boolean; problems: number };
  cedar: Json[] | null;
}

export const SEED = 0x5eed_0015;

const REPLIES: Array<[string, ConnectorMode]> = [
  ["reply: success", { outcome: "success", externalRef: "re_1", output: { refunded: 10 } }],
  ["reply: permanent failure", { outcome: "permanent_failure", reason: "card declined" }],
  ["reply: transient failure", { outcome: "transient_failure", reason: "503" }],
  ["reply: thrown error", "throw"],
  ["reply: reported timeout", { outcome: "timeout" }],
  ["reply: ambiguous", { outcome: "ambiguous", reason: "502 after send" }],
  ["reply: accepted", { outcome: "accepted", externalRef: "op_9" }],
  ["reply: null", () => null],
  ["reply: success without externalRef", () => ({ outcome: "success" })],
];

/** Runs every vector on a fresh memory store with `runtime`'s ports; the report is plain JSON. */
export async function runVectors(runtime: VectorRuntime): Promise<VectorReport> {
  let seq = 0;
  const env: BenchEnv = { crypto: runtime.crypto, random: seededRandom(SEED), keys: FIXED_KEYS, uniqueKey: (prefix = "k") => `${prefix}-${++seq}` };
  const store = memoryStore();
  await store.migrate();
  const attempts: VectorAttempt[] = [];
  const run = async (vector: string, b: Bench, exec: () => Promise<Attempt>): Promise<Attempt> => {
    const before = b.calls.length;
    const attempt = await exec();
    attempts.push({ vector, attempt: JSON.parse(JSON.stringify(attempt)) as Attempt, connectorCalls: b.calls.length - before });
    return attempt;
  };

  // Every refusal code, in check-table order.
  for (const br of BREAKERS) {
    const b = makeBenchIn(env, store);
    const spec = baseSpec(b);
    br.apply(spec, b);
    const { request, token } = await build(spec, b);
    await run(`check ${br.check}: ${br.code}`, b, () => b.execute(request, token));
  }
  // Each reply shape.
  for (const [name, mode] of REPLIES) {
    const b = makeBenchIn(env, store);
    b.mode.current = mode;
    const req = b.request();
    await run(name, b, () => b.execute(req, b.decision(req)));
  }
  // Two steps, the second reading the first's output.
  {
    const b = makeBenchIn(env, store);
    b.mode.current = (ctx) => ({ outcome: "success", externalRef: `ext-${ctx.step.name}`, output: { input: ctx.input } });
    const req = b.request({ action: "orders.fulfil", params: { orderId: "o-1" } });
    await run("two steps", b, () => b.execute(req, b.decision(req)));
  }
  // Duplicates and idempotent replays.
  {
    const b = makeBenchIn(env, store);
    const req = b.request();
    const token = b.decision(req);
    await run("replay: first execution", b, () => b.execute(req, token));
    await run("replay: the same decision again", b, () => b.execute(req, token));
    await run("replay: a new decision, same idempotency key", b, () => b.execute(req, b.decision(req)));
    await run("replay: same key, other params", b, () => b.execute({ ...req, params: { paymentId: "pay_2", amount: 11 } }, b.decision({ ...req, params: { paymentId: "pay_2", amount: 11 } })));
  }
  {
    const b = makeBenchIn(env, store);
    b.mode.current = { outcome: "transient_failure", reason: "429" };
    const req = b.request();
    await run("retry: transient failure", b, () => b.execute(req, b.decision(req)));
    b.mode.current = { outcome: "success", externalRef: "re_retry" };
    await run("retry: new decision after the transient failure", b, () => b.execute(req, b.decision(req)));
    b.clock.advance(1_000);
    await run("retry: once more after success", b, () => b.execute(req, b.decision(req)));
  }

  // The journal those executions wrote: sealed, checkpointed, verified, digested.
  await sealScopeNow(store, runtime.crypto, SCOPE);
  const cp = await store.transact((tx) => writeCheckpoint(tx, runtime.crypto, SCOPE, FIXED_KEYS.trusted, 1_800_000_100_000));
  const entries = await readWholeJournal(store, SCOPE);
  const keyring = makeBenchIn(env, store).keyring;
  const checkpoints = await store.transact((tx) => tx.listCheckpoints(SCOPE));
  const verification = verifyJournal(runtime.crypto, keyring, SCOPE, entries, checkpoints);
  const journal = {
    entries: entries.length,
    headHash: entries.at(-1)?.hash ?? null,
    contentDigest: digestOf(runtime.crypto, JSON.parse(JSON.stringify(entries)) as Json),
    checkpoint: JSON.parse(JSON.stringify(cp)) as Json,
    verified: verification.ok,
    problems: verification.problems.length,
  };
  await store.close();
  return { runtime: runtime.name, attempts, journal, cedar: runtime.cedarPolicy ? await cedarVectors(runtime, env) : null };
}

const POLICIES = `
@id("authority-required")
forbid (principal, action, resource)
unless { context has authority && context.authority.status == "active" && context.authority.coversAction };

@id("refund-small")
permit (principal is Writ::Agent, action == Writ::Action::"payments.refund", resource in Writ::Tenant::"t1")
when { context.params.amount <= 100 };

@id("refund-large") @approval("required") @approvers("finance") @quorum("2")
permit (principal, action == Writ::Action::"payments.refund", resource in Writ::Tenant::"t1")
when { context.params.amount > 100 };
`;

/** The Cedar engine on each runtime: the policyRef and every evaluation, then one ALLOW executed. */
async function cedarVectors(runtime: VectorRuntime, env: BenchEnv): Promise<Json[]> {
  const engine = runtime.cedarPolicy!({ policies: POLICIES, crypto: runtime.crypto });
  const authority: Authority = {
    ...SCOPE,
    authorityRef: "auth-1",
    principal: { type: "agent", id: "bot-1" },
    grantor: { type: "user", id: "alice" },
    actions: ["payments.*"],
    constraints: {},
    status: "active",
    createdAt: 0,
    updatedAt: 0,
  };
  const request = (amount: number, o: Partial<ActionRequest> = {}): ActionRequest => ({
    ...SCOPE,
    action: "payments.refund",
    actionVersion: "1",
    actor: { type: "agent", id: "bot-1" },
    authorityRef: "auth-1",
    params: { paymentId: "pay_1", amount },
    idempotencyKey: env.uniqueKey("cedar"),
    ...o,
  });
  const inputs: Array<[string, ActionRequest, Authority | null]> = [
    ["small refund", request(10), authority],
    ["large refund", request(500), authority],
    ["no authority", request(10), null],
    ["suspended authority", request(10), { ...authority, status: "suspended" }],
    ["other tenant", request(10, { tenantId: "t2" }), { ...authority, tenantId: "t2" }],
  ];
  const out: Json[] = [{ policyRef: engine.policyRef }];
  for (const [name, req, auth] of inputs) {
    const r = await engine.evaluate({ request: req, authority: auth });
    out.push({ name, result: JSON.parse(JSON.stringify(r)) as Json });
  }
  // A decision the engine allowed, signed and executed through the boundary.
  const store = memoryStore();
  await store.migrate();
  const b = makeBenchIn(env, store);
  b.acceptedRefs.splice(0, b.acceptedRefs.length, engine.policyRef);
  const req = b.request();
  const verdict = await engine.evaluate({ request: req, authority: b.authorities.get("auth-1")! });
  const a = await b.execute(req, b.decision(req, { result: verdict.result, policyRef: verdict.policyRef, reasons: verdict.reasons }));
  out.push({ name: "cedar ALLOW executed", state: a.state, reasonCode: a.reasonCode ?? null, attemptId: a.attemptId, keyCheck: base64url(runtime.crypto.sha256(engine.policyRef)) });
  await store.close();
  return out;
}
