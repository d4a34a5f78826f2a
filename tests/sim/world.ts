/**
 * One simulated deployment (docs/simulation.md): a shared store, worker nodes (each its own host
 * and worker, as separate processes would be), an API node (submits, approvals, cancels,
 * completions, operator resolutions), an optional bare-boundary node, and simulated providers
 * that record every call and effect. Everything random comes from the seed.
 */
import { z } from "zod";
import { createBoundaryCore, type Boundary } from "../../src/core/boundary.js";
import { defineAction, defineConnector, type ActionDefinition, type Connector, type ConnectorContext, type ConnectorReply } from "../../src/core/action.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { fromBase64url, fromUtf8 } from "../../src/core/encoding.js";
import { errorMessage, isWritError } from "../../src/core/errors.js";
import { memoryArchive } from "../../src/core/archive-format.js";
import { archiveScope } from "../../src/core/archiver.js";
import { createKeyring } from "../../src/core/keyring.js";
import type { PolicyEngine, PolicyInput, PolicyResult } from "../../src/core/policy.js";
import type { CryptoPort } from "../../src/core/ports.js";
import type { Store } from "../../src/core/store.js";
import type { ActionRequest, Authority, BreakerRecord, Invocation, Scope } from "../../src/core/types.js";
import { createHostCore, type Host } from "../../src/host/host.js";
import type { Worker } from "../../src/host/worker.js";
import type { Approver } from "../../src/host/approvals.js";
import { defaultCrypto } from "../../src/node/defaults.js";
import { KEYS } from "../boundary/fixture.js";
import type { SimConfig, FaultName } from "./config.js";
import { Sim, SimNode, type Rng } from "./kernel.js";
import { simStore, type Committed, type PrunedSeen, type StoreFault } from "./sim-store.js";
import { sealScopeNow } from "../../src/core/journal.js";
import { runRetention } from "../../src/core/retention.js";

export const SCOPE: Scope = { tenantId: "sim", spaceId: "s" };
export const HOST_LIMITS = {
  timeoutMs: 3000,
  recoveryMaxAttempts: 2,
  breaker: { failureThreshold: 2, cooldownMs: 5000 },
  approvalTtlMs: 30_000,
  leaseMs: 10_000,
  /** Longer than any action's steps × timeoutMs (3 × 3 s), docs/boundary.md "Interrupted executions". */
  inProgressTimeoutMs: 12_000,
  /**
   * Retention (docs/retention.md): ended invocations go 40 s after they ended once archived (the
   * window at least the approval TTL and the retry horizon); workers prune every 15 s.
   */
  retention: { invocationsMs: 40_000, replayWindowMs: 40_000, batchSize: 3, pauseMs: 500, everyMs: 15_000 },
};
const params = z.object({ n: z.number() });

export type PolicyPlan = "allow" | "deny" | "approval" | "mixed";

export interface ActionPlan {
  def: ActionDefinition<{ n: number }>;
  policy: PolicyPlan;
  quorum: number;
}

/** One connector call as the provider saw it. */
export interface CallRecord {
  n: number;
  at: number;
  node: string;
  action: string;
  /** The host invocation (a compensation's `<id>:undo:<i>` mapped back to `<id>`). */
  invocationId: string;
  compensation: boolean;
  stepIndex: number;
  key: string;
  decisionId: string;
  attemptId: string;
  /** attemptCount of the calling node's latest claim of the invocation (undefined for bare calls). */
  attemptCount?: number;
  /** recoveryBase of that claim (docs/host.md, What counts as an attempt). */
  recoveryBase?: number;
  /** When that claim committed. */
  claimAt?: number;
  /** The commit sequence number when the provider's reply was handed back (breakerFleet). */
  replySeq?: number;
  behaviour: string;
}

export interface Effect {
  key: string;
  action: string;
  idempotent: boolean;
  call: CallRecord;
}

/** A committed breaker row and the commit sequence number it was written at. */
interface BreakerRow {
  rec: BreakerRecord;
  seq: number;
}

/** A node's latest committed claim of an invocation. */
export interface ClaimSeen {
  attemptCount: number;
  recoveryBase: number;
  at: number;
  /** The claim's commit sequence number (orders commits at one virtual instant). */
  seq: number;
}

/** What the simulator observed, for the invariants. */
export interface Observations {
  calls: CallRecord[];
  effects: Effect[];
  /** Committed claims per invocation. */
  claims: Map<string, Array<{ owner: string; attemptCount: number; at: number }>>;
  /** Claims handed back by a circuit-open re-queue before the first step (attemptCount - 1 in that write). */
  handbacks: Map<string, number>;
  /** Decisions the hosts signed: issuedAt by decisionId. */
  decisions: Map<string, number>;
  votes: Array<{ approvalId: string; approver: string; verdict: "approve" | "deny" }>;
  revokes: Set<string>;
  cancels: Map<string, number>;
  resolves: Set<string>;
  /** Calls made while the store's breaker row was open, under a claim committed after it opened. */
  breakerViolations: string[];
  /** Bare keys whose executing node crashed mid-execution: (action, key). */
  bareInterrupted: Array<{ action: string; key: string }>;
  /** Answers of the re-execution of interrupted bare keys after the drain. */
  bareAfterDrain: Array<{ action: string; key: string; state: string; reasonCode?: string }>;
  /** Invocations retention deleted: what the deleting transaction saw, and when (docs/retention.md). */
  pruned: Map<string, PrunedSeen & { at: number }>;
  /**
   * Bare executions (their invocation ids) whose idempotency record retention deleted with their
   * rows, and when (a bare key may be executed again after its window, and pruned again).
   */
  prunedBareAt: Map<string, number[]>;
  /** Notes for the report: client errors that were not expected. */
  notes: string[];
}

export interface WorldOptions {
  /** A planted bug, to prove the checker catches it (see the self-test). */
  plant?: "double-effect";
}

const ACTOR = { type: "agent", id: "bot" } as const;
const APPROVERS = ["ann", "bob", "cyd"];

/** The Node crypto port without its asynchronous verify (libuv's threadpool is real concurrency). */
function simCrypto(decisions: Map<string, number>): CryptoPort {
  const c = defaultCrypto();
  return {
    sha256: (d) => c.sha256(d),
    hmacSha256: (k, d) => c.hmacSha256(k, d),
    timingSafeEqual: (a, b) => c.timingSafeEqual(a, b),
    generateEd25519: () => c.generateEd25519(),
    signEd25519(key, data) {
      // Observe every decision signed (its id and issuedAt), for the fresh-decision invariant.
      try {
        const payload = fromBase64url(fromUtf8(data).split(".")[1] ?? "");
        if (payload !== null) {
          const p = JSON.parse(fromUtf8(payload)) as { decisionId?: unknown; issuedAt?: unknown };
          if (typeof p.decisionId === "string" && typeof p.issuedAt === "number") decisions.set(p.decisionId, p.issuedAt);
        }
      } catch {
        // not a decision (a checkpoint signature)
      }
      return c.signEd25519(key, data);
    },
    verifyEd25519: (k, d, s) => c.verifyEd25519(k, d, s),
  };
}

export function planActions(rng: Rng): ActionPlan[] {
  const n = rng.int(2, 4);
  const out: ActionPlan[] = [];
  for (let i = 0; i < n; i++) {
    const steps = rng.int(1, 3);
    const def = defineAction({
      id: `act${i}`,
      version: "1",
      params,
      idempotent: rng.chance(0.5),
      steps: Array.from({ length: steps }, (_, j) => ({
        name: `s${j}`,
        connector: "svc",
        operation: "op",
        ...(rng.chance(0.5) ? { compensate: { connector: "svc", operation: "undo" } } : {}),
      })),
      ...(rng.chance(0.5) ? { completion: { deadlineMs: rng.int(4000, 20_000) } } : {}),
      retry: { maxAttempts: rng.int(1, HOST_LIMITS.recoveryMaxAttempts), baseDelayMs: 200, maxDelayMs: 2000 },
    });
    out.push({ def, policy: rng.weighted({ allow: 5, deny: 1, approval: 2, mixed: 2 }), quorum: rng.int(1, 2) });
  }
  return out;
}

/** The same action set with one action at another version (a deploy changed it). */
function redeployed(actions: ActionPlan[], rng: Rng): ActionDefinition<{ n: number }>[] {
  const k = rng.int(0, actions.length - 1);
  return actions.map((a, i) => (i === k ? { ...a.def, version: "2" } : a.def));
}

interface WorkerNode {
  node: SimNode;
  host: Host;
  worker: Worker;
  /** This node's latest committed claim per invocation. */
  claims: Map<string, ClaimSeen>;
}

export class World {
  readonly sim: Sim;
  readonly rng: Rng;
  readonly obs: Observations;
  readonly crypto: CryptoPort;
  readonly keyring = createKeyring([{ kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk }]);
  /** Where every worker node's archiver writes journal segments (docs/archives.md). */
  readonly archive = memoryArchive();
  readonly actions: ActionPlan[];
  readonly env: SimNode;
  readonly apiNode: SimNode;
  api!: Host;
  workers: WorkerNode[] = [];
  bare: { node: SimNode; boundary: Boundary } | null = null;
  draining = false;
  /** Provider events scheduled and not yet fired (late replies, deliveries). */
  pendingDeliveries = 0;
  submitted: Array<{ invocationId: string; key: string; action: string }> = [];
  #nodeSeq = 0;
  #callSeq = 0;
  #refSeq = 0;
  readonly #breakers = new Map<string, BreakerRow>();
  #commitSeq = 0;
  readonly #lastCount = new Map<string, number>();
  /** Every committed claim by its lease token. */
  readonly #claimByToken = new Map<string, ClaimSeen>();
  /** The claim whose lease fenced each step's latest intent, by `${invocationId}#${stepIndex}` (a compensation's id ends `:undo:i`). */
  readonly #intentClaim = new Map<string, ClaimSeen>();

  readonly seed: number;
  /** Most members per batch of a node's write transitions; undefined: this seed does not batch. */
  readonly batchMax: number | undefined;
  /** Batch operations run, those with more than one member, their members, and members that failed while another applied. */
  readonly batches = { ops: 0, multi: 0, members: 0, failedAlone: 0, settlesLeaseLost: 0, diedMidBatch: 0 };
  /** Each node's write transitions queued or in a batch in flight, still without an answer. */
  readonly #outstanding = new Map<SimNode, number>();
  readonly inner: Store;
  readonly config: SimConfig;
  readonly options: WorldOptions;

  constructor(seed: number, inner: Store, config: SimConfig, options: WorldOptions = {}) {
    this.seed = seed;
    this.inner = inner;
    this.config = config;
    this.options = options;
    this.sim = new Sim(seed, 1_800_000_000_000, config.keepTrace);
    this.rng = this.sim.rng.fork();
    this.obs = {
      calls: [],
      effects: [],
      claims: new Map(),
      handbacks: new Map(),
      decisions: new Map(),
      votes: [],
      revokes: new Set(),
      cancels: new Map(),
      resolves: new Set(),
      breakerViolations: [],
      bareInterrupted: [],
      bareAfterDrain: [],
      pruned: new Map(),
      prunedBareAt: new Map(),
      notes: [],
    };
    this.crypto = simCrypto(this.obs.decisions);
    this.actions = planActions(this.rng);
    // Half the seeds batch their nodes' write transitions as PostgreSQL does (docs/simulation.md, "Batches").
    this.batchMax = this.rng.chance(0.5) ? this.rng.int(2, 8) : undefined;
    this.env = new SimNode(this.sim, "env");
    this.apiNode = new SimNode(this.sim, "api");
  }

  on(f: FaultName): boolean {
    return this.config.faults.has(f);
  }

  // ---- store faults and observation ----

  storeFault(node: SimNode): StoreFault {
    if (this.draining || node === this.env) return "none";
    const r = this.rng.float();
    const f: StoreFault = this.on("storeThrow") && r < 0.03 ? "throw" : this.on("storeLostAck") && r > 0.98 ? "lost-ack" : "none";
    if (f !== "none") this.sim.trace(`fault ${node.name} ${f}`);
    return f;
  }

  committed(node: SimNode, c: Committed): void {
    const seq = ++this.#commitSeq;
    for (const p of c.pruned) {
      this.obs.pruned.set(p.invocation.invocationId, { ...p, at: this.sim.now });
      this.sim.trace(`pruned ${p.invocation.invocationId} (${p.invocation.status}) by ${node.name}`);
    }
    for (const id of c.prunedBare) {
      this.obs.prunedBareAt.set(id, [...(this.obs.prunedBareAt.get(id) ?? []), this.sim.now]);
      this.sim.trace(`pruned bare execution ${id} by ${node.name}`);
    }
    for (const inv of c.claims) {
      const list = this.obs.claims.get(inv.invocationId) ?? [];
      list.push({ owner: inv.leaseOwner ?? node.name, attemptCount: inv.attemptCount, at: this.sim.now });
      this.obs.claims.set(inv.invocationId, list);
      this.#lastCount.set(inv.invocationId, inv.attemptCount);
      const seen: ClaimSeen = { attemptCount: inv.attemptCount, recoveryBase: inv.recoveryBase ?? 0, at: this.sim.now, seq };
      this.workers.find((w) => w.node === node)?.claims.set(inv.invocationId, seen);
      if (inv.leaseToken) this.#claimByToken.set(inv.leaseToken, seen);
      this.sim.trace(`claim ${inv.invocationId} by ${node.name} attempt ${inv.attemptCount}`);
    }
    for (const inv of c.invocations) {
      // A circuit-open re-queue before the first step hands its claim back: exactly one less, in
      // a queued write naming the circuit (docs/host.md, What counts as an attempt).
      const prev = this.#lastCount.get(inv.invocationId);
      if (prev !== undefined && inv.attemptCount === prev - 1 && inv.status === "queued" && /^circuit /.test(inv.lastError ?? "")) {
        this.obs.handbacks.set(inv.invocationId, (this.obs.handbacks.get(inv.invocationId) ?? 0) + 1);
      }
      this.#lastCount.set(inv.invocationId, inv.attemptCount);
    }
    for (const { step, token } of c.intents) {
      // A call goes out under the claim whose lease the intent's transaction asserted; a slow
      // worker's call may follow a newer claim's commit (fencing guards writes, not the call).
      const claim = token === undefined ? undefined : this.#claimByToken.get(token);
      const key = `${step.invocationId}#${step.stepIndex}`;
      if (claim) this.#intentClaim.set(key, claim);
      else this.#intentClaim.delete(key);
    }
    for (const b of c.breakers) this.#breakers.set(`${b.connector}.${b.operation}`, { rec: b, seq });
  }

  nodeStore(node: SimNode): Store {
    return simStore(node, this.inner, {
      batchOutstanding: (n, delta) => this.#outstanding.set(n, (this.#outstanding.get(n) ?? 0) + delta),
      batched: (_n, members, failedAlone, settlesLeaseLost) => {
        this.batches.ops++;
        this.batches.failedAlone += failedAlone;
        this.batches.settlesLeaseLost += settlesLeaseLost;
        if (members > 1) {
          this.batches.multi++;
          this.batches.members += members;
        }
      },
      fault: (n) => this.storeFault(n),
      committed: (n, c) => this.committed(n, c),
      // A claim whose acknowledgement is lost stays leased to a live worker that heartbeats it
      // forever (see docs/simulation.md, "Found"); its own fault class, off by default.
      loseAck: (n, c) => {
        const lose = c.claims.length === 0 || this.on("claimLostAck");
        if (!lose) this.sim.trace(`fault ${n.name} lost-ack withheld (claim)`);
        return lose;
      },
    }, { batchMax: this.batchMax });
  }

  // ---- policy and providers ----

  policy(node: SimNode): PolicyEngine {
    return {
      // An await the node may crash at, and an interleaving point.
      evaluate: (input: PolicyInput) => node.op("policy", async () => this.verdict(input)),
      acceptedPolicyRefs: () => ["sim:v1"],
    };
  }

  verdict(input: PolicyInput): PolicyResult {
    const id = input.request.action;
    const policyRef = "sim:v1";
    if (id.includes(":undo:")) return { result: "ALLOW", reasons: ["sim: compensations allowed"], policyRef };
    const plan = this.actions.find((a) => a.def.id === id);
    const n = (input.request.params as { n?: number }).n ?? 0;
    let p = plan?.policy ?? "deny";
    if (p === "mixed") p = (["allow", "deny", "approval"] as const)[n % 3]!;
    if (p === "approval" && !this.on("approvals")) p = "allow";
    if (p === "allow") return { result: "ALLOW", reasons: ["sim: allow"], policyRef };
    if (p === "deny") return { result: "DENY", reasons: ["sim: deny"], policyRef };
    if (input.approval?.status === "approved") return { result: "ALLOW", reasons: ["sim: approved"], policyRef };
    return { result: "REQUIRE_APPROVAL", reasons: ["sim: needs approval"], policyRef, approval: { approverRoles: ["approve"], quorum: plan?.quorum ?? 1, ttlMs: HOST_LIMITS.approvalTtlMs } };
  }

  isIdempotent(action: string): boolean {
    if (action.includes(":undo:")) return true;
    return this.actions.find((a) => a.def.id === action)?.def.idempotent ?? false;
  }

  connector(node: SimNode, claims: Map<string, ClaimSeen> | null): Connector {
    const call = (ctx: ConnectorContext): Promise<ConnectorReply> => this.providerCall(node, claims, ctx);
    if (this.options.plant === "double-effect") {
      // The planted bug: a connector that applies its effect twice.
      const twice = async (ctx: ConnectorContext): Promise<ConnectorReply> => {
        const r = await call(ctx);
        if (r.outcome === "success") this.applyEffect(ctx, this.obs.calls[this.obs.calls.length - 1]!);
        return r;
      };
      return defineConnector({ id: "svc", operations: { op: twice, undo: twice } });
    }
    return defineConnector({ id: "svc", operations: { op: call, undo: call } });
  }

  applyEffect(ctx: ConnectorContext, call: CallRecord): void {
    this.obs.effects.push({ key: ctx.idempotencyKey, action: ctx.request.action, idempotent: this.isIdempotent(ctx.request.action), call });
  }

  providerCall(node: SimNode, claims: Map<string, ClaimSeen> | null, ctx: ConnectorContext): Promise<ConnectorReply> {
    const base = ctx.invocationId.replace(/:undo:\d+$/, "");
    // The claim that fenced this step's intent; a node's latest claim only when no fenced intent is known.
    const claim = claims ? (this.#intentClaim.get(`${ctx.invocationId}#${ctx.step.index}`) ?? claims.get(base)) : undefined;
    const call: CallRecord = {
      n: ++this.#callSeq,
      at: this.sim.now,
      node: node.name,
      action: ctx.request.action,
      invocationId: base,
      compensation: ctx.invocationId !== base,
      stepIndex: ctx.step.index,
      key: ctx.idempotencyKey,
      decisionId: ctx.decisionId,
      attemptId: ctx.attemptId,
      ...(claim ? { attemptCount: claim.attemptCount, recoveryBase: claim.recoveryBase, claimAt: claim.at } : {}),
      behaviour: "",
    };
    this.obs.calls.push(call);
    // breakerFleet (item 6): the breaker row the store held when this call went out was open, and
    // it was committed before the claim this call runs under: the worker's check (before every
    // step, after the claim) must have seen it (docs/host.md, Circuit breakers).
    const op = call.compensation ? "undo" : "op";
    const row = this.#breakers.get(`svc.${op}`);
    if (row && claim && row.rec.state === "open" && row.rec.openUntil > this.sim.now && row.seq < claim.seq) {
      this.obs.breakerViolations.push(`call #${call.n} (${base} step ${call.stepIndex}) on ${node.name} under a claim at ${claim.at}, breaker ${op} open since ${row.rec.openedAt} until ${row.rec.openUntil}`);
    } else if (row && claim && !call.compensation && row.rec.state === "open" && row.rec.openUntil > this.sim.now && call.stepIndex > 0) {
      // A later step of the same attempt: the check before it (`beforeStep`) runs after the
      // previous step's reply came back, so a row committed before that reply must stop it.
      const prev = this.obs.calls.findLast((c) => c !== call && c.invocationId === base && !c.compensation && c.decisionId === call.decisionId && c.stepIndex === call.stepIndex - 1);
      if (prev?.replySeq !== undefined && row.seq < prev.replySeq) {
        this.obs.breakerViolations.push(`call #${call.n} (${base} step ${call.stepIndex}) on ${node.name}: breaker ${op} open since ${row.rec.openedAt} until ${row.rec.openUntil}, committed before step ${prev.stepIndex}'s reply (call #${prev.n})`);
      }
    }
    const idempotent = this.isIdempotent(ctx.request.action);
    const prior = idempotent ? this.obs.effects.find((e) => e.key === ctx.idempotencyKey) : undefined;
    const rng = this.rng;
    const f = (name: FaultName, w: number): number => (this.on(name) ? w : 0);
    let behaviour = rng.weighted({
      success: 55,
      permanent: f("connectorFail", 6),
      transient: f("connectorFail", 12),
      hang: f("connectorHang", 4),
      // Compensations answer late more often: a window for crashes mid-compensation (item 1).
      late: f("connectorLate", call.compensation ? 40 : 6),
      ambiguous: f("connectorAmbiguous", 5),
      accepted: call.compensation ? 0 : f("handoff", 10),
    });
    // A provider that honours keys answers a repeated idempotent call with the first result.
    if (prior && behaviour !== "transient" && behaviour !== "hang") behaviour = "success";
    call.behaviour = behaviour;
    this.sim.trace(`call #${call.n} ${node.name} ${ctx.request.action} ${base} step ${call.stepIndex} ${behaviour}`);
    const effect = (): void => {
      if (!prior) this.applyEffect(ctx, call);
    };
    const ref = `ref-${call.n}`;
    // Nodes in the middle of a compensation call: crashes favour them (recovery loops, item 1).
    if (call.compensation) this.compensating.add(node);
    const reply = (r: ConnectorReply): Promise<ConnectorReply> =>
      node.op("reply", async () => {
        this.compensating.delete(node);
        call.replySeq = this.#commitSeq;
        return r;
      });
    switch (behaviour) {
      case "success":
        effect();
        return reply({ outcome: "success", externalRef: ref, output: { call: call.n } });
      case "permanent":
        return reply({ outcome: "permanent_failure", reason: "sim: refused by the provider" });
      case "transient":
        return reply({ outcome: "transient_failure", reason: "sim: try again" });
      case "ambiguous":
        if (rng.chance(0.5)) effect();
        return reply({ outcome: "ambiguous", reason: "sim: connection reset after the request was sent" });
      case "hang":
        if (rng.chance(0.5)) effect();
        return new Promise<ConnectorReply>(() => undefined);
      case "late": {
        effect();
        const delay = rng.int(HOST_LIMITS.timeoutMs / 2, HOST_LIMITS.timeoutMs * 2);
        return new Promise<ConnectorReply>((resolve) => {
          node.clock.setTimer(delay, () => {
            call.replySeq = this.#commitSeq;
            resolve({ outcome: "success", externalRef: ref, output: { call: call.n, late: true } });
          });
        });
      }
      default: {
        const externalRef = `ext-${++this.#refSeq}`;
        const succeeds = rng.chance(0.75);
        if (succeeds) effect();
        this.scheduleCallbacks(externalRef, succeeds);
        return reply({ outcome: "accepted", externalRef });
      }
    }
  }

  /** Completion callbacks of a handed-off operation: normal, early, late, twice or contradicting. */
  scheduleCallbacks(externalRef: string, succeeds: boolean): void {
    const rng = this.rng;
    const f = (name: FaultName, w: number): number => (this.on(name) ? w : 0);
    const mode = rng.weighted({ normal: 6, early: f("callbackEarly", 2), late: f("callbackLate", 2), twice: f("callbackTwice", 2), contradict: f("callbackContradict", 1.5), never: 0.5 });
    this.sim.trace(`callbacks ${externalRef} ${mode} ${succeeds ? "success" : "failure"}`);
    const outcome = succeeds ? "success" : "failure";
    const other = succeeds ? "failure" : "success";
    const at = (ms: number, o: "success" | "failure"): void => this.deliver(externalRef, o, ms, 3);
    switch (mode) {
      case "normal":
        return at(rng.int(100, 8000), outcome);
      case "early":
        return at(0, outcome);
      case "late":
        return at(rng.int(20_000, 40_000), outcome);
      case "twice":
        at(rng.int(100, 5000), outcome);
        return at(rng.int(100, 9000), outcome);
      case "contradict":
        at(rng.int(100, 5000), outcome);
        return at(rng.int(5000, 30_000), other);
      default:
        return;
    }
  }

  /** One webhook delivery through the API node, retried (like a provider does) when not yet known. */
  deliver(externalRef: string, outcome: "success" | "failure", ms: number, retries: number): void {
    this.pendingDeliveries++;
    this.env.clock.setTimer(ms, () => {
      this.pendingDeliveries--;
      this.sim.trace(`deliver ${externalRef} ${outcome}`);
      this.api
        .complete(SCOPE, { connector: "svc", externalRef, outcome, ...(outcome === "success" ? { result: { ref: externalRef } } : { error: "sim: the operation failed" }) })
        .then(
          (a) => this.sim.trace(`delivered ${externalRef} ${a.disposition} ${a.status ?? ""}`),
          (e: unknown) => {
            const code = isWritError(e) ? e.code : "ERROR";
            this.sim.trace(`delivery ${externalRef} refused ${code}`);
            if ((code === "COMPLETION_UNKNOWN_REFERENCE" || code === "STORE_ERROR" || code === "STALE") && retries > 0) this.deliver(externalRef, outcome, 2000, retries - 1);
          },
        );
    });
  }

  // ---- nodes ----

  hostOn(node: SimNode, store: Store, actions: ReadonlyArray<ActionDefinition<{ n: number }>>, connector: Connector): Host {
    return createHostCore({
      store,
      actions,
      connectors: [connector],
      policy: this.policy(node),
      signingKey: KEYS.trusted,
      keyring: this.keyring,
      clock: node.clock,
      crypto: this.crypto,
      random: this.rng.fork().random(),
      timeoutMs: HOST_LIMITS.timeoutMs,
      inProgressTimeoutMs: HOST_LIMITS.inProgressTimeoutMs,
      recoveryMaxAttempts: HOST_LIMITS.recoveryMaxAttempts,
      retry: { maxAttempts: HOST_LIMITS.recoveryMaxAttempts, baseDelayMs: 200, maxDelayMs: 2000 },
      breaker: HOST_LIMITS.breaker,
      approvalTtlMs: HOST_LIMITS.approvalTtlMs,
      sweepMs: 4000,
      sealWithinMs: 20_000,
      retention: { ...HOST_LIMITS.retention, enabled: this.on("retention") },
      // Workers archive and prune the journal as they run, a few entries per transaction.
      ...(this.on("archive") ? { archive: { target: this.archive, everyMs: 7000, pruneBatch: 3, prunePauseMs: 10, segmentEntries: 25, keepLiveMs: 0 } } : {}),
    });
  }

  startWorker(): WorkerNode {
    const node = new SimNode(this.sim, `w${++this.#nodeSeq}`);
    const claims = new Map<string, ClaimSeen>();
    const deploy = this.on("redeploy") && this.#nodeSeq > 3 && this.rng.chance(0.3);
    const actions = deploy ? redeployed(this.actions, this.rng) : this.actions.map((a) => a.def);
    const host = this.hostOn(node, this.nodeStore(node), actions, this.connector(node, claims));
    // A batching seed runs more at once per worker, so that its transitions meet in batches.
    const slots = this.batchMax === undefined ? 2 : 4;
    const worker = host.worker({ id: node.name, concurrency: slots, batchSize: slots, leaseMs: HOST_LIMITS.leaseMs, heartbeatMs: 3000, pollMs: 4000 });
    this.sim.trace(`start ${node.name}${deploy ? " (redeployed)" : ""}`);
    const w: WorkerNode = { node, host, worker, claims };
    this.workers.push(w);
    worker.start();
    return w;
  }

  async setup(): Promise<void> {
    const a: Authority = { ...SCOPE, authorityRef: "auth", principal: { ...ACTOR }, grantor: { type: "user", id: "root" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };
    await this.inner.transact((tx) => tx.putAuthority(SCOPE, a));
    this.api = this.hostOn(this.apiNode, this.nodeStore(this.apiNode), this.actions.map((x) => x.def), this.connector(this.apiNode, null));
    const n = this.rng.int(this.config.workers[0], this.config.workers[1]);
    for (let i = 0; i < n; i++) this.startWorker();
    if (this.on("bare")) {
      const node = new SimNode(this.sim, "bare");
      this.bare = { node, boundary: this.bareBoundary(node) };
    }
  }

  bareBoundary(node: SimNode): Boundary {
    return createBoundaryCore({
      store: this.nodeStore(node),
      keyring: this.keyring,
      actions: this.actions.map((a) => a.def),
      connectors: [this.connector(node, null)],
      standingFromStore: true,
      acceptedPolicyRefs: ["sim:v1"],
      timeoutMs: HOST_LIMITS.timeoutMs,
      inProgressTimeoutMs: HOST_LIMITS.inProgressTimeoutMs,
      clock: node.clock,
      crypto: this.crypto,
      random: this.rng.fork().random(),
    });
  }

  // ---- client events ----

  request(action: string, key: string, n: number): ActionRequest {
    return { ...SCOPE, action, actionVersion: "1", actor: { ...ACTOR }, authorityRef: "auth", params: { n }, idempotencyKey: key };
  }

  /** Runs a client flow; its outcome goes to the trace, unexpected errors to the notes. */
  flow(name: string, p: Promise<unknown>, expected: readonly string[] = []): void {
    p.then(
      (v) => this.sim.trace(`${name} ok ${typeof v === "string" ? v : ""}`),
      (e: unknown) => {
        const code = isWritError(e) ? e.code : "ERROR";
        this.sim.trace(`${name} refused ${code}`);
        if (!["STORE_ERROR", "STALE", "INVALID_STATE", "NOT_FOUND", "CONFLICT", ...expected].includes(code)) this.obs.notes.push(`${name}: ${code} ${errorMessage(e)}`);
      },
    );
  }

  submit(i: number): void {
    const plan = this.rng.pick(this.actions);
    // A client retries within the replay window only: never the key of a pruned invocation.
    const retryable = this.submitted.filter((x) => !this.obs.pruned.has(x.invocationId));
    const resubmit = retryable.length > 0 && this.rng.chance(0.15);
    const prev = resubmit ? this.rng.pick(retryable) : null;
    const key = prev ? prev.key : `k${i}`;
    const action = prev ? prev.action : plan.def.id;
    const n = prev ? Number(prev.key.slice(1)) : i;
    this.sim.trace(`submit ${action} ${key}`);
    this.flow(
      `submit ${key}`,
      this.api.submit(this.request(action, key, n)).then((r) => {
        if (!r.replayed) this.submitted.push({ invocationId: r.invocation.invocationId, key, action });
        return r.invocation.invocationId;
      }),
    );
  }

  approvalEvent(): void {
    const rng = this.rng;
    this.flow(
      "approval",
      this.api.approvals.list(SCOPE).then(async (list) => {
        const open = list.filter((a) => a.status === "pending" || (a.status === "approved" && this.on("revoke")));
        if (open.length === 0) return "none";
        const ap = rng.pick(open);
        const who = rng.pick(APPROVERS);
        const by: Approver = { actor: { type: "user", id: who }, roles: ["approve"] };
        const verb = ap.status === "approved" ? "revoke" : rng.weighted({ approve: 8, deny: 1, revoke: this.on("revoke") ? 1 : 0 });
        this.sim.trace(`approval ${verb} ${ap.approvalId} by ${who}`);
        if (verb === "revoke") {
          await this.api.approvals.revoke(SCOPE, ap.approvalId, by);
          this.obs.revokes.add(ap.approvalId);
        } else {
          const after = await (verb === "approve" ? this.api.approvals.approve(SCOPE, ap.approvalId, by) : this.api.approvals.deny(SCOPE, ap.approvalId, by));
          // An approval found expired answers with its expiry and records no vote (its votes may
          // still hold this approver's earlier one).
          if (after.status !== "expired" && after.votes.some((v) => v.approver.id === who && v.verdict === verb)) this.obs.votes.push({ approvalId: ap.approvalId, approver: who, verdict: verb });
        }
        return verb;
      }),
      ["FORBIDDEN"],
    );
  }

  cancelEvent(): void {
    if (this.submitted.length === 0) return;
    const s = this.rng.pick(this.submitted);
    this.sim.trace(`cancel ${s.invocationId}`);
    this.flow(
      `cancel ${s.invocationId}`,
      this.api.cancel(SCOPE, s.invocationId, { type: "user", id: "ops" }).then((inv) => {
        if (inv.status === "cancelled") {
          this.obs.cancels.set(inv.invocationId, this.sim.now);
        }
        return inv.status;
      }),
    );
  }

  /**
   * The archiver's part (docs/retention.md): seal the scope's journal and move its archive
   * watermark to a seq the seed picks between where it is and the sealed head.
   */
  archiveEvent(): void {
    const store = this.nodeStore(this.apiNode);
    this.flow(
      "archive",
      (async () => {
        await sealScopeNow(store, this.crypto, SCOPE);
        const [head, through] = await store.transact(async (tx) => [(await tx.journalHead(SCOPE))?.seq ?? 0, await tx.journalArchivedThrough(SCOPE)] as const);
        if (this.on("archive")) {
          // With archiving on, only the archiver moves the watermark (it writes the segment first).
          const run = await this.archiveNow(store);
          this.sim.trace(`archive through ${run} (head ${head}, archiver)`);
          return String(run);
        }
        const to = this.rng.int(through, head);
        this.sim.trace(`archive through ${to} (head ${head})`);
        if (to > through) await store.transact((tx) => tx.setJournalArchivedThrough(SCOPE, to));
        return String(to);
      })(),
    );
  }

  /** An operator's `writ retention prune` on the API node, beside the workers' background pruners. */
  pruneEvent(): void {
    this.flow("prune", this.prune());
  }

  /** One prune run on the API node's view of the store (its transactions are kernel operations). */
  prune(): Promise<string> {
    const settings = { ...HOST_LIMITS.retention, completionsMs: 40_000, deliveriesMs: 40_000, pauseMs: 0, enabled: true };
    return runRetention(this.nodeStore(this.apiNode), settings, { now: this.sim.now }).then((r) => `${r.pruned.invocations} pruned, ${r.held.not_archived} not archived`);
  }

  /** The archiver catching up: the whole journal sealed and archived. */
  async archiveAll(): Promise<void> {
    const store = this.nodeStore(this.apiNode);
    await sealScopeNow(store, this.crypto, SCOPE);
    const head = (await store.transact((tx) => tx.journalHead(SCOPE)))?.seq ?? 0;
    if (this.on("archive")) {
      this.sim.trace(`archive through ${await this.archiveNow(store)} (all, archiver)`);
      return;
    }
    if (head > (await store.transact((tx) => tx.journalArchivedThrough(SCOPE)))) await store.transact((tx) => tx.setJournalArchivedThrough(SCOPE, head));
    this.sim.trace(`archive through ${head} (all)`);
  }

  /** One archiver run on `store` into the shared target (checkpoint, segment, watermark, prune); the watermark after it. */
  private async archiveNow(store: Store): Promise<number> {
    await archiveScope(store, SCOPE, { target: this.archive, crypto: this.crypto, keyring: this.keyring, signingKey: KEYS.trusted, clock: this.env.clock, segmentEntries: 25, pruneBatch: 3 });
    return store.transact((tx) => tx.journalArchivedThrough(SCOPE));
  }

  /** An operator settles an open reconciliation with the provider's truth. */
  resolveEvent(): void {
    this.flow(
      "resolve",
      this.api.reconcile.list(SCOPE, { status: "open" }).then(async (recs) => {
        if (recs.length === 0) return "none";
        const rec = this.rng.pick(recs);
        const inv = await this.api.get(SCOPE, rec.invocationId);
        const key = inv ? this.api.context.boundary.stepKey(SCOPE, inv.action, inv.idempotencyKey, rec.stepIndex) : "";
        const outcome = this.obs.effects.some((e) => e.key === key) ? "succeeded" : "failed";
        this.sim.trace(`resolve ${rec.reconciliationId} ${outcome}`);
        await this.api.reconcile.resolve(SCOPE, rec.reconciliationId, { outcome, note: "sim operator: provider records checked", by: { type: "user", id: "ops" } });
        this.obs.resolves.add(rec.reconciliationId);
        return outcome;
      }),
    );
  }

  crashEvent(): void {
    const live = [...this.workers.filter((w) => w.node.alive).map((w) => w.node), ...(this.bare?.node.alive ? [this.bare.node] : [])];
    if (live.length === 0) return;
    const busy = live.filter((n) => this.compensating.has(n));
    const node = busy.length > 0 && this.rng.chance(0.8) ? this.rng.pick(busy) : this.rng.pick(live);
    this.compensating.delete(node);
    // It dies with write transitions queued or in a batch in flight: they never hear back.
    if ((this.#outstanding.get(node) ?? 0) > 0) this.batches.diedMidBatch++;
    node.crash();
    if (node === this.bare?.node) {
      for (const k of this.bareRunning) this.obs.bareInterrupted.push(k);
      this.bareRunning.clear();
      const fresh = new SimNode(this.sim, `bare${++this.#nodeSeq}`);
      this.bare = { node: fresh, boundary: this.bareBoundary(fresh) };
      return;
    }
    if (this.workers.filter((w) => w.node.alive).length === 0 || this.rng.chance(0.7)) {
      this.env.clock.setTimer(this.rng.int(500, 15_000), () => {
        if (!this.draining) this.startWorker();
      });
    }
  }

  readonly bareRunning = new Set<{ action: string; key: string }>();
  readonly compensating = new Set<SimNode>();
  #bareSeq = 0;

  /** A bare boundary.execute of a fresh key, under a decision signed for it. */
  bareEvent(): void {
    if (!this.bare) return;
    const { boundary } = this.bare;
    const plan = this.rng.pick(this.actions);
    const key = `bare-${++this.#bareSeq}`;
    const req = this.request(plan.def.id, key, this.#bareSeq);
    const token = this.sign(req);
    // A caller that keeps a second decision it got earlier and retries a failure with it (item 8).
    const spare = this.rng.chance(0.5) ? this.sign(req, -1000) : null;
    const entry = { action: plan.def.id, key };
    this.bareRunning.add(entry);
    this.sim.trace(`bare ${plan.def.id} ${key}${spare ? " (with a spare decision)" : ""}`);
    this.flow(
      `bare ${key}`,
      boundary.execute(req, token).then(async (a) => {
        if (a.state === "FAILED" && spare) {
          this.sim.trace(`bare ${key} retried under the spare decision`);
          a = await boundary.execute(req, spare);
        }
        this.bareRunning.delete(entry);
        return a.state;
      }),
    );
  }

  /** A decision for a bare request, issued `ageMs` from now (negative: in the past). */
  sign(req: ActionRequest, ageMs = 0): string {
    return signDecisionWith(this.crypto, KEYS.trusted, {
      v: 1,
      decisionId: `dec_sim_${this.sim.now}_${++this.#bareSeq}`,
      result: "ALLOW",
      requestDigest: computeRequestDigest(this.crypto, req),
      ...SCOPE,
      authorityRef: req.authorityRef,
      policyRef: "sim:v1",
      issuedAt: this.sim.now + ageMs,
      reasons: ["sim: bare caller"],
    });
  }

  /** After the drain: each interrupted bare key is executed again under a fresh decision. */
  bareRetry(): Promise<void>[] {
    const b = this.bare;
    if (!b) return [];
    return this.obs.bareInterrupted.map(({ action, key }) => {
      const req = this.request(action, key, Number(key.slice(5)));
      return b.boundary.execute(req, this.sign(req)).then(
        (a) => void this.obs.bareAfterDrain.push({ action, key, state: a.state, ...(a.reasonCode ? { reasonCode: a.reasonCode } : {}) }),
        (e: unknown) => void this.obs.bareAfterDrain.push({ action, key, state: "ERROR", reasonCode: isWritError(e) ? e.code : "ERROR" }),
      );
    });
  }

  /** True once no invocation can move without outside help. */
  async settled(): Promise<boolean> {
    if (this.pendingDeliveries > 0) return false;
    const invs = await this.inner.transact((tx) => tx.listInvocations(SCOPE, { limit: 1000 }));
    return invs.every((i: Invocation) => ["succeeded", "failed", "denied", "cancelled", "reconciliation_required"].includes(i.status) || (i.status === "parked" && i.deadlineAt === undefined));
  }
}
