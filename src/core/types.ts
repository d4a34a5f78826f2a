/** Core data types (docs/concepts.md). Every stored record carries its scope. */
import type { OutcomeCode, RefusalCode } from "./errors.js";

/** Codes stored on attempts the boundary or the host settles without a connector's answer. */
export const SETTLEMENT_CODES = [
  /** An interrupted attempt closed when its execution was taken over (UNKNOWN). */
  "ATTEMPT_SUPERSEDED",
  /**
   * A bare execution that stayed in progress longer than the boundary's `inProgressTimeoutMs`
   * (its process died mid-call): closed UNKNOWN, its key awaiting an operator (docs/boundary.md).
   */
  "EXECUTION_INTERRUPTED",
  /** A handed-off step's completion reported a failure. */
  "COMPLETION_FAILURE",
  /** The attempt stopped before a step because that step's circuit breaker is open (FAILED; docs/host.md). */
  "CIRCUIT_OPEN",
] as const;
export type SettlementCode = (typeof SETTLEMENT_CODES)[number];

/** Why an invocation was sent to reconciliation, besides an attempt's own code (docs/host.md). */
export const RECONCILIATION_CODES = [
  "RECOVERY_EXHAUSTED",
  /** The invocation's action version is no longer registered on the host that claimed it. */
  "ACTION_VERSION_UNAVAILABLE",
  "DENIED_AFTER_PARTIAL",
  "COMPLETION_CONTRADICTED",
  "COMPLETION_OVERDUE",
  "COMPENSATION_NOT_ALLOWED",
  "COMPENSATION_FAILED",
  /** A refused attempt that carried no code of its own (the boundary always gives one). */
  "REFUSED",
] as const;
export type ReconciliationCode = (typeof RECONCILIATION_CODES)[number];

/** Every reason code stored on an attempt, a step checkpoint or a reconciliation. */
export type ReasonCode = RefusalCode | OutcomeCode | SettlementCode | ReconciliationCode;

export interface Scope {
  tenantId: string;
  spaceId: string;
}

export const ACTOR_TYPES = ["agent", "user", "service"] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

export interface Actor {
  type: ActorType;
  id: string;
}

/**
 * Who submitted a request, as authenticated: the principal of the API key (or the operator of a
 * local command) and the key's id. Not part of the request digest; recorded beside it.
 */
export interface Submitter {
  principal: Actor;
  /** The API key that submitted, when one did. */
  keyId?: string;
}

/** JSON data as stored and hashed. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** A request to run one action (docs/concepts.md). Its digest binds a decision to it. */
export interface ActionRequest {
  tenantId: string;
  spaceId: string;
  action: string;
  actionVersion: string;
  actor: Actor;
  authorityRef: string;
  params: { [k: string]: Json };
  idempotencyKey: string;
}

export const DECISION_RESULTS = ["ALLOW", "DENY", "REQUIRE_APPROVAL"] as const;
export type DecisionResult = (typeof DECISION_RESULTS)[number];

/** The signed payload of a decision token. */
export interface DecisionPayload {
  v: 1;
  decisionId: string;
  result: DecisionResult;
  requestDigest: string;
  tenantId: string;
  spaceId: string;
  authorityRef: string;
  policyRef: string;
  approvalRef?: string;
  /** Epoch milliseconds. */
  issuedAt: number;
  reasons: string[];
}

export const AUTHORITY_STATUSES = ["active", "suspended", "revoked"] as const;
export type AuthorityStatus = (typeof AUTHORITY_STATUSES)[number];

/** A standing grant under which an actor acts. */
export interface Authority {
  tenantId: string;
  spaceId: string;
  authorityRef: string;
  principal: Actor;
  grantor: Actor;
  /** Glob patterns over action ids, e.g. `payments.*`. */
  actions: string[];
  constraints: { [k: string]: Json };
  status: AuthorityStatus;
  /** Epoch ms; absent = never expires. */
  expiresAt?: number;
  createdAt: number;
  updatedAt: number;
}

/**
 * `closed`: the approval's invocation ended without it (an operator cancelled the invocation while it
 * awaited approval); no vote is taken on it any more (docs/approvals.md, Closed approvals).
 */
export const APPROVAL_STATUSES = ["pending", "approved", "denied", "expired", "revoked", "closed"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

export interface ApprovalVote {
  approver: Actor;
  /** The API key the vote was cast with, when one was. */
  keyId?: string;
  verdict: "approve" | "deny";
  at: number;
  note?: string;
}

/** A human grant for one request digest. */
export interface Approval {
  tenantId: string;
  spaceId: string;
  approvalId: string;
  requestDigest: string;
  invocationId?: string;
  requestedBy: Actor;
  /** Who submitted the request (principal and key id); never approves or denies it (four eyes). */
  submittedBy?: Submitter;
  /** Roles or ids allowed to approve; checked by the approvals workflow. */
  approverRoles: string[];
  quorum: number;
  votes: ApprovalVote[];
  status: ApprovalStatus;
  /** Set with status `closed`: how the invocation ended, who ended it, and when. */
  closed?: ApprovalClosure;
  expiresAt: number;
  createdAt: number;
  updatedAt: number;
  /**
   * The row revision, owned by the store: set on insert, moved on by every write; an update is
   * applied only while the stored row still has the rev the writer read (docs/stores.md).
   */
  rev?: number;
}

/** Why an approval was closed without a verdict: its invocation ended otherwise. */
export interface ApprovalClosure {
  /** The status the invocation ended in (today always `cancelled`). */
  invocationStatus: InvocationStatus;
  /** Who ended the invocation, when known. */
  by?: Actor;
  at: number;
}

/** States of a boundary attempt (docs/boundary.md). `EXECUTING` is the in-flight state before settlement. */
export const ATTEMPT_STATES = ["REFUSED", "DUPLICATE", "EXECUTING", "SUCCEEDED", "FAILED", "TIMED_OUT", "UNKNOWN", "HANDED_OFF"] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

/** One pass through the execution boundary under one decision. */
export interface AttemptRecord {
  tenantId: string;
  spaceId: string;
  attemptId: string;
  /** Position in the scope's attempt order; assigned by the store on insert (0 before). */
  seq: number;
  state: AttemptState;
  /** Refusal or outcome reason code. */
  reasonCode?: ReasonCode;
  /** Human-readable reason (redacted). */
  reason?: string;
  decisionId?: string;
  requestDigest?: string;
  action?: string;
  idempotencyKey?: string;
  invocationId?: string;
  /** Step index that ended the attempt. */
  stepIndex?: number;
  externalRef?: string;
  /** Redacted outputs of the steps that ran, by step name. */
  output?: Json;
  /** For DUPLICATE: the attempt whose result is returned. */
  originalAttemptId?: string;
  startedAt: number;
  endedAt?: number;
}

export const IDEMPOTENCY_STATES = ["in_progress", "succeeded", "failed", "unknown", "handed_off"] as const;
export type IdempotencyState = (typeof IDEMPOTENCY_STATES)[number];

/** Keyed by (scope, action, idempotencyKey). */
export interface IdempotencyRecord {
  tenantId: string;
  spaceId: string;
  action: string;
  idempotencyKey: string;
  requestDigest: string;
  state: IdempotencyState;
  invocationId: string;
  /** Attempt currently or last holding the key. */
  attemptId: string;
  /** For `succeeded`: the attempt whose result duplicates return. */
  resultAttemptId?: string;
  updatedAt: number;
}

export interface ConsumedDecision {
  tenantId: string;
  spaceId: string;
  decisionId: string;
  attemptId: string;
  requestDigest: string;
  consumedAt: number;
}

export const STEP_STATUSES = ["started", "succeeded", "failed", "unknown", "handed_off"] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

/** One row per action step per invocation. Status never goes back to `started` once settled. */
export interface StepCheckpoint {
  tenantId: string;
  spaceId: string;
  invocationId: string;
  stepIndex: number;
  stepName: string;
  status: StepStatus;
  /** Stable across retries and recovery: the connector's dedupe key. */
  stepKey: string;
  attemptId: string;
  externalRef?: string;
  output?: Json;
  reasonCode?: ReasonCode;
  reason?: string;
  /** For handed-off steps: epoch ms after which the sweep flags the invocation. */
  deadlineAt?: number;
  /** The connector the step called (completions are matched by connector and externalRef). */
  connector?: string;
  startedAt: number;
  endedAt?: number;
}

export const INVOCATION_STATUSES = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "denied",
  "cancelled",
  "awaiting_approval",
  "parked",
  "reconciliation_required",
] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];

export const TERMINAL_INVOCATION_STATUSES: readonly InvocationStatus[] = ["succeeded", "failed", "denied", "cancelled"];

/** The durable unit of work for one request (docs/host.md). */
export interface Invocation {
  tenantId: string;
  spaceId: string;
  invocationId: string;
  action: string;
  actionVersion: string;
  idempotencyKey: string;
  requestDigest: string;
  /** The original request (digest is computed over it); API answers redact it. */
  request: ActionRequest;
  /** Who submitted it, as authenticated (principal and API key id), when known. */
  submittedBy?: Submitter;
  status: InvocationStatus;
  /** Earliest time a worker may claim it (backoff, breaker cooldown). */
  runAt: number;
  leaseOwner?: string;
  leaseToken?: string;
  leaseExpiresAt?: number;
  /**
   * Worker claims over the invocation's whole life, the first run included; never reset by a
   * re-queue. A circuit-open re-queue hands its claim back (docs/host.md, "What counts as an attempt").
   */
  attemptCount: number;
  /** `attemptCount` when an operator's resolution last re-queued it: the recovery budget counts claims after it. */
  recoveryBase?: number;
  /** Transient-failure retries so far. */
  retryCount: number;
  /** Step to resume at. */
  nextStep: number;
  approvalId?: string;
  reasons?: string[];
  lastError?: string;
  result?: Json;
  overdueAt?: number;
  /** While parked: the handed-off step's completion deadline (epoch ms), if the action declares one. */
  deadlineAt?: number;
  /** Set while compensation steps run after a permanent failure. */
  compensating?: boolean;
  /** Incremented on every write by the host; names transitions in the journal. */
  version?: number;
  /**
   * The row revision, owned by the store: set on insert, moved on by every write; an update is
   * applied only while the stored row still has the rev the writer read (docs/stores.md).
   */
  rev?: number;
  createdAt: number;
  updatedAt: number;
}

/** The lease a worker holds; every write it makes is conditional on it. */
export interface Fence {
  invocationId: string;
  owner: string;
  token: string;
}

export const RECONCILIATION_STATUSES = ["open", "resolved"] as const;
export type ReconciliationStatus = (typeof RECONCILIATION_STATUSES)[number];

/** An outcome Writ cannot know, waiting for a human. */
export interface ReconciliationRecord {
  tenantId: string;
  spaceId: string;
  reconciliationId: string;
  invocationId: string;
  stepIndex: number;
  reason: string;
  reasonCode: ReasonCode;
  externalRef?: string;
  status: ReconciliationStatus;
  resolution?: { outcome: "succeeded" | "failed"; externalRef?: string; note: string; by: Actor; at: number };
  createdAt: number;
  updatedAt: number;
  /**
   * The row revision, owned by the store: set on insert, moved on by every write; an update is
   * applied only while the stored row still has the rev the writer read (docs/stores.md).
   */
  rev?: number;
}

/** One hash-chained journal entry (docs/journal.md). */
export interface JournalEntry {
  tenantId: string;
  spaceId: string;
  seq: number;
  /** Deterministic id: writing the same entry twice is a no-op. */
  id: string;
  at: number;
  type: string;
  refs: { [k: string]: string };
  data: Json;
  prevHash: string | null;
  hash: string;
}

/**
 * A journal entry written by a transition and not yet chained: durable from its transaction's
 * commit, without `seq`, `prevHash` or `hash` until the sequencer seals it (docs/journal.md).
 */
export type UnsealedEntry = Omit<JournalEntry, "seq" | "prevHash" | "hash">;

/** A signed statement of (scope, seq, head hash); lets an auditor detect truncation. */
export interface JournalCheckpoint {
  tenantId: string;
  spaceId: string;
  seq: number;
  headHash: string;
  at: number;
  /** JWS compact (EdDSA) over the canonical checkpoint statement. */
  signature: string;
}

export const POLICY_VERSION_STATUSES = ["active", "grace", "retired"] as const;
export type PolicyVersionStatus = (typeof POLICY_VERSION_STATUSES)[number];

/** One version of a scope's policy set (docs/approvals.md, Versions per scope). Exactly one is active; `grace` ones stay accepted until `graceUntil`. */
export interface PolicyVersion {
  tenantId: string;
  spaceId: string;
  /** 1, 2, 3, ... per scope. */
  version: number;
  policyRef: string;
  /** Policy source (Cedar text). */
  policies: string;
  /** Cedar schema (JSON text), if any. */
  schema?: string;
  status: PolicyVersionStatus;
  /** For `grace`: epoch ms until which decisions under this version are still accepted. */
  graceUntil?: number;
  activatedAt: number;
  createdAt: number;
}

export const COMPLETION_OUTCOMES = ["success", "failure"] as const;
export type CompletionOutcome = (typeof COMPLETION_OUTCOMES)[number];
/**
 * `evidence`: received for an invocation that had already ended, recorded without changing it;
 * `expired`: an early completion whose reference never matched within the retention period.
 */
export const COMPLETION_DISPOSITIONS = ["applied", "early", "duplicate", "contradictory", "late", "evidence", "expired"] as const;
export type CompletionDisposition = (typeof COMPLETION_DISPOSITIONS)[number];

/** A completion of a long-running outside operation (docs/completions.md), as received. */
export interface CompletionRecord {
  tenantId: string;
  spaceId: string;
  /** The delivery's id (`webhook-id`) or a generated one; unique per (scope, connector). */
  completionId: string;
  connector: string;
  externalRef: string;
  outcome: CompletionOutcome;
  result?: Json;
  error?: string;
  evidence?: Json;
  /** Digest of {outcome, result, error, evidence}: equal digests are identical repeats. */
  contentDigest: string;
  disposition: CompletionDisposition;
  invocationId?: string;
  stepIndex?: number;
  receivedAt: number;
  /** For `early` completions: set once applied at parking. */
  appliedAt?: number;
  /** For `expired` completions: when the retention sweep expired it. */
  expiredAt?: number;
  /**
   * The row revision, owned by the store: set on insert, moved on by every write; an update is
   * applied only while the stored row still has the rev the writer read (docs/stores.md).
   */
  rev?: number;
}

export const API_ROLES = ["submit", "approve", "operate", "admin"] as const;
export type ApiRole = (typeof API_ROLES)[number];

export const BREAKER_STATES = ["closed", "open", "half_open"] as const;
export type BreakerState = (typeof BREAKER_STATES)[number];

/**
 * A circuit breaker of one (connector, operation) in one scope (docs/host.md, "Circuit
 * breakers"), held in the store so that every worker and process shares it.
 */
export interface BreakerRecord {
  tenantId: string;
  spaceId: string;
  connector: string;
  operation: string;
  state: BreakerState;
  /** Consecutive transient failures and timeouts recorded since the last success. */
  failures: number;
  /** When the breaker last opened (0 when it never did). */
  openedAt: number;
  /** Open: calls are refused until then. 0 when closed. */
  openUntil: number;
  /** Half-open: who holds the one probe slot (an attempt's holder id) and until when. */
  probeHolder?: string;
  probeUntil?: number;
  updatedAt: number;
  /** The row revision, owned by the store (docs/stores.md, "Conditional writes"). */
  rev?: number;
}

/** An API key of one tenant (docs/http-api.md, Authentication and roles). Only a hash of the secret is stored. */
export interface ApiKeyRecord {
  /** Public id, part of the key text (`writ_<keyId>_<secret>`). */
  keyId: string;
  tenantId: string;
  /** Spaces the key may act in; `["*"]` for all of the tenant's spaces. */
  spaces: string[];
  roles: ApiRole[];
  /**
   * Approver roles the key's holder has beyond `approve` (e.g. `finance` for a policy's
   * `@approvers("finance")`); used only on approval routes, and only with the `approve` role.
   */
  approverRoles?: string[];
  /** `sha256:<base64url>` of the whole key text. */
  hash: string;
  name: string;
  /**
   * The principal the key belongs to: submits act as it, votes are cast as it. Keys created
   * before principals existed have none and act as `user:<name>` (or `user:key:<keyId>`).
   */
  principal?: Actor;
  /** Actors the key may submit for besides its principal (set by an admin, journaled). */
  actsFor?: Actor[];
  createdAt: number;
  revokedAt?: number;
}

/** What a notification subscription may ask for (docs/notifications.md lists what each carries). */
export const NOTIFICATION_EVENTS = [
  "approval.requested",
  "approval.decided",
  "approval.expiring",
  "reconciliation.opened",
  "reconciliation.resolved",
  "invocation.ended",
  "handoff.overdue",
  "journal.verify_failed",
  "breaker.opened",
] as const;
export type NotificationEventType = (typeof NOTIFICATION_EVENTS)[number];

/** `standard`: a Standard Webhooks JSON body; `slack`: a Slack incoming-webhook Block Kit message. */
export const NOTIFICATION_FORMATS = ["standard", "slack"] as const;
export type NotificationFormat = (typeof NOTIFICATION_FORMATS)[number];

/** Narrows which events of the subscribed kinds are delivered (an absent list: all). */
export interface SubscriptionFilter {
  /** Action globs (`payments.*`): events about an invocation of another action are not delivered. */
  actions?: string[];
  /** For `invocation.ended`: only these ending statuses. */
  statuses?: InvocationStatus[];
  /** Only events of these spaces of the tenant. */
  spaces?: string[];
}

/** A tenant's notification subscription (docs/notifications.md). */
export interface Subscription {
  tenantId: string;
  subscriptionId: string;
  url: string;
  events: NotificationEventType[];
  filter?: SubscriptionFilter;
  format: NotificationFormat;
  /**
   * The signing secret as stored: `whsec_…`, or a sealed envelope `{"$writ.sealed":…}` (as JSON
   * text) when the host seals at rest with a data key. Never returned by the API after creation.
   */
  secret: string;
  description?: string;
  enabled: boolean;
  createdAt: number;
  updatedAt: number;
  createdBy?: Actor;
}

export const DELIVERY_STATUSES = ["pending", "delivered", "dead"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One try of a delivery. */
export interface DeliveryAttempt {
  at: number;
  latencyMs: number;
  /** The receiver's HTTP status, when it answered. */
  statusCode?: number;
  /** Why the try failed (network error, timeout, non-2xx), never secrets. */
  error?: string;
  /** The start of the receiver's answer (at most 512 characters). */
  response?: string;
}

/** One event on its way to one subscription: the outbox row. */
export interface Delivery {
  tenantId: string;
  deliveryId: string;
  subscriptionId: string;
  /** Per store, ascending in the order deliveries were written: the subscription's delivery order. */
  seq?: number;
  /** The event's id, the `webhook-id` of every try (receivers dedupe on it). */
  eventId: string;
  eventType: NotificationEventType;
  spaceId?: string;
  /** When the event happened. */
  at: number;
  /** The exact body sent (already masked). */
  body: string;
  status: DeliveryStatus;
  /** Tries since it was written or last redelivered. */
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
  deliveredAt?: number;
  deadReason?: string;
  /** Every try, oldest first (the latest 100 are kept). */
  log: DeliveryAttempt[];
}
