/**
 * The pure core's public names, each named (no `export *`): no I/O, no ambient time or entropy, no
 * Node built-in; ports bring them in (docs/architecture.md, The pure core). The `writ/core` entry
 * (src/entries/core.ts) offers these names and the memory store.
 */
export { type ActionDefinition, type Connector, type ConnectorContext, type ConnectorOperation, type ConnectorReply, defineAction, defineConnector, type RetryPolicy, type StepDefinition, type StepInputContext } from "./action.js";
export { type Attempt, type Boundary, type BoundaryEvent, type BoundaryOptions, createBoundaryCore, type ExecuteOptions } from "./boundary.js";
export { canonicalize, parseJsonStrict } from "./canonical.js";
export { BOUNDARY_CHECKS } from "./checks.js";
export { DECISION_TYP, MAX_DECISION_LENGTH, type ParsedDecision, parseDecision, signDecisionWith, type VerifyCode, verifyDecisionWith, type VerifyResult } from "./decision.js";
export { computeRequestDigest } from "./digest.js";
export { base64url, fromBase64url, fromUtf8, utf8 } from "./encoding.js";
export { ERROR_CODES, type ErrorCode, errorMessage, isWritError, LeaseLostError, OUTCOME_CODES, type OutcomeCode, REFUSAL_CODES, type RefusalCode, WritError, type WritErrorOptions } from "./errors.js";
export { appendJournal, entryHash, type JournalDraft, type JournalProblem, type JournalVerification, readWholeJournal, verifyJournal, verifyStoredJournal, writeCheckpoint } from "./journal.js";
export { createKeyring, KEY_STATUSES, type Keyring, type KeyringEntry, type KeyStatus, type SigningKey } from "./keyring.js";
export { manualClock, type ManualClock } from "./manual-clock.js";
export { functionPolicy, type PolicyEngine, type PolicyInput, type PolicyResult } from "./policy.js";
export { type Clock, type CryptoPort, type PrivateJwk, type PublicJwk, type Random } from "./ports.js";
export { redact, type RedactContext, REDACTED, type RedactHook } from "./redact.js";
export { type DataKeyPort } from "./sealing.js";
export { checkSealWithinMs, DEFAULT_SEAL_WITHIN_MS, MAX_SEAL_WITHIN_MS, type Sequencer, sequencerFor } from "./sequencer.js";
export { type InferOutput, type StandardSchemaV1 } from "./standard-schema.js";
export { type ClaimOptions, type InvocationFilter, type ListOptions, type Store, type StoreTx } from "./store.js";
export { type ActionRequest, type Actor, ACTOR_TYPES, type ActorType, API_ROLES, type ApiKeyRecord, type ApiRole, type Approval, APPROVAL_STATUSES, type ApprovalStatus, type ApprovalVote, ATTEMPT_STATES, type AttemptRecord, type AttemptState, type Authority, AUTHORITY_STATUSES, type AuthorityStatus, COMPLETION_DISPOSITIONS, COMPLETION_OUTCOMES, type CompletionDisposition, type CompletionOutcome, type CompletionRecord, type ConsumedDecision, DECISION_RESULTS, type DecisionPayload, type DecisionResult, type Fence, IDEMPOTENCY_STATES, type IdempotencyRecord, type IdempotencyState, type Invocation, INVOCATION_STATUSES, type InvocationStatus, type JournalCheckpoint, type JournalEntry, type Json, POLICY_VERSION_STATUSES, type PolicyVersion, type PolicyVersionStatus, type ReasonCode, RECONCILIATION_CODES, RECONCILIATION_STATUSES, type ReconciliationCode, type ReconciliationRecord, type ReconciliationStatus, type Scope, SETTLEMENT_CODES, type SettlementCode, STEP_STATUSES, type StepCheckpoint, type StepStatus, type Submitter, TERMINAL_INVOCATION_STATUSES, type UnsealedEntry } from "./types.js";
export { signWebhook, verifyWebhook, WEBHOOK_TOLERANCE_SECONDS, type WebhookHeaders } from "./webhook.js";
