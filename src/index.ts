/**
 * Writ: a governed action execution host.
 *
 * @example
 * import { createBoundary, defineAction, defineConnector, memoryStore, generateSigningKey, signDecision, createKeyring, requestDigest } from "writ";
 */
import { createBoundaryCore, type Boundary, type BoundaryOptions } from "./core/boundary.js";
import { signDecisionWith, verifyDecisionWith, type VerifyResult } from "./core/decision.js";
import { computeRequestDigest } from "./core/digest.js";
import { WritError } from "./core/errors.js";
import { base64url } from "./core/encoding.js";
import { verifyStoredJournal, writeCheckpoint, type JournalVerification } from "./core/journal.js";
import { checkSealWithinMs, sequencerFor } from "./core/sequencer.js";
import type { Keyring, SigningKey } from "./core/keyring.js";
import type { Clock, CryptoPort, Random } from "./core/ports.js";
import type { Store } from "./core/store.js";
import type { DecisionPayload, JournalCheckpoint, Scope } from "./core/types.js";
import { defaultPorts } from "./node/defaults.js";
import { createHostCore, type Host } from "./host/host.js";
import type { HostOptions } from "./host/options.js";

export * from "./core/index.js";
export type { Host, ResolveInput, SubmitResult } from "./host/host.js";
export type { Worker, WorkerOptions } from "./host/worker.js";
export type { HostEvent } from "./host/events.js";
export type { BreakerOptions, Logger } from "./host/options.js";
export { memoryStore } from "./stores/memory/index.js";
export { sqliteStore, type SqliteStore, type SqliteStoreOptions } from "./stores/sqlite/index.js";
export { postgresStore, type PostgresStore, type PostgresStoreOptions } from "./stores/postgres/index.js";
export * from "./policy/index.js";
export * from "./connectors/index.js";
export { versionedCedarPolicy, type VersionedPolicy } from "./host/policy-versions.js";
export { defineConfig, type WritConfig } from "./config/define-config.js";
export type { Approvals, Approver } from "./host/approvals.js";
export type { Authorities, AuthorityInput } from "./host/authorities.js";
export type { CompletionAnswer, CompletionInput, CompletionSecret } from "./host/completions.js";
export { runStoreConformance, storeConformanceCases } from "./stores/conformance/index.js";
export { systemClock, systemRandom } from "./node/clock.js";
export { nodeCryptoPort } from "./node/crypto.js";

export type CreateBoundaryOptions = Omit<BoundaryOptions, "clock" | "crypto" | "random"> & {
  /** @defaultValue the system clock */
  clock?: Clock;
  /** @defaultValue node:crypto */
  crypto?: CryptoPort;
  /** @defaultValue node:crypto randomBytes */
  random?: Random;
};

/**
 * Creates the execution boundary: the only door to connectors (docs/boundary.md).
 * @example
 * const boundary = createBoundary({ store: memoryStore(), keyring, actions: [refund], connectors: [payments],
 *   authority: (scope, ref) => authorities.get(ref) ?? null, acceptedPolicyRefs: ["policy:v1"] });
 * const attempt = await boundary.execute(request, decisionToken);
 */
export function createBoundary(options: CreateBoundaryOptions): Boundary {
  return createBoundaryCore({ ...options, ...defaultPorts(options) });
}

export type CreateHostOptions = Omit<HostOptions, "clock" | "crypto" | "random"> & { clock?: Clock; crypto?: CryptoPort; random?: Random };

/**
 * Creates the durable host (docs/host.md): admission, workers with leases and fencing, multi-step
 * checkpoints, retries, reconciliation and bounded recovery.
 * @example
 * const host = createHost({ store: sqliteStore(), actions, connectors, policy, signingKey });
 * await host.submit(request);
 * const worker = host.worker({ concurrency: 8 }); worker.start();
 */
export function createHost(options: CreateHostOptions): Host {
  return createHostCore({ ...options, ...defaultPorts(options) });
}

/** Generates an Ed25519 signing key for decisions; `kid` defaults to a random id. */
export function generateSigningKey(options: { kid?: string; crypto?: CryptoPort; random?: Random } = {}): SigningKey {
  const { crypto, random } = defaultPorts(options);
  const { privateJwk, publicJwk } = crypto.generateEd25519();
  const kid = options.kid ?? `key_${base64url(random.bytes(9))}`;
  return { kid, privateJwk: { ...privateJwk, kid }, publicJwk: { ...publicJwk, kid, alg: "EdDSA", use: "sig" } };
}

export type DecisionInput = Omit<DecisionPayload, "v" | "decisionId" | "issuedAt" | "reasons"> & Partial<Pick<DecisionPayload, "decisionId" | "issuedAt" | "reasons">>;

/**
 * Signs a decision as JWS compact (EdDSA). `decisionId` defaults to a random id, `issuedAt` to now.
 * @example
 * const token = signDecision(key, { result: "ALLOW", requestDigest: requestDigest(req), tenantId: "t1",
 *   spaceId: "s1", authorityRef: "auth-1", policyRef: "policy:v1" });
 */
export function signDecision(key: SigningKey, input: DecisionInput, ports: { clock?: Clock; crypto?: CryptoPort; random?: Random } = {}): string {
  const { clock, crypto, random } = defaultPorts(ports);
  if (typeof input !== "object" || input === null) throw new WritError("INVALID_ARGUMENT", "signDecision needs a decision payload object");
  const payload: DecisionPayload = {
    v: 1,
    decisionId: input.decisionId ?? `dec_${base64url(random.bytes(16))}`,
    result: input.result,
    requestDigest: input.requestDigest,
    tenantId: input.tenantId,
    spaceId: input.spaceId,
    authorityRef: input.authorityRef,
    policyRef: input.policyRef,
    issuedAt: input.issuedAt ?? clock.now(),
    reasons: input.reasons ?? [],
  };
  if (input.approvalRef !== undefined) payload.approvalRef = input.approvalRef;
  return signDecisionWith(crypto, key, payload);
}

/** Verifies a decision token's format, key and signature against a keyring (checks 1-3 in docs/boundary.md). */
export function verifyDecision(token: unknown, keyring: Keyring, ports: { crypto?: CryptoPort } = {}): VerifyResult {
  return verifyDecisionWith(defaultPorts(ports).crypto, keyring, token);
}

/** `sha256:<base64url>` over the RFC 8785 canonical form of the request. */
export function requestDigest(request: unknown, ports: { crypto?: CryptoPort } = {}): string {
  return computeRequestDigest(defaultPorts(ports).crypto, request);
}

/**
 * Seals, now, the journal entries that are committed and not sealed yet: of `scope`, or (without
 * one) of every scope that has some. Runs through this process's sequencer for the store (one run
 * per scope at a time), so it never races a running one. Returns how many entries it sealed.
 * @example
 * await host.submit(request);
 * await sealJournalNow(store, scope); // the admission's entry now has its seq and hash
 */
export async function sealJournalNow(store: Store, scope?: Scope, ports: { crypto?: CryptoPort } = {}): Promise<number> {
  const seq = sequencerFor(store, defaultPorts(ports).crypto);
  if (scope !== undefined) return seq.seal(scope);
  let total = 0;
  for (;;) {
    const n = await seq.sealAll();
    total += n;
    if (n === 0) return total;
  }
}

/** Seals what is committed in the scope, then writes a signed checkpoint of its sealed head. */
export async function checkpointJournal(store: Store, key: SigningKey, scope: Scope, ports: { clock?: Clock; crypto?: CryptoPort } = {}): Promise<JournalCheckpoint | null> {
  const { clock, crypto } = defaultPorts(ports);
  await sequencerFor(store, crypto).seal(scope);
  return store.transact((tx) => writeCheckpoint(tx, crypto, scope, key, clock.now()));
}

/**
 * Recomputes a scope's sealed journal chain and checks its signed checkpoints; an entry still
 * unsealed more than `sealWithinMs` (default 250) after its `at` is an `unsealed_overdue` problem.
 */
export async function verifyJournalIn(store: Store, keyring: Keyring, scope: Scope, ports: { crypto?: CryptoPort; clock?: Clock; sealWithinMs?: number } = {}): Promise<JournalVerification> {
  const { crypto, clock } = defaultPorts(ports);
  const sealWithinMs = checkSealWithinMs("verifyJournalIn", ports.sealWithinMs);
  return verifyStoredJournal(store, crypto, keyring, scope, { now: clock.now(), sealWithinMs });
}
export * from "./mcp/index.js";
