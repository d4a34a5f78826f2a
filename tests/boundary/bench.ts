/**
 * A boundary test bench: keys, keyring, an authority and approval registry, a recording connector,
 * a manual clock, and helpers to mint requests and decisions. Portable: it imports only the core,
 * so the workerd vector run bundles it (tests/workerd); the runtime's ports, keys and key minting
 * come in as a BenchEnv. fixture.ts is the Node instance every boundary suite uses.
 */
import { z } from "zod";
import { createBoundaryCore, type Boundary, type BoundaryOptions, type ExecuteOptions } from "../../src/core/boundary.js";
import { defineAction, defineConnector, type ConnectorContext, type ConnectorReply } from "../../src/core/action.js";
import { signDecisionWith } from "../../src/core/decision.js";
import { computeRequestDigest } from "../../src/core/digest.js";
import { createKeyring, type Keyring, type SigningKey } from "../../src/core/keyring.js";
import { manualClock, type ManualClock } from "../../src/core/manual-clock.js";
import type { CryptoPort, Random } from "../../src/core/ports.js";
import type { Store } from "../../src/core/store.js";
import type { ActionRequest, Approval, Authority, DecisionPayload, Scope } from "../../src/core/types.js";

export const SCOPE: Scope = { tenantId: "t1", spaceId: "s1" };
export const POLICY_REF = "policy:v1";
export const AUTH_REF = "auth-1";

/** What a runtime brings to a bench: its ports, the three keys, and how it mints unique keys. */
export interface BenchEnv {
  crypto: CryptoPort;
  random: Random;
  /** `trusted` is in the keyring, `revoked` is there revoked, `stranger` is not there. */
  keys: { trusted: SigningKey; revoked: SigningKey; stranger: SigningKey };
  uniqueKey: (prefix?: string) => string;
}

export type ConnectorMode = ConnectorReply | "throw" | "hang" | ((ctx: ConnectorContext) => unknown);

export interface Bench {
  env: BenchEnv;
  store: Store;
  clock: ManualClock;
  /** The scope requests use. */
  scope: Scope;
  /** With `fromStore`: writes the authority and approval maps to the store. */
  syncStanding: () => Promise<void>;
  keyring: Keyring;
  authorities: Map<string, Authority>;
  approvals: Map<string, Approval>;
  acceptedRefs: string[];
  calls: ConnectorContext[];
  /** What the `pay` connector does next; default success. */
  mode: { current: ConnectorMode };
  boundary(overrides?: Partial<BoundaryOptions>): Boundary;
  request(overrides?: Partial<ActionRequest>): ActionRequest;
  decision(req: ActionRequest, overrides?: Partial<DecisionPayload>, key?: SigningKey): string;
  payload(req: ActionRequest, overrides?: Partial<DecisionPayload>): DecisionPayload;
  execute(req: unknown, token: unknown, opts?: ExecuteOptions, overrides?: Partial<BoundaryOptions>): ReturnType<Boundary["execute"]>;
}

export const refund = defineAction({
  id: "payments.refund",
  version: "1",
  params: z.object({ paymentId: z.string(), amount: z.number() }),
  idempotent: true,
  steps: [{ name: "refund", connector: "pay", operation: "refund" }],
});

export const twoStep = defineAction({
  id: "orders.fulfil",
  version: "1",
  params: z.object({ orderId: z.string() }),
  idempotent: true,
  steps: [
    { name: "reserve", connector: "pay", operation: "refund" },
    { name: "ship", connector: "pay", operation: "refund", input: ({ params, outputs }) => ({ ...params, reserved: outputs.reserve ?? null }) },
  ],
});

export const ghost = defineAction({
  id: "ghost.run",
  version: "1",
  params: z.object({ paymentId: z.string(), amount: z.number() }),
  idempotent: true,
  steps: [{ name: "run", connector: "nowhere", operation: "run" }],
});

/**
 * `fromStore`: the boundary reads authorities and approvals from the store inside its consumption
 * transaction (`standingFromStore`, as the host runs it); the bench then works in a scope of its own
 * and `syncStanding()` writes the maps' contents to the store.
 */
export function makeBenchIn(env: BenchEnv, store: Store, opts: { fromStore?: boolean } = {}): Bench {
  const { crypto, keys: KEYS, uniqueKey } = env;
  const scope: Scope = opts.fromStore ? { tenantId: uniqueKey("t"), spaceId: "s1" } : SCOPE;
  const clock = manualClock(1_800_000_000_000);
  const keyring = createKeyring([
    { kid: KEYS.trusted.kid, publicJwk: KEYS.trusted.publicJwk },
    { kid: KEYS.revoked.kid, publicJwk: KEYS.revoked.publicJwk, status: "revoked" },
  ]);
  const authorities = new Map<string, Authority>();
  authorities.set(AUTH_REF, {
    ...scope,
    authorityRef: AUTH_REF,
    principal: { type: "agent", id: "bot-1" },
    grantor: { type: "user", id: "alice" },
    actions: ["*"],
    constraints: {},
    status: "active",
    createdAt: 0,
    updatedAt: 0,
  });
  const approvals = new Map<string, Approval>();
  const acceptedRefs = [POLICY_REF];
  const calls: ConnectorContext[] = [];
  const mode: { current: ConnectorMode } = { current: { outcome: "success", externalRef: "ext-1", output: { ok: true } } };
  const pay = defineConnector({
    id: "pay",
    operations: {
      refund: async (ctx) => {
        calls.push(ctx);
        const m = mode.current;
        if (m === "throw") throw new Error("provider exploded");
        if (m === "hang") return new Promise<ConnectorReply>(() => undefined);
        if (typeof m === "function") return (await m(ctx)) as ConnectorReply;
        return m;
      },
    },
  });
  const base = (): BoundaryOptions => ({
    store,
    keyring,
    actions: [refund, twoStep, ghost],
    connectors: [pay],
    ...(opts.fromStore ? { standingFromStore: true } : { authority: (_s: Scope, ref: string) => authorities.get(ref) ?? null, approval: (_s: Scope, ref: string) => approvals.get(ref) ?? null }),
    acceptedPolicyRefs: acceptedRefs,
    timeoutMs: 1000,
    clock,
    crypto,
    random: env.random,
  });
  const boundary = (overrides: Partial<BoundaryOptions> = {}): Boundary => createBoundaryCore({ ...base(), ...overrides });
  const shared = boundary();
  const request = (o: Partial<ActionRequest> = {}): ActionRequest => ({
    ...scope,
    action: "payments.refund",
    actionVersion: "1",
    actor: { type: "agent", id: "bot-1" },
    authorityRef: AUTH_REF,
    params: { paymentId: "pay_1", amount: 10 },
    idempotencyKey: uniqueKey(),
    ...o,
  });
  const payload = (req: ActionRequest, o: Partial<DecisionPayload> = {}): DecisionPayload => ({
    v: 1,
    decisionId: uniqueKey("dec"),
    result: "ALLOW",
    requestDigest: computeRequestDigest(crypto, req),
    tenantId: req.tenantId,
    spaceId: req.spaceId,
    authorityRef: req.authorityRef,
    policyRef: POLICY_REF,
    issuedAt: clock.now(),
    reasons: ["test"],
    ...o,
  });
  const decision = (req: ActionRequest, o: Partial<DecisionPayload> = {}, key: SigningKey = KEYS.trusted): string => signDecisionWith(crypto, key, payload(req, o));
  const syncStanding = async (): Promise<void> => {
    if (!opts.fromStore) return;
    await store.transact(async (tx) => {
      for (const a of authorities.values()) await tx.putAuthority({ tenantId: a.tenantId, spaceId: a.spaceId }, a);
      for (const a of approvals.values()) await tx.putApproval({ tenantId: a.tenantId, spaceId: a.spaceId }, a);
    });
  };
  return {
    env,
    store,
    clock,
    scope,
    syncStanding,
    keyring,
    authorities,
    approvals,
    acceptedRefs,
    calls,
    mode,
    boundary,
    request,
    decision,
    payload,
    execute: (req, token, opts, overrides) => (overrides ? boundary(overrides) : shared).execute(req, token, opts),
  };
}
