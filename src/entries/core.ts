/**
 * `writ/core`: the boundary, decisions, the journal, ports, errors, types and the memory store,
 * with no Node built-in and no native module anywhere in its import graph (tests/package/
 * entries.test.ts reads the compiled graph), so it runs wherever the platform offers the ports
 * (docs/architecture.md, Entries). Ports: a Clock, a CryptoPort and a Random you pass in.
 */
export {
  type ActionDefinition, type Connector, type ConnectorContext, type ConnectorOperation, type ConnectorReply, defineAction, defineConnector, type RetryPolicy, type StepDefinition, type StepInputContext,
  type Attempt, type Boundary, type BoundaryEvent, type BoundaryOptions, createBoundaryCore, type ExecuteOptions,
  canonicalize, parseJsonStrict,
  BOUNDARY_CHECKS,
  DECISION_TYP, MAX_DECISION_LENGTH, type ParsedDecision, parseDecision, signDecisionWith, type VerifyCode, verifyDecisionWith, type VerifyResult,
  computeRequestDigest,
  base64url, fromBase64url, fromUtf8, utf8,
  ERROR_CODES, type ErrorCode, errorMessage, isWritError, LeaseLostError, OUTCOME_CODES, type OutcomeCode, REFUSAL_CODES, type RefusalCode, WritError, type WritErrorOptions,
  appendJournal, entryHash, type JournalDraft, type JournalProblem, type JournalVerification, readWholeJournal, verifyJournal, verifyStoredJournal, writeCheckpoint,
  createKeyring, KEY_STATUSES, type Keyring, type KeyringEntry, type KeyStatus, type SigningKey,
  manualClock, type ManualClock,
  functionPolicy, type PolicyEngine, type PolicyInput, type PolicyResult,
  type Clock, type CryptoPort, type PrivateJwk, type PublicJwk, type Random,
  redact, type RedactContext, REDACTED, type RedactHook,
  type DataKeyPort,
  checkSealWithinMs, DEFAULT_SEAL_WITHIN_MS, MAX_SEAL_WITHIN_MS, type Sequencer, sequencerFor,
  type InferOutput, type StandardSchemaV1,
  type ClaimOptions, type InvocationFilter, type ListOptions, type Store, type StoreTx,
  type ActionRequest, type Actor, ACTOR_TYPES, type ActorType, API_ROLES, type ApiKeyRecord, type ApiRole, type Approval, APPROVAL_STATUSES, type ApprovalStatus, type ApprovalVote, ATTEMPT_STATES, type AttemptRecord, type AttemptState, type Authority, AUTHORITY_STATUSES, type AuthorityStatus, COMPLETION_DISPOSITIONS, COMPLETION_OUTCOMES, type CompletionDisposition, type CompletionOutcome, type CompletionRecord, type ConsumedDecision, DECISION_RESULTS, type DecisionPayload, type DecisionResult, type Fence, IDEMPOTENCY_STATES, type IdempotencyRecord, type IdempotencyState, type Invocation, INVOCATION_STATUSES, type InvocationStatus, type JournalCheckpoint, type JournalEntry, type Json, POLICY_VERSION_STATUSES, type PolicyVersion, type PolicyVersionStatus, type ReasonCode, RECONCILIATION_CODES, RECONCILIATION_STATUSES, type ReconciliationCode, type ReconciliationRecord, type ReconciliationStatus, type Scope, SETTLEMENT_CODES, type SettlementCode, STEP_STATUSES, type StepCheckpoint, type StepStatus, type Submitter, TERMINAL_INVOCATION_STATUSES, type UnsealedEntry,
  signWebhook, verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookHeaders,
} from "../core/index.js";
export { memoryStore, type MemoryFaultPoint, type MemoryStore, type MemoryStoreOptions } from "../stores/memory/index.js";
