/**
 * Request and response schemas of the HTTP API, written once (zod 4). Request schemas validate
 * input at the edge; every schema here is also registered under a name in {@link schemaRegistry},
 * from which `/openapi.json` takes its `components.schemas`. Response schemas are checked against
 * real answers in the tests (`checkResponses`), so the document cannot drift from the code.
 */
import { z } from "zod";
import { LIMITS } from "../core/validate.js";
import { idTextProblem } from "../core/text.js";
import { API_ERROR_CODES } from "./errors.js";
import {
  ACTOR_TYPES,
  APPROVAL_STATUSES,
  ATTEMPT_STATES,
  COMPLETION_DISPOSITIONS,
  DECISION_RESULTS,
  DELIVERY_STATUSES,
  IDEMPOTENCY_STATES,
  INVOCATION_STATUSES,
  NOTIFICATION_EVENTS,
  NOTIFICATION_FORMATS,
  RECONCILIATION_STATUSES,
  TERMINAL_INVOCATION_STATUSES,
} from "../core/types.js";
import { MAX_DECISION_LENGTH } from "../core/decision.js";
import { untilStatuses } from "../host/wait.js";

/** Names schemas for the OpenAPI document (`#/components/schemas/<id>`). */
export const schemaRegistry = z.registry<{ id: string; description?: string }>();

function named<T extends z.ZodType>(id: string, schema: T, description?: string): T {
  schemaRegistry.add(schema, description === undefined ? { id } : { id, description });
  return schema;
}

// Building blocks -------------------------------------------------------------------------------

/** No control characters: ids travel in paths, logs and journal entries. */
// eslint-disable-next-line no-control-regex -- refusing control characters is the point
const PRINTABLE = /^[^\u0000-\u001f\u007f]+$/;

/** Refuses control, bidi and zero-width characters and lone surrogates (docs/security.md). */
function safeText<T extends z.ZodString>(s: T) {
  return s.superRefine((v, ctx) => {
    const bad = idTextProblem(v, "the value");
    if (bad !== null) ctx.addIssue({ code: "custom", message: bad });
  });
}

/** An identifier: 1-200 printable characters (the core's limit for ids), no bidi or zero-width characters. */
export const Id = safeText(z.string().min(1).max(LIMITS.id).regex(PRINTABLE, "must not contain control characters"));
const Millis = z.number().int().nonnegative().describe("epoch milliseconds");
/** Any JSON value. */
const JsonValue = z.unknown().describe("any JSON value");
const JsonObject = z.record(z.string(), z.unknown()).describe("a JSON object");

/**
 * An integer from `min` to `max` in a query string. The document types it as what it means (an
 * integer with bounds, so a generated client takes a number); the server reads it from the query
 * text, where only plain decimal digits count (no sign, fraction, exponent, hex or blank), and
 * refuses anything else with one message naming the range.
 */
export function queryInt(min: number, max: number) {
  const message = `must be an integer from ${min} to ${max}`;
  return z.preprocess(
    (v, ctx) => {
      if (typeof v === "string" && /^\d{1,16}$/.test(v)) return Number(v);
      ctx.addIssue({ code: "custom", message, input: v });
      return z.NEVER;
    },
    z.number().int().min(min, message).max(max, message),
  );
}

export const Actor = named("Actor", z.strictObject({ type: z.enum(ACTOR_TYPES), id: Id }), "who asks: an agent, a user or a service");

export const Submitter = named(
  "Submitter",
  z.object({ principal: Actor, keyId: z.string().optional() }),
  "who submitted, as authenticated: the API key's principal and the key's id",
);

export const ActionRequest = named(
  "ActionRequest",
  z.strictObject({
    tenantId: Id.optional().describe("defaults to the API key's tenant; if given it must be that tenant"),
    spaceId: Id.optional().describe("defaults to the space in the path; if given it must be that space"),
    action: Id,
    actionVersion: Id,
    actor: Actor.optional().describe("defaults to the API key's principal; if given it must be the principal or on the key's delegation list"),
    authorityRef: Id,
    params: JsonObject,
    idempotencyKey: safeText(z.string().min(1).max(LIMITS.idempotencyKey)),
  }),
  "a request to run one action; its digest is computed over the complete request (tenantId and spaceId filled in)",
);
export type ActionRequestBody = z.infer<typeof ActionRequest>;

// Errors --------------------------------------------------------------------------------------

export const ErrorBody = named(
  "Error",
  z.object({
    error: z.object({
      code: z.enum(API_ERROR_CODES as [string, ...string[]]).describe("stable code; switch on it, never on the message"),
      message: z.string(),
      details: z.unknown().optional(),
    }),
  }),
  "every error answer",
);

// Invocations -----------------------------------------------------------------------------------

const FullRequest = named(
  "StoredRequest",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    action: z.string(),
    actionVersion: z.string(),
    actor: Actor,
    authorityRef: z.string(),
    params: JsonObject,
    idempotencyKey: z.string(),
  }),
  "the request as admitted (sensitive params redacted)",
);

export const Invocation = named(
  "Invocation",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    invocationId: z.string(),
    action: z.string(),
    actionVersion: z.string(),
    idempotencyKey: z.string(),
    requestDigest: z.string(),
    request: FullRequest,
    submittedBy: Submitter.optional(),
    status: z.enum(INVOCATION_STATUSES),
    runAt: Millis,
    leaseOwner: z.string().optional(),
    leaseExpiresAt: Millis.optional(),
    attemptCount: z.number().int(),
    recoveryBase: z.number().int().optional(),
    retryCount: z.number().int(),
    nextStep: z.number().int(),
    approvalId: z.string().optional(),
    reasons: z.array(z.string()).optional(),
    lastError: z.string().optional(),
    result: JsonValue.optional(),
    overdueAt: Millis.optional(),
    deadlineAt: Millis.optional(),
    compensating: z.boolean().optional(),
    version: z.number().int().optional(),
    createdAt: Millis,
    updatedAt: Millis,
    rev: z.number().int().nonnegative().optional().describe("row revision: moves on with every write (docs/stores.md)"),
  }),
  "the durable unit of work for one request (lease tokens are never shown)",
);

export const SubmitAnswer = named("SubmitAnswer", z.object({ invocation: Invocation, replayed: z.boolean().describe("true when the same key and request were admitted before") }));
export const InvocationAnswer = named("InvocationAnswer", z.object({ invocation: Invocation }));
export const InvocationPage = named(
  "InvocationPage",
  z.object({ items: z.array(Invocation), nextCursor: z.string().nullable().describe("pass as `cursor` for the next (older) page; null on the last page") }),
);
export const InvocationListQuery = z.strictObject({
  status: z.enum(INVOCATION_STATUSES).optional(),
  limit: queryInt(1, 500).optional().describe("page size, 1-500 (default 50)"),
  cursor: Id.optional().describe("nextCursor of the previous page"),
});
/** The longest long poll a `GET …/invocations/{id}?wait=` may ask for, in seconds. */
export const MAX_WAIT_SECONDS = 60;
export const InvocationGetQuery = z
  .strictObject({
    wait: queryInt(0, MAX_WAIT_SECONDS)
      .optional()
      .describe(`long poll: answer as soon as the invocation is in a state \`until\` names, or after this many seconds (0-${MAX_WAIT_SECONDS}); without it the answer is immediate`),
    until: z
      .string()
      .max(300)
      .superRefine((v, ctx) => {
        const problem = untilStatuses(v);
        if (typeof problem === "string") ctx.addIssue({ code: "custom", message: problem });
      })
      .optional()
      .describe("with wait: the states that end the wait: `final` (succeeded, failed, denied, cancelled), `settled` (final, or waiting for a person or a callback: awaiting_approval, parked, reconciliation_required; the default), or statuses, comma-separated (`awaiting_approval,final`). A final state always ends the wait."),
  })
  .superRefine((q, ctx) => {
    if (q.until !== undefined && q.wait === undefined) ctx.addIssue({ code: "custom", path: ["until"], message: "needs wait (the long poll's bound in seconds)" });
  });
export const InvocationRead = named(
  "InvocationRead",
  z.object({
    invocation: Invocation,
    reached: z.boolean().optional().describe("with wait: true when the invocation is in a state `until` names; false when the wait ended first (time ran out, or a final state `until` does not name)"),
  }),
);
export const CancelBody = named("Cancel", z.strictObject({}), "no fields: send `{}` or no body at all");

// Actions ---------------------------------------------------------------------------------------

export const GrantedAction = named(
  "GrantedAction",
  z.object({
    action: z.string(),
    version: z.string(),
    title: z.string().describe("a short human title: the action's title, else a readable form of its id"),
    description: z.string().optional(),
    inputSchema: JsonObject.describe("JSON Schema (draft 2020-12) of the action's params"),
    annotations: z.object({
      readOnly: z.boolean().describe("the action changes nothing outside"),
      destructive: z.boolean().describe("the action may destroy or irreversibly change something"),
      idempotent: z.boolean().describe("running it twice has the effect of once"),
      openWorld: z.boolean().describe("the action reaches systems outside the operator's own"),
    }),
    authorityRef: z.string().describe("the authority of the key's principal that covers it: submit with it"),
  }),
  "an action the API key's principal may ask for, with the authority it acts under",
);
export const ActionList = named("ActionList", z.object({ items: z.array(GrantedAction) }));

// Approvals -------------------------------------------------------------------------------------

export const Approval = named(
  "Approval",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    approvalId: z.string(),
    requestDigest: z.string(),
    invocationId: z.string().optional(),
    requestedBy: Actor,
    submittedBy: Submitter.optional(),
    approverRoles: z.array(z.string()),
    quorum: z.number().int(),
    votes: z.array(z.object({ approver: Actor, keyId: z.string().optional(), verdict: z.enum(["approve", "deny"]), at: Millis, note: z.string().optional() })),
    status: z.enum(APPROVAL_STATUSES),
    closed: z
      .object({ invocationStatus: z.enum(INVOCATION_STATUSES), by: Actor.optional(), at: Millis })
      .optional()
      .describe("with status closed: the invocation ended without the approval (cancelled), by whom and when"),
    expiresAt: Millis,
    createdAt: Millis,
    updatedAt: Millis,
    rev: z.number().int().nonnegative().optional().describe("row revision: moves on with every write (docs/stores.md)"),
  }),
  "a human grant for one request digest",
);
export const ApprovalAnswer = named("ApprovalAnswer", z.object({ approval: Approval }));
export const ApprovalList = named("ApprovalList", z.object({ items: z.array(Approval) }));
export const ApprovalListQuery = z.strictObject({ status: z.enum(APPROVAL_STATUSES).optional(), limit: queryInt(1, 500).optional() });
export const ApprovalVoteBody = named("ApprovalVote", z.strictObject({ note: z.string().max(2000).optional() }), "an optional note journaled with the vote");

// Reconciliations -------------------------------------------------------------------------------

export const Reconciliation = named(
  "Reconciliation",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    reconciliationId: z.string(),
    invocationId: z.string(),
    stepIndex: z.number().int(),
    reason: z.string(),
    reasonCode: z.string(),
    externalRef: z.string().optional(),
    status: z.enum(RECONCILIATION_STATUSES),
    resolution: z.object({ outcome: z.enum(["succeeded", "failed"]), externalRef: z.string().optional(), note: z.string(), by: Actor, at: Millis }).optional(),
    createdAt: Millis,
    updatedAt: Millis,
    rev: z.number().int().nonnegative().optional().describe("row revision: moves on with every write (docs/stores.md)"),
  }),
  "an outcome Writ cannot know, waiting for an operator",
);
export const BreakerList = named(
  "BreakerList",
  z.object({
    items: z.array(
      z.object({
        connector: z.string(),
        operation: z.string(),
        state: z.enum(["closed", "open", "half_open"]),
        failures: z.number().int().describe("consecutive transient failures and timeouts since the last success"),
        openUntil: z.number().int().describe("open: calls are refused until then (epoch ms); 0 when closed"),
        probeUntil: z.number().int().optional().describe("half-open with a probe in flight: when its slot expires (epoch ms)"),
        updatedAt: z.number().int(),
      }),
    ),
  }),
);
export const UnknownKey = named(
  "UnknownKey",
  z.object({
    action: z.string(),
    idempotencyKey: z.string(),
    attemptId: z.string().describe("the attempt whose outcome is unknown"),
    requestDigest: z.string(),
    updatedAt: Millis,
  }),
  "a key a bare boundary execution left with an unknown outcome: settle it with POST …/boundary/keys/resolve",
);
export const ReconciliationList = named(
  "ReconciliationList",
  z.object({
    items: z.array(Reconciliation),
    unknownKeys: z.array(UnknownKey).describe("keys bare boundary executions left unknown, oldest first (none when status=resolved)"),
  }),
);
export const ReconciliationListQuery = z.strictObject({ status: z.enum(RECONCILIATION_STATUSES).optional(), limit: queryInt(1, 500).optional() });
export const ResolveBody = named(
  "Resolve",
  z.strictObject({
    outcome: z.enum(["succeeded", "failed"]),
    note: z.string().min(1).max(2000).regex(/\S/, "must not be blank"),
    externalRef: z.string().min(1).max(512).optional(),
  }),
  "the operator's verdict; the operator is the API key",
);

// Journal ---------------------------------------------------------------------------------------

export const JournalEntry = named(
  "JournalEntry",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    seq: z.number().int(),
    id: z.string(),
    at: Millis,
    type: z.string(),
    refs: z.record(z.string(), z.string()),
    data: JsonValue,
    prevHash: z.string().nullable(),
    hash: z.string(),
  }),
  "one hash-chained journal entry",
);
export const UnsealedEntry = named(
  "UnsealedEntry",
  z.object({ tenantId: z.string(), spaceId: z.string(), id: z.string(), at: Millis, type: z.string(), refs: z.record(z.string(), z.string()), data: JsonValue }),
  "a journal entry committed by its transition and not sealed into the chain yet (no seq or hash)",
);
export const JournalPage = named(
  "JournalPage",
  z.object({
    entries: z.array(JournalEntry),
    nextFromSeq: z.number().int().nullable().describe("fromSeq of the next page; null at the sealed head"),
    unsealed: z.array(UnsealedEntry).describe("entries committed and awaiting the sequencer, oldest first (at most 100); they appear in `entries` once sealed"),
  }),
);
export const JournalCheckpoint = named(
  "JournalCheckpoint",
  z.object({ tenantId: z.string(), spaceId: z.string(), seq: z.number().int(), headHash: z.string(), at: Millis, signature: z.string().describe("JWS compact (EdDSA) over the checkpoint") }),
  "a signed checkpoint of a scope's journal head",
);
export const JournalExportHeader = named(
  "JournalExportHeader",
  z.object({
    format: z.literal("writ-journal/1"),
    kind: z.literal("export"),
    tenantId: z.string(),
    spaceId: z.string(),
    fromSeq: z.number().int().describe("the first entry's seq"),
    throughSeq: z.number().int().describe("the last entry's seq (fromSeq - 1 when none)"),
    prevHash: z.string().nullable().describe("the hash of the entry before fromSeq; null at seq 1"),
    headHash: z.string().nullable().describe("the last entry's hash (prevHash when none)"),
    entries: z.number().int().describe("how many entry lines follow"),
    checkpoints: z.array(JournalCheckpoint).describe("the signed checkpoints within [fromSeq - 1, throughSeq]"),
    keys: z.array(z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: z.string(), kid: z.string() })).describe("the public keys (JWK) that signed the checkpoints"),
  }),
  "the first line of a journal export (docs/archives.md, Offline verification)",
);
export const JournalReadQuery = z.strictObject({ fromSeq: queryInt(1, Number.MAX_SAFE_INTEGER).optional(), limit: queryInt(1, 1000).optional() });
export const JournalExportQuery = z.strictObject({ fromSeq: queryInt(1, Number.MAX_SAFE_INTEGER).optional() });
export const JournalVerification = named(
  "JournalVerification",
  z.object({
    ok: z.boolean(),
    entries: z.number().int(),
    checkpoints: z.number().int(),
    headSeq: z.number().int(),
    headHash: z.string().nullable(),
    unsealed: z.number().int().optional().describe("entries committed and not sealed yet (a problem only once older than the sealing bound)"),
    archive: z
      .object({ segments: z.number().int(), archivedThrough: z.number().int(), bytes: z.number().int(), firstLiveSeq: z.number().int().nullable() })
      .optional()
      .describe("what of the chain came from archive segments, when the archives were verified with the database (docs/archives.md)"),
    problems: z.array(z.object({ seq: z.number().int().optional(), id: z.string().optional(), kind: z.string(), segment: z.string().optional().describe("the archive segment the finding is in"), message: z.string() })),
  }),
);

// Decisions and the boundary --------------------------------------------------------------------

export const Preview = named(
  "Preview",
  z.object({
    result: z.enum(DECISION_RESULTS),
    reasons: z.array(z.string()),
    policyRef: z.string(),
    requestDigest: z.string(),
    authority: z.object({ authorityRef: z.string(), status: z.enum(["active", "suspended", "revoked", "unknown", "expired"]), coversAction: z.boolean() }),
    approval: z.object({ approverRoles: z.array(z.string()).optional(), quorum: z.number().int().optional(), ttlMs: z.number().optional() }).optional(),
  }),
  "a dry run: what the policy would answer; nothing signed, consumed or executed",
);

export const EvaluateBody = named(
  "EvaluateAndSign",
  z.strictObject({ request: ActionRequest, approvalId: Id.optional().describe("an approval to evaluate with (its status and digest are the policy's input)") }),
);
export const SignedDecision = named(
  "SignedDecision",
  z.object({
    decision: z.string().describe("JWS compact, EdDSA; verify with /.well-known/jwks.json"),
    decisionId: z.string(),
    kid: z.string(),
    result: z.enum(DECISION_RESULTS),
    reasons: z.array(z.string()),
    policyRef: z.string(),
    requestDigest: z.string(),
    issuedAt: Millis,
    approvalRef: z.string().optional(),
  }),
);

export const ExecuteBody = named(
  "BoundaryExecute",
  z.strictObject({ request: ActionRequest, decision: z.string().min(1).max(MAX_DECISION_LENGTH).describe("a decision token (JWS compact) minted for this request") }),
);
export const Attempt = named(
  "Attempt",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    attemptId: z.string(),
    seq: z.number().int(),
    state: z.enum(ATTEMPT_STATES),
    reasonCode: z.string().optional(),
    reason: z.string().optional(),
    decisionId: z.string().optional(),
    requestDigest: z.string().optional(),
    action: z.string().optional(),
    idempotencyKey: z.string().optional(),
    invocationId: z.string().optional(),
    stepIndex: z.number().int().optional(),
    externalRef: z.string().optional(),
    output: JsonValue.optional(),
    originalAttemptId: z.string().optional(),
    startedAt: Millis,
    endedAt: Millis.optional(),
    transient: z.boolean().optional(),
  }),
  "one recorded pass through the execution boundary; a refusal is an attempt in state REFUSED",
);
export const AttemptAnswer = named("AttemptAnswer", z.object({ attempt: Attempt }));

export const ResolveKeyBody = named(
  "ResolveKey",
  z.strictObject({
    action: Id,
    idempotencyKey: safeText(z.string().min(1).max(LIMITS.idempotencyKey)),
    outcome: z.enum(["succeeded", "failed"]),
    note: z.string().min(1).max(2000).regex(/\S/, "must not be blank"),
    externalRef: z.string().min(1).max(512).optional().describe("required with succeeded: what a replay of the key returns"),
  }),
  "the operator's verdict on a key a bare execution left unknown; the operator is the API key",
);
export const IdempotencyKeyRecord = named(
  "IdempotencyKey",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    action: z.string(),
    idempotencyKey: z.string(),
    requestDigest: z.string(),
    state: z.enum(IDEMPOTENCY_STATES),
    invocationId: z.string(),
    attemptId: z.string(),
    resultAttemptId: z.string().optional(),
    updatedAt: Millis,
  }),
  "the idempotency record of (scope, action, idempotencyKey)",
);
export const KeyResolutionAnswer = named("KeyResolution", z.object({ idempotency: IdempotencyKeyRecord, attempt: Attempt.nullable().describe("the attempt whose outcome was unknown") }));

// Completions -----------------------------------------------------------------------------------

export const CompletionBody = named(
  "Completion",
  z.strictObject({
    externalRef: z.string().min(1).max(512),
    outcome: z.enum(["success", "failure"]),
    result: JsonValue.optional(),
    error: z.string().max(4000).optional(),
    evidence: JsonValue.optional(),
  }),
  "the signed body of a completion delivery (Standard Webhooks); the server verifies the signature over the raw bytes",
);
export const CompletionAnswer = named(
  "CompletionAnswer",
  z.object({
    disposition: z.enum(COMPLETION_DISPOSITIONS),
    invocationId: z.string().optional(),
    status: z.enum(INVOCATION_STATUSES).optional(),
    deliveryReplayed: z.boolean().optional().describe("true when this webhook-id was received before (nothing changed)"),
  }),
);

export const EarlyCompletion = named(
  "EarlyCompletion",
  z.object({
    tenantId: z.string(),
    spaceId: z.string(),
    completionId: z.string(),
    connector: z.string(),
    externalRef: z.string(),
    outcome: z.enum(["success", "failure"]),
    error: z.string().optional(),
    evidence: JsonValue.optional(),
    contentDigest: z.string(),
    disposition: z.enum(COMPLETION_DISPOSITIONS),
    receivedAt: Millis,
    rev: z.number().int().nonnegative().optional(),
  }),
  "a completion kept as early: its reference has not matched a parked step (yet); its result is withheld (its sensitivity is unknown)",
);
export const EarlyCompletionList = named("EarlyCompletionList", z.object({ items: z.array(EarlyCompletion), retentionMs: z.number().int().describe("how long an early completion is kept before the sweep expires it") }));
export const EarlyCompletionListQuery = z.strictObject({ limit: queryInt(1, 1000).optional().describe("page size, 1-1000 (default 100)") });

// System ----------------------------------------------------------------------------------------

export const Jwks = named(
  "Jwks",
  z.object({ keys: z.array(z.object({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: z.string(), kid: z.string(), alg: z.string().optional(), use: z.string().optional() })) }),
  "keys that verify decisions (active and retired; revoked keys are left out)",
);
export const Health = named("Health", z.object({ status: z.literal("ok"), store: z.string() }));

// Path parameters -------------------------------------------------------------------------------

export const SpacePath = z.strictObject({ spaceId: Id });
export const InvocationPath = z.strictObject({ spaceId: Id, invocationId: Id });
export const ApprovalPath = z.strictObject({ spaceId: Id, approvalId: Id });
export const ReconciliationPath = z.strictObject({ spaceId: Id, reconciliationId: Id });
export const ConnectorPath = z.strictObject({ connector: z.string().min(1).max(128).regex(/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/, "must be a connector id") });

// Notifications (docs/notifications.md) ---------------------------------------------------------

const NotificationEvent = z.enum(NOTIFICATION_EVENTS);
const SubscriptionFilter = named(
  "SubscriptionFilter",
  z.strictObject({
    actions: z.array(z.string().min(1).max(512)).min(1).max(100).optional().describe("action globs (`payments.*`): events about other actions are not sent"),
    statuses: z.array(z.enum(TERMINAL_INVOCATION_STATUSES as [string, ...string[]])).min(1).max(10).optional().describe("for invocation.ended: only these ending statuses"),
    spaces: z.array(Id).min(1).max(100).optional().describe("only events of these spaces"),
  }),
  "narrows which events of the subscribed kinds are sent",
);
const SubscriptionFields = {
  url: z.string().min(1).max(2048).describe("http(s), without credentials; every delivery is signed with the subscription's secret"),
  events: z.array(NotificationEvent).min(1).max(NOTIFICATION_EVENTS.length * 2),
  format: z.enum(NOTIFICATION_FORMATS).optional().describe("`standard` (Standard Webhooks JSON, the default) or `slack` (an incoming-webhook Block Kit message)"),
  filter: SubscriptionFilter.optional(),
  description: z.string().max(200).optional(),
  enabled: z.boolean().optional(),
};
export const SubscriptionBody = named("SubscriptionCreate", z.strictObject(SubscriptionFields), "a new subscription");
export const SubscriptionPatch = named(
  "SubscriptionUpdate",
  z.strictObject({ ...SubscriptionFields, url: SubscriptionFields.url.optional(), events: SubscriptionFields.events.optional() }),
  "the fields to change (`enabled: false` pauses deliveries; they wait)",
);
export const Subscription = named(
  "Subscription",
  z.object({
    tenantId: Id,
    subscriptionId: Id,
    url: z.string(),
    events: z.array(NotificationEvent),
    filter: SubscriptionFilter.optional(),
    format: z.enum(NOTIFICATION_FORMATS),
    description: z.string().optional(),
    enabled: z.boolean(),
    createdAt: Millis,
    updatedAt: Millis,
    createdBy: Actor.optional(),
  }),
  "a tenant's notification subscription (its secret is shown only when it is created)",
);
export const SubscriptionCreated = named(
  "SubscriptionCreated",
  z.object({ subscription: Subscription, secret: z.string().describe("the `whsec_` signing secret, shown this once: verify deliveries with it") }),
);
export const SubscriptionAnswer = named("SubscriptionAnswer", z.object({ subscription: Subscription }));
export const SubscriptionList = named("SubscriptionList", z.object({ items: z.array(Subscription) }));
export const DeliveryAttempt = named(
  "DeliveryAttempt",
  z.object({ at: Millis, latencyMs: z.number().int().nonnegative(), statusCode: z.number().int().optional(), error: z.string().optional(), response: z.string().optional() }),
  "one try: the receiver's status, how long it took, why it failed, the start of its answer",
);
export const Delivery = named(
  "Delivery",
  z.object({
    tenantId: Id,
    deliveryId: Id,
    subscriptionId: Id,
    seq: z.number().int().positive().optional(),
    eventId: z.string().describe("the webhook-id of every try: receivers dedupe on it"),
    eventType: NotificationEvent,
    spaceId: z.string().optional(),
    at: Millis,
    body: z.string().describe("the exact body sent (sensitive params masked)"),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int().nonnegative(),
    nextAttemptAt: Millis,
    createdAt: Millis,
    updatedAt: Millis,
    deliveredAt: Millis.optional(),
    deadReason: z.string().optional(),
    log: z.array(DeliveryAttempt),
  }),
  "one event on its way to one subscription",
);
export const DeliveryAnswer = named("DeliveryAnswer", z.object({ delivery: Delivery }));
export const DeliveryList = named(
  "DeliveryList",
  z.object({ items: z.array(Delivery), nextBeforeSeq: z.number().int().positive().nullable().describe("pass as beforeSeq for the next (older) page; null on the last") }),
);
export const DeliveryListQuery = z.strictObject({
  subscriptionId: Id.optional(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  limit: queryInt(1, 200).optional(),
  beforeSeq: queryInt(1, Number.MAX_SAFE_INTEGER).optional(),
});
export const RedeliverBody = named("Redeliver", z.strictObject({}), "nothing to say: the delivery is sent again as it was (an empty body is read as {})");
export const SubscriptionPath = z.strictObject({ subscriptionId: Id });
export const DeliveryPath = z.strictObject({ deliveryId: Id });
