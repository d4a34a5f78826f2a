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
import { ID_RANDOM_BYTES, timeOrderedId } from "./core/ids.js";
import { verifyStoredJournal, writeCheckpoint, type JournalVerification } from "./core/journal.js";
import type { ArchiveTarget } from "./core/archive-format.js";
import { checkSealWithinMs, sequencerFor, sequencerHintClock } from "./core/sequencer.js";
import { systemClock } from "./node/clock.js";
import type { Keyring, SigningKey } from "./core/keyring.js";
import type { Clock, CryptoPort, Random } from "./core/ports.js";
import type { Store } from "./core/store.js";
import type { DecisionPayload, JournalCheckpoint, Scope } from "./core/types.js";
import { defaultPorts } from "./node/defaults.js";

// The public names of `writ`, each named (no `export *`): what README.md and docs/ use, and the
// types of their options and results. The list and what was left out: docs/architecture.md,
// "Entries". The subpath entries (package.json "exports": writ/core, writ/sqlite, ...) offer parts alone.
export { defineConfig, type WritConfig } from "./config/define-config.js";
export { httpConnector } from "./connectors/http/http-connector.js";
export { defaultStatusOutcome } from "./connectors/http/http-mapping.js";
export { HTTP_DEFAULTS, HTTP_METHODS, HTTP_STATUS_OUTCOMES, type HttpConnectorOptions, type HttpExternalRef, type HttpHeaders, type HttpMethod, type HttpOperation, type HttpStatusOutcome, type HttpStatusOutcomes } from "./connectors/http/http-options.js";
export { sqlConnector, type SqlConnector } from "./connectors/sql/sql-connector.js";
export { SQL_DEFAULTS, type SqlConnectorOptions, type SqliteDatabaseLike, type SqliteStatementLike, type SqlOperation, type SqlParams, type SqlResult, type SqlRow, type SqlTarget } from "./connectors/sql/sql-options.js";
export { type ActionDefinition, type Connector, type ConnectorContext, type ConnectorOperation, type ConnectorReply, defineAction, defineConnector, type RetryPolicy, type StepDefinition, type StepInputContext } from "./core/action.js";
export { type Attempt, type Boundary, type BoundaryEvent, type BoundaryOptions, type ExecuteOptions } from "./core/boundary.js";
export { canonicalize, parseJsonStrict } from "./core/canonical.js";
export { BOUNDARY_CHECKS } from "./core/checks.js";
export { DECISION_TYP, MAX_DECISION_LENGTH, type ParsedDecision, parseDecision, type VerifyCode, type VerifyResult } from "./core/decision.js";
export { base64url, fromBase64url, fromUtf8, utf8 } from "./core/encoding.js";
export { ERROR_CODES, type ErrorCode, errorMessage, isWritError, LeaseLostError, OUTCOME_CODES, type OutcomeCode, REFUSAL_CODES, type RefusalCode, WritError, type WritErrorOptions } from "./core/errors.js";
export { appendJournal, entryHash, JOURNAL_PROBLEM_KINDS, type JournalDraft, type JournalProblem, type JournalProblemKind, type JournalVerification, readWholeJournal, verifyArchivedChain, verifyJournal, writeCheckpoint } from "./core/journal.js";
export { type ArchivedSegment, type ArchiveTarget, decodeSegment, readArchive, type SegmentHeader, segmentName } from "./core/archive-format.js";
export { archiveScope, type ArchiverOptions, type ArchiveRun, pruneArchived } from "./core/archiver.js";
export { directoryArchive } from "./node/archive-dir.js";
export { askWitnesses, type CheckpointWitness, publishCheckpoint, type WitnessAnswer, witnessProblems } from "./core/witness.js";
export { fileWitness, httpWitness } from "./node/witness.js";
export { createKeyring, KEY_STATUSES, type Keyring, type KeyringEntry, type KeyStatus, type SigningKey } from "./core/keyring.js";
export { manualClock, type ManualClock } from "./core/manual-clock.js";
export { functionPolicy, type PolicyEngine, type PolicyInput, type PolicyResult } from "./core/policy.js";
export { type Clock, type CryptoPort, type PrivateJwk, type PublicJwk, type Random } from "./core/ports.js";
export { redact, type RedactContext, REDACTED, type RedactHook } from "./core/redact.js";
export { type DataKeyPort, type SensitiveMap } from "./core/sealing.js";
export { DEFAULT_SEAL_WITHIN_MS, MAX_SEAL_WITHIN_MS, type Sequencer } from "./core/sequencer.js";
export { type InferOutput, type StandardSchemaV1 } from "./core/standard-schema.js";
export { type ClaimOptions, type InvocationFilter, type ListOptions, type Store, type StoreTx } from "./core/store.js";
export { type ActionRequest, type Actor, ACTOR_TYPES, type ActorType, API_ROLES, type ApiKeyRecord, type ApiRole, type Approval, APPROVAL_STATUSES, type ApprovalStatus, type ApprovalVote, ATTEMPT_STATES, type AttemptRecord, type AttemptState, type Authority, AUTHORITY_STATUSES, type AuthorityStatus, COMPLETION_DISPOSITIONS, COMPLETION_OUTCOMES, type CompletionDisposition, type CompletionOutcome, type CompletionRecord, type ConsumedDecision, DECISION_RESULTS, type DecisionPayload, type DecisionResult, type Fence, IDEMPOTENCY_STATES, type IdempotencyRecord, type IdempotencyState, type Invocation, INVOCATION_STATUSES, type InvocationStatus, type JournalCheckpoint, type JournalEntry, type Json, POLICY_VERSION_STATUSES, type PolicyVersion, type PolicyVersionStatus, type ReasonCode, RECONCILIATION_CODES, RECONCILIATION_STATUSES, type ReconciliationCode, type ReconciliationRecord, type ReconciliationStatus, type Scope, SETTLEMENT_CODES, type SettlementCode, STEP_STATUSES, type StepCheckpoint, type StepStatus, type Submitter, TERMINAL_INVOCATION_STATUSES, type UnsealedEntry } from "./core/types.js";
export { signWebhook, verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookHeaders } from "./core/webhook.js";
export { type Approvals, type Approver } from "./host/approvals.js";
export { type Authorities, type AuthorityInput } from "./host/authorities.js";
export { type CompletionAnswer, type CompletionInput, type CompletionSecret } from "./host/completions.js";
export { type HostEvent } from "./host/events.js";
export { type Host, type ResolveInput, type SubmitResult } from "./host/host.js";
export { createHost, type CreateHostOptions } from "./host/index.js";
export { type BreakerOptions, type Logger } from "./host/options.js";
export { versionedCedarPolicy, type VersionedPolicy } from "./host/policy-versions.js";
export { type Worker, type WorkerOptions } from "./host/worker.js";
export { mcpConnector, type McpConnector, type McpConnectorOptions, type McpUpstream } from "./mcp/connector.js";
export { createMcpServer, type McpGatewayOptions } from "./mcp/gateway.js";
export { createMcpHttp, type McpHttp, type McpHttpOptions } from "./mcp/http.js";
export { importMcpTools, type ImportMcpToolsOptions } from "./mcp/import.js";
export { type WritToolResult } from "./mcp/results.js";
export { type McpStdioOptions, type RunningMcpStdio, serveMcpStdio } from "./mcp/stdio.js";
export { systemClock, systemRandom } from "./node/clock.js";
export { nodeCryptoPort, type NodeCryptoOptions, type VerifyPlacement } from "./node/crypto.js";
export { cedarPolicy, type CedarPolicyEngine, type CedarPolicyOptions } from "./policy/cedar-engine.js";
export { type CedarEntity, type CedarSchemaInput, policySetRef, prepareCedarPolicySet, type PrepareCedarPolicySetOptions, type PreparedCedarPolicySet } from "./policy/cedar-policy-set.js";
export { runStoreConformance, storeConformanceCases } from "./stores/conformance/index.js";
export { memoryStore } from "./stores/memory/memory-store.js";
export { type PostgresConnection, type PostgresStoreOptions } from "./stores/postgres/postgres-options.js";
export { type PgDriver, type PgPool } from "./stores/postgres/postgres-driver.js";
export { postgresStore, type PostgresStore } from "./stores/postgres/postgres-store.js";
export { type SqliteStoreOptions } from "./stores/sqlite/sqlite-options.js";
export { type SqliteDriver, type SqliteDriverDatabase, type SqliteDriverStatement } from "./stores/sqlite/sqlite-driver.js";
export { sqliteStore, type SqliteStore } from "./stores/sqlite/sqlite-store.js";

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
  const ports = defaultPorts(options);
  const boundary = createBoundaryCore({ ...options, ...ports });
  // Nothing polls a bare boundary's sequencer: real time (whatever clock the boundary runs on)
  // times the store's commit-hint delay, so that on PostgreSQL one seal chains the commits of a few
  // milliseconds instead of following nearly each one (docs/journal.md). After the options passed
  // their checks: a missing store gets the boundary's own error.
  sequencerHintClock(options.store, systemClock);
  return boundary;
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
    decisionId: input.decisionId ?? timeOrderedId("dec_", clock.now(), random.bytes(ID_RANDOM_BYTES)),
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
 * With `archive`, the scope's archived segments and the database are verified as one chain
 * (docs/archives.md).
 */
export async function verifyJournalIn(store: Store, keyring: Keyring, scope: Scope, ports: { crypto?: CryptoPort; clock?: Clock; sealWithinMs?: number; archive?: ArchiveTarget } = {}): Promise<JournalVerification> {
  const { crypto, clock } = defaultPorts(ports);
  const sealWithinMs = checkSealWithinMs("verifyJournalIn", ports.sealWithinMs);
  return verifyStoredJournal(store, crypto, keyring, scope, { now: clock.now(), sealWithinMs }, 1000, ports.archive);
}
