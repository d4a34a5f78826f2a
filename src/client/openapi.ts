/**
 * The HTTP API's types, generated from the OpenAPI document the server serves (GET /openapi.json)
 * by openapi-typescript. Do not edit: run `npm run client:types` after changing a route or schema;
 * tests/client/generated.test.ts fails while this file is behind the document.
 */
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Health: the store answers a read */
        get: operations["health"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics (text exposition 0.0.4)
         * @description HTTP requests by route template and status, durations, host events, invocation transitions and circuit breaker state changes. Labels carry no tenant data.
         */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/.well-known/jwks.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Keys that verify decisions (JWKS) */
        get: operations["jwks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document (OpenAPI 3.1) */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/invocations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List invocations, newest first */
        get: operations["listInvocations"];
        put?: never;
        /**
         * Submit a request
         * @description Validates the request against the action's schema and admits it, idempotently by (space, action, idempotencyKey): the same key with the same request answers 200 with `replayed: true` and stores nothing; with another request, 409 IDEMPOTENCY_CONFLICT. The actor defaults to the API key's principal; another actor must be on the key's delegation list (403 FORBIDDEN otherwise). The invocation records the submitting principal and key id (`submittedBy`).
         */
        post: operations["submitInvocation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/invocations/{invocationId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get one invocation, at once or by long poll
         * @description An invocation of another tenant or space is answered 404, like one that does not exist. With `wait` (seconds, at most 60) the answer waits until the invocation is in a state `until` names (default `settled`) or reaches a final state, or the time runs out; `reached` says which. The server answers the moment a worker in its process moves the invocation, and reads again every second for changes other processes make.
         */
        get: operations["getInvocation"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/invocations/{invocationId}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Cancel an invocation no step of which has started
         * @description Queued, awaiting_approval, or running while its worker still prepares it (no step started); a worker preparing it stops before any connector call. 409 STEPS_STARTED once a step started, 409 INVALID_STATE once it ended. Journaled with the API key as the actor.
         */
        post: operations["cancelInvocation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/actions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the actions the API key's principal may ask for
         * @description The actions one of the principal's active authorities covers, each with that authority, its params as JSON Schema and its annotations: what the MCP endpoint offers as tools, for clients that turn them into an agent framework's tools (writ/ai-sdk, writ/openai-agents, writ/langchain).
         */
        get: operations["listActions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/approvals": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List approvals (the approval inbox) */
        get: operations["listApprovals"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/approvals/{approvalId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get one approval */
        get: operations["getApproval"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/approvals/{approvalId}/approve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Vote to approve (the approval is granted once its quorum is reached)
         * @description The approver is the API key's principal, with the key's roles; the approval's approver roles must include one of them (403 FORBIDDEN otherwise). Four eyes: the requesting actor, the principal and the key that submitted, and a key that may act for the requesting actor never approve or deny the request (403 FORBIDDEN).
         */
        post: operations["approveApproval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/approvals/{approvalId}/deny": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Deny: the invocation ends denied
         * @description The approver is the API key's principal, with the key's roles; the approval's approver roles must include one of them (403 FORBIDDEN otherwise). Four eyes: the requesting actor, the principal and the key that submitted, and a key that may act for the requesting actor never approve or deny the request (403 FORBIDDEN).
         */
        post: operations["denyApproval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/approvals/{approvalId}/revoke": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Revoke a pending or granted approval (a granted one is caught again at execution)
         * @description The approver is the API key's principal, with the key's roles; the approval's approver roles must include one of them (403 FORBIDDEN otherwise). Four eyes: the requesting actor, the principal and the key that submitted, and a key that may act for the requesting actor never approve or deny the request (403 FORBIDDEN).
         */
        post: operations["revokeApproval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/reconciliations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List reconciliations (the reconciliation queue)
         * @description The queue of outcomes Writ cannot know: the invocations' reconciliations (`items`) and the keys bare boundary executions left unknown (`unknownKeys`, settled with POST …/boundary/keys/resolve). Both oldest first.
         */
        get: operations["listReconciliations"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/reconciliations/{reconciliationId}/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resolve an unknown outcome as succeeded or failed
         * @description Journaled with the operator's identity (the API key as a `user` actor). Resolving a middle step as succeeded re-queues the remaining steps under a new decision.
         */
        post: operations["resolveReconciliation"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notifications/subscriptions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List the tenant's notification subscriptions */
        get: operations["listSubscriptions"];
        put?: never;
        /**
         * Subscribe a URL to events (its signing secret is in this answer only)
         * @description Events from now on are delivered to `url`, signed the Standard Webhooks way with the `whsec_` secret of this answer (shown once). A bad URL, an unknown event name or a bad filter is 400 naming the problem.
         */
        post: operations["createSubscription"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notifications/subscriptions/{subscriptionId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a subscription */
        get: operations["getSubscription"];
        put?: never;
        post?: never;
        /** Delete a subscription with its deliveries */
        delete: operations["deleteSubscription"];
        options?: never;
        head?: never;
        /** Change a subscription (enabled: false pauses it) */
        patch: operations["updateSubscription"];
        trace?: never;
    };
    "/v1/notifications/deliveries": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List deliveries, newest first, with their tries */
        get: operations["listDeliveries"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notifications/deliveries/{deliveryId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get a delivery and every try */
        get: operations["getDelivery"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/notifications/deliveries/{deliveryId}/redeliver": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Send a delivered or dead delivery again (same event id and body) */
        post: operations["redeliver"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/breakers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the space's circuit breakers
         * @description One per (connector, operation) that has recorded a failure; shared by every worker on the store. A breaker not listed is closed.
         */
        get: operations["listBreakers"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/journal": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Read journal entries from a sequence number */
        get: operations["readJournal"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/journal/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export the journal as JSON Lines: a header line, then one entry per line
         * @description The format `writ journal export` writes (docs/archives.md, Offline verification). The first line is a `JournalExportHeader`: the range exported, the signed checkpoints within it and the public keys that verify them. Then every sealed entry from `fromSeq` (or the first entry still in the database, when older ones were archived) up to the sealed head as it was when the export started, one `JournalEntry` a line (entries still awaiting the sequencer are not exported: they have no seq or hash yet). `writ journal verify --file` checks a saved export offline, a cut tail included (with the keys the header carries, named in its answer as not independently trusted, or with `--keys`: only those). The `x-writ-journal-head` header is the sealed head when the export started.
         */
        get: operations["exportJournal"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/journal/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Recompute the hash chain (the archive segments and the database as one), check the signed checkpoints, and report entries unsealed longer than the bound */
        get: operations["verifyJournal"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/decisions/preview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Dry run: what would the policy answer?
         * @description Validates the request and evaluates it without signing, consuming or executing anything.
         */
        post: operations["previewDecision"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/decisions/evaluate-and-sign": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Evaluate a request and sign the decision (for a separate policy service)
         * @description Evaluates with the server's policy (with the named approval, if any) and signs the result, whatever it is, with the server's signing key. Verify the token with /.well-known/jwks.json. Admin only: a token is a capability.
         */
        post: operations["evaluateAndSign"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/boundary/execute": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Execute a request under a decision minted elsewhere
         * @description Runs the twelve boundary checks, consumes the decision and calls the connectors. The answer is the recorded attempt, whatever its state (SUCCEEDED, FAILED, REFUSED with reasonCode, DUPLICATE, ...). Input that does not parse (request shape, unknown action or version, params the action's schema refuses, a token that is not a decision) is a 400 and records nothing.
         */
        post: operations["boundaryExecute"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/boundary/keys/resolve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Resolve a key a bare execution left with an unknown outcome
         * @description For a key whose execution was interrupted (refused RECONCILIATION_PENDING once inProgressTimeoutMs passed) or timed out or answered ambiguously: `succeeded` (with the externalRef replays return) settles the key, `failed` lets a new decision retry it. Journaled (`key.resolved`) with the operator's identity (the API key as a `user` actor). A key an invocation holds is resolved through its reconciliation.
         */
        post: operations["resolveBoundaryKey"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/completions/{connector}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Receive a signed completion (Standard Webhooks)
         * @description Headers webhook-id, webhook-timestamp (seconds, within 5 minutes) and webhook-signature (`v1,<base64 HMAC-SHA256>`). A repeated webhook-id answers 200 with `deliveryReplayed: true` and changes nothing, so senders stop retrying. 409 COMPLETION_UNKNOWN_REFERENCE: no operation waits under that reference (yet) — the sender should retry on its usual schedule.
         */
        post: operations["receiveCompletion"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/spaces/{spaceId}/completions/early": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List early completions whose reference has not matched a parked step
         * @description Oldest first. A completion stays early until its step parks (it is then applied) or the retention period (`earlyCompletionRetentionMs`) passes (the sweep then expires it, journaled). Results are withheld.
         */
        get: operations["listEarlyCompletions"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Actor: {
            /** @enum {string} */
            type: "agent" | "user" | "service";
            id: string;
        };
        Submitter: {
            principal: components["schemas"]["Actor"];
            keyId?: string;
        };
        ActionRequest: {
            /** @description defaults to the API key's tenant; if given it must be that tenant */
            tenantId?: string;
            /** @description defaults to the space in the path; if given it must be that space */
            spaceId?: string;
            action: string;
            actionVersion: string;
            /** @description defaults to the API key's principal; if given it must be the principal or on the key's delegation list */
            actor?: components["schemas"]["Actor"];
            authorityRef: string;
            /** @description a JSON object */
            params: {
                [key: string]: unknown;
            };
            idempotencyKey: string;
        };
        Error: {
            error: {
                /**
                 * @description stable code; switch on it, never on the message
                 * @enum {string}
                 */
                code: "INVALID_ARGUMENT" | "INVALID_OPTION" | "CANONICAL_JSON" | "VALIDATION_FAILED" | "NOT_FOUND" | "IDEMPOTENCY_CONFLICT" | "LEASE_LOST" | "SCOPE_VIOLATION" | "CONFLICT" | "STALE" | "LOCK_ORDER" | "STORE_ERROR" | "STORE_CLOSED" | "KEY_ERROR" | "INVALID_STATE" | "APPROVAL_CLOSED" | "FORBIDDEN" | "WEBHOOK_MALFORMED" | "WEBHOOK_SIGNATURE_INVALID" | "WEBHOOK_TIMESTAMP_STALE" | "WEBHOOK_REPLAYED" | "COMPLETION_UNKNOWN_REFERENCE" | "STEPS_STARTED" | "ABORTED" | "BAD_REQUEST" | "HEADERS_TOO_LARGE" | "UNAUTHORIZED" | "ROUTE_NOT_FOUND" | "METHOD_NOT_ALLOWED" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA_TYPE" | "MALFORMED_JSON" | "REQUEST_TIMEOUT" | "CLIENT_CLOSED_REQUEST" | "RATE_LIMITED" | "SERVICE_UNAVAILABLE" | "INTERNAL";
                message: string;
                details?: unknown;
            };
        };
        StoredRequest: {
            tenantId: string;
            spaceId: string;
            action: string;
            actionVersion: string;
            actor: components["schemas"]["Actor"];
            authorityRef: string;
            /** @description a JSON object */
            params: {
                [key: string]: unknown;
            };
            idempotencyKey: string;
        };
        Invocation: {
            tenantId: string;
            spaceId: string;
            invocationId: string;
            action: string;
            actionVersion: string;
            idempotencyKey: string;
            requestDigest: string;
            request: components["schemas"]["StoredRequest"];
            submittedBy?: components["schemas"]["Submitter"];
            /** @enum {string} */
            status: "queued" | "running" | "succeeded" | "failed" | "denied" | "cancelled" | "awaiting_approval" | "parked" | "reconciliation_required";
            /** @description epoch milliseconds */
            runAt: number;
            leaseOwner?: string;
            /** @description epoch milliseconds */
            leaseExpiresAt?: number;
            attemptCount: number;
            recoveryBase?: number;
            retryCount: number;
            nextStep: number;
            approvalId?: string;
            reasons?: string[];
            lastError?: string;
            /** @description any JSON value */
            result?: unknown;
            /** @description epoch milliseconds */
            overdueAt?: number;
            /** @description epoch milliseconds */
            deadlineAt?: number;
            compensating?: boolean;
            version?: number;
            /** @description epoch milliseconds */
            createdAt: number;
            /** @description epoch milliseconds */
            updatedAt: number;
            /** @description row revision: moves on with every write (docs/stores.md) */
            rev?: number;
        };
        SubmitAnswer: {
            invocation: components["schemas"]["Invocation"];
            /** @description true when the same key and request were admitted before */
            replayed: boolean;
        };
        InvocationAnswer: {
            invocation: components["schemas"]["Invocation"];
        };
        InvocationPage: {
            items: components["schemas"]["Invocation"][];
            /** @description pass as `cursor` for the next (older) page; null on the last page */
            nextCursor: string | null;
        };
        InvocationRead: {
            invocation: components["schemas"]["Invocation"];
            /** @description with wait: true when the invocation is in a state `until` names; false when the wait ended first (time ran out, or a final state `until` does not name) */
            reached?: boolean;
        };
        Cancel: Record<string, never>;
        GrantedAction: {
            action: string;
            version: string;
            /** @description a short human title: the action's title, else a readable form of its id */
            title: string;
            description?: string;
            /** @description JSON Schema (draft 2020-12) of the action's params */
            inputSchema: {
                [key: string]: unknown;
            };
            annotations: {
                /** @description the action changes nothing outside */
                readOnly: boolean;
                /** @description the action may destroy or irreversibly change something */
                destructive: boolean;
                /** @description running it twice has the effect of once */
                idempotent: boolean;
                /** @description the action reaches systems outside the operator's own */
                openWorld: boolean;
            };
            /** @description the authority of the key's principal that covers it: submit with it */
            authorityRef: string;
        };
        ActionList: {
            items: components["schemas"]["GrantedAction"][];
        };
        Approval: {
            tenantId: string;
            spaceId: string;
            approvalId: string;
            requestDigest: string;
            invocationId?: string;
            requestedBy: components["schemas"]["Actor"];
            submittedBy?: components["schemas"]["Submitter"];
            approverRoles: string[];
            quorum: number;
            votes: {
                approver: components["schemas"]["Actor"];
                keyId?: string;
                /** @enum {string} */
                verdict: "approve" | "deny";
                /** @description epoch milliseconds */
                at: number;
                note?: string;
            }[];
            /** @enum {string} */
            status: "pending" | "approved" | "denied" | "expired" | "revoked" | "closed";
            /** @description with status closed: the invocation ended without the approval (cancelled), by whom and when */
            closed?: {
                /** @enum {string} */
                invocationStatus: "queued" | "running" | "succeeded" | "failed" | "denied" | "cancelled" | "awaiting_approval" | "parked" | "reconciliation_required";
                by?: components["schemas"]["Actor"];
                /** @description epoch milliseconds */
                at: number;
            };
            /** @description epoch milliseconds */
            expiresAt: number;
            /** @description epoch milliseconds */
            createdAt: number;
            /** @description epoch milliseconds */
            updatedAt: number;
            /** @description row revision: moves on with every write (docs/stores.md) */
            rev?: number;
        };
        ApprovalAnswer: {
            approval: components["schemas"]["Approval"];
        };
        ApprovalList: {
            items: components["schemas"]["Approval"][];
        };
        ApprovalVote: {
            note?: string;
        };
        Reconciliation: {
            tenantId: string;
            spaceId: string;
            reconciliationId: string;
            invocationId: string;
            stepIndex: number;
            reason: string;
            reasonCode: string;
            externalRef?: string;
            /** @enum {string} */
            status: "open" | "resolved";
            resolution?: {
                /** @enum {string} */
                outcome: "succeeded" | "failed";
                externalRef?: string;
                note: string;
                by: components["schemas"]["Actor"];
                /** @description epoch milliseconds */
                at: number;
            };
            /** @description epoch milliseconds */
            createdAt: number;
            /** @description epoch milliseconds */
            updatedAt: number;
            /** @description row revision: moves on with every write (docs/stores.md) */
            rev?: number;
        };
        BreakerList: {
            items: {
                connector: string;
                operation: string;
                /** @enum {string} */
                state: "closed" | "open" | "half_open";
                /** @description consecutive transient failures and timeouts since the last success */
                failures: number;
                /** @description open: calls are refused until then (epoch ms); 0 when closed */
                openUntil: number;
                /** @description half-open with a probe in flight: when its slot expires (epoch ms) */
                probeUntil?: number;
                updatedAt: number;
            }[];
        };
        UnknownKey: {
            action: string;
            idempotencyKey: string;
            /** @description the attempt whose outcome is unknown */
            attemptId: string;
            requestDigest: string;
            /** @description epoch milliseconds */
            updatedAt: number;
        };
        ReconciliationList: {
            items: components["schemas"]["Reconciliation"][];
            /** @description keys bare boundary executions left unknown, oldest first (none when status=resolved) */
            unknownKeys: components["schemas"]["UnknownKey"][];
        };
        Resolve: {
            /** @enum {string} */
            outcome: "succeeded" | "failed";
            note: string;
            externalRef?: string;
        };
        JournalEntry: {
            tenantId: string;
            spaceId: string;
            seq: number;
            id: string;
            /** @description epoch milliseconds */
            at: number;
            type: string;
            refs: {
                [key: string]: string;
            };
            /** @description any JSON value */
            data: unknown;
            prevHash: string | null;
            hash: string;
        };
        UnsealedEntry: {
            tenantId: string;
            spaceId: string;
            id: string;
            /** @description epoch milliseconds */
            at: number;
            type: string;
            refs: {
                [key: string]: string;
            };
            /** @description any JSON value */
            data: unknown;
        };
        JournalPage: {
            entries: components["schemas"]["JournalEntry"][];
            /** @description fromSeq of the next page; null at the sealed head */
            nextFromSeq: number | null;
            /** @description entries committed and awaiting the sequencer, oldest first (at most 100); they appear in `entries` once sealed */
            unsealed: components["schemas"]["UnsealedEntry"][];
        };
        JournalCheckpoint: {
            tenantId: string;
            spaceId: string;
            seq: number;
            headHash: string;
            /** @description epoch milliseconds */
            at: number;
            /** @description JWS compact (EdDSA) over the checkpoint */
            signature: string;
        };
        JournalExportHeader: {
            /** @constant */
            format: "writ-journal/1";
            /** @constant */
            kind: "export";
            tenantId: string;
            spaceId: string;
            /** @description the first entry's seq */
            fromSeq: number;
            /** @description the last entry's seq (fromSeq - 1 when none) */
            throughSeq: number;
            /** @description the hash of the entry before fromSeq; null at seq 1 */
            prevHash: string | null;
            /** @description the last entry's hash (prevHash when none) */
            headHash: string | null;
            /** @description how many entry lines follow */
            entries: number;
            /** @description the signed checkpoints within [fromSeq - 1, throughSeq] */
            checkpoints: components["schemas"]["JournalCheckpoint"][];
            /** @description the public keys (JWK) that signed the checkpoints */
            keys: {
                /** @constant */
                kty: "OKP";
                /** @constant */
                crv: "Ed25519";
                x: string;
                kid: string;
            }[];
        };
        JournalVerification: {
            ok: boolean;
            entries: number;
            checkpoints: number;
            headSeq: number;
            headHash: string | null;
            /** @description entries committed and not sealed yet (a problem only once older than the sealing bound) */
            unsealed?: number;
            /** @description what of the chain came from archive segments, when the archives were verified with the database (docs/archives.md) */
            archive?: {
                segments: number;
                archivedThrough: number;
                bytes: number;
                firstLiveSeq: number | null;
            };
            problems: {
                seq?: number;
                id?: string;
                kind: string;
                /** @description the archive segment the finding is in */
                segment?: string;
                message: string;
            }[];
        };
        Preview: {
            /** @enum {string} */
            result: "ALLOW" | "DENY" | "REQUIRE_APPROVAL";
            reasons: string[];
            policyRef: string;
            requestDigest: string;
            authority: {
                authorityRef: string;
                /** @enum {string} */
                status: "active" | "suspended" | "revoked" | "unknown" | "expired";
                coversAction: boolean;
            };
            approval?: {
                approverRoles?: string[];
                quorum?: number;
                ttlMs?: number;
            };
        };
        EvaluateAndSign: {
            request: components["schemas"]["ActionRequest"];
            /** @description an approval to evaluate with (its status and digest are the policy's input) */
            approvalId?: string;
        };
        SignedDecision: {
            /** @description JWS compact, EdDSA; verify with /.well-known/jwks.json */
            decision: string;
            decisionId: string;
            kid: string;
            /** @enum {string} */
            result: "ALLOW" | "DENY" | "REQUIRE_APPROVAL";
            reasons: string[];
            policyRef: string;
            requestDigest: string;
            /** @description epoch milliseconds */
            issuedAt: number;
            approvalRef?: string;
        };
        BoundaryExecute: {
            request: components["schemas"]["ActionRequest"];
            /** @description a decision token (JWS compact) minted for this request */
            decision: string;
        };
        Attempt: {
            tenantId: string;
            spaceId: string;
            attemptId: string;
            seq: number;
            /** @enum {string} */
            state: "REFUSED" | "DUPLICATE" | "EXECUTING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "UNKNOWN" | "HANDED_OFF";
            reasonCode?: string;
            reason?: string;
            decisionId?: string;
            requestDigest?: string;
            action?: string;
            idempotencyKey?: string;
            invocationId?: string;
            stepIndex?: number;
            externalRef?: string;
            /** @description any JSON value */
            output?: unknown;
            originalAttemptId?: string;
            /** @description epoch milliseconds */
            startedAt: number;
            /** @description epoch milliseconds */
            endedAt?: number;
            transient?: boolean;
        };
        AttemptAnswer: {
            attempt: components["schemas"]["Attempt"];
        };
        ResolveKey: {
            action: string;
            idempotencyKey: string;
            /** @enum {string} */
            outcome: "succeeded" | "failed";
            note: string;
            /** @description required with succeeded: what a replay of the key returns */
            externalRef?: string;
        };
        IdempotencyKey: {
            tenantId: string;
            spaceId: string;
            action: string;
            idempotencyKey: string;
            requestDigest: string;
            /** @enum {string} */
            state: "in_progress" | "succeeded" | "failed" | "unknown" | "handed_off";
            invocationId: string;
            attemptId: string;
            resultAttemptId?: string;
            /** @description epoch milliseconds */
            updatedAt: number;
        };
        KeyResolution: {
            idempotency: components["schemas"]["IdempotencyKey"];
            /** @description the attempt whose outcome was unknown */
            attempt: components["schemas"]["Attempt"] | null;
        };
        Completion: {
            externalRef: string;
            /** @enum {string} */
            outcome: "success" | "failure";
            /** @description any JSON value */
            result?: unknown;
            error?: string;
            /** @description any JSON value */
            evidence?: unknown;
        };
        CompletionAnswer: {
            /** @enum {string} */
            disposition: "applied" | "early" | "duplicate" | "contradictory" | "late" | "evidence" | "expired";
            invocationId?: string;
            /** @enum {string} */
            status?: "queued" | "running" | "succeeded" | "failed" | "denied" | "cancelled" | "awaiting_approval" | "parked" | "reconciliation_required";
            /** @description true when this webhook-id was received before (nothing changed) */
            deliveryReplayed?: boolean;
        };
        EarlyCompletion: {
            tenantId: string;
            spaceId: string;
            completionId: string;
            connector: string;
            externalRef: string;
            /** @enum {string} */
            outcome: "success" | "failure";
            error?: string;
            /** @description any JSON value */
            evidence?: unknown;
            contentDigest: string;
            /** @enum {string} */
            disposition: "applied" | "early" | "duplicate" | "contradictory" | "late" | "evidence" | "expired";
            /** @description epoch milliseconds */
            receivedAt: number;
            rev?: number;
        };
        EarlyCompletionList: {
            items: components["schemas"]["EarlyCompletion"][];
            /** @description how long an early completion is kept before the sweep expires it */
            retentionMs: number;
        };
        Jwks: {
            keys: {
                /** @constant */
                kty: "OKP";
                /** @constant */
                crv: "Ed25519";
                x: string;
                kid: string;
                alg?: string;
                use?: string;
            }[];
        };
        Health: {
            /** @constant */
            status: "ok";
            store: string;
        };
        SubscriptionFilter: {
            /** @description action globs (`payments.*`): events about other actions are not sent */
            actions?: string[];
            /** @description for invocation.ended: only these ending statuses */
            statuses?: ("succeeded" | "failed" | "denied" | "cancelled")[];
            /** @description only events of these spaces */
            spaces?: string[];
        };
        SubscriptionCreate: {
            /** @description http(s), without credentials; every delivery is signed with the subscription's secret */
            url: string;
            events: ("approval.requested" | "approval.decided" | "approval.expiring" | "reconciliation.opened" | "reconciliation.resolved" | "invocation.ended" | "handoff.overdue" | "journal.verify_failed" | "breaker.opened")[];
            /**
             * @description `standard` (Standard Webhooks JSON, the default) or `slack` (an incoming-webhook Block Kit message)
             * @enum {string}
             */
            format?: "standard" | "slack";
            filter?: components["schemas"]["SubscriptionFilter"];
            description?: string;
            enabled?: boolean;
        };
        SubscriptionUpdate: {
            /** @description http(s), without credentials; every delivery is signed with the subscription's secret */
            url?: string;
            events?: ("approval.requested" | "approval.decided" | "approval.expiring" | "reconciliation.opened" | "reconciliation.resolved" | "invocation.ended" | "handoff.overdue" | "journal.verify_failed" | "breaker.opened")[];
            /**
             * @description `standard` (Standard Webhooks JSON, the default) or `slack` (an incoming-webhook Block Kit message)
             * @enum {string}
             */
            format?: "standard" | "slack";
            filter?: components["schemas"]["SubscriptionFilter"];
            description?: string;
            enabled?: boolean;
        };
        Subscription: {
            tenantId: string;
            subscriptionId: string;
            url: string;
            events: ("approval.requested" | "approval.decided" | "approval.expiring" | "reconciliation.opened" | "reconciliation.resolved" | "invocation.ended" | "handoff.overdue" | "journal.verify_failed" | "breaker.opened")[];
            filter?: components["schemas"]["SubscriptionFilter"];
            /** @enum {string} */
            format: "standard" | "slack";
            description?: string;
            enabled: boolean;
            /** @description epoch milliseconds */
            createdAt: number;
            /** @description epoch milliseconds */
            updatedAt: number;
            createdBy?: components["schemas"]["Actor"];
        };
        SubscriptionCreated: {
            subscription: components["schemas"]["Subscription"];
            /** @description the `whsec_` signing secret, shown this once: verify deliveries with it */
            secret: string;
        };
        SubscriptionAnswer: {
            subscription: components["schemas"]["Subscription"];
        };
        SubscriptionList: {
            items: components["schemas"]["Subscription"][];
        };
        DeliveryAttempt: {
            /** @description epoch milliseconds */
            at: number;
            latencyMs: number;
            statusCode?: number;
            error?: string;
            response?: string;
        };
        Delivery: {
            tenantId: string;
            deliveryId: string;
            subscriptionId: string;
            seq?: number;
            /** @description the webhook-id of every try: receivers dedupe on it */
            eventId: string;
            /** @enum {string} */
            eventType: "approval.requested" | "approval.decided" | "approval.expiring" | "reconciliation.opened" | "reconciliation.resolved" | "invocation.ended" | "handoff.overdue" | "journal.verify_failed" | "breaker.opened";
            spaceId?: string;
            /** @description epoch milliseconds */
            at: number;
            /** @description the exact body sent (sensitive params masked) */
            body: string;
            /** @enum {string} */
            status: "pending" | "delivered" | "dead";
            attempts: number;
            /** @description epoch milliseconds */
            nextAttemptAt: number;
            /** @description epoch milliseconds */
            createdAt: number;
            /** @description epoch milliseconds */
            updatedAt: number;
            /** @description epoch milliseconds */
            deliveredAt?: number;
            deadReason?: string;
            log: components["schemas"]["DeliveryAttempt"][];
        };
        DeliveryAnswer: {
            delivery: components["schemas"]["Delivery"];
        };
        DeliveryList: {
            items: components["schemas"]["Delivery"][];
            /** @description pass as beforeSeq for the next (older) page; null on the last */
            nextBeforeSeq: number | null;
        };
        Redeliver: Record<string, never>;
    };
    responses: {
        /** @description bad input (VALIDATION_FAILED, MALFORMED_JSON, ...) */
        Error400: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description missing or invalid credentials (UNAUTHORIZED) */
        Error401: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description the API key lacks the role or the space (FORBIDDEN) */
        Error403: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description not found in the caller's scope (NOT_FOUND) */
        Error404: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description body larger than the limit (PAYLOAD_TOO_LARGE) */
        Error413: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description body is not application/json (UNSUPPORTED_MEDIA_TYPE) */
        Error415: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description the API key is over its rate limit (RATE_LIMITED); retry after Retry-After seconds */
        Error429: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description internal error (INTERNAL), details only in the server log */
        Error500: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
        /** @description the store is unavailable */
        Error503: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    health: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description healthy */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Health"];
                };
            };
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description metrics */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain; version=0.0.4": string;
                };
            };
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    jwks: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the JWKS */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Jwks"];
                };
            };
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the OpenAPI document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": string;
                };
            };
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listInvocations: {
        parameters: {
            query?: {
                status?: "queued" | "running" | "succeeded" | "failed" | "denied" | "cancelled" | "awaiting_approval" | "parked" | "reconciliation_required";
                /** @description page size, 1-500 (default 50) */
                limit?: number;
                /** @description nextCursor of the previous page */
                cursor?: string;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description one page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvocationPage"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    submitInvocation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ActionRequest"];
            };
        };
        responses: {
            /** @description already admitted with this key and request (replayed: true) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubmitAnswer"];
                };
            };
            /** @description admitted; a worker will run it */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubmitAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description IDEMPOTENCY_CONFLICT: the key was used with another request */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getInvocation: {
        parameters: {
            query?: {
                /** @description long poll: answer as soon as the invocation is in a state `until` names, or after this many seconds (0-60); without it the answer is immediate */
                wait?: number;
                /** @description with wait: the states that end the wait: `final` (succeeded, failed, denied, cancelled), `settled` (final, or waiting for a person or a callback: awaiting_approval, parked, reconciliation_required; the default), or statuses, comma-separated (`awaiting_approval,final`). A final state always ends the wait. */
                until?: string;
            };
            header?: never;
            path: {
                spaceId: string;
                invocationId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the invocation; with wait, once it is in a state until names or the wait ends */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvocationRead"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    cancelInvocation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                invocationId: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["Cancel"];
            };
        };
        responses: {
            /** @description cancelled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvocationAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description STEPS_STARTED: a step started, too late to cancel; INVALID_STATE: the invocation already ended */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listActions: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the actions, in the config's order */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ActionList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listApprovals: {
        parameters: {
            query?: {
                status?: "pending" | "approved" | "denied" | "expired" | "revoked" | "closed";
                limit?: number;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description approvals */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getApproval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                approvalId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the approval */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    approveApproval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                approvalId: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ApprovalVote"];
            };
        };
        responses: {
            /** @description the approval after the vote */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description INVALID_STATE: no longer pending, or this approver already voted; APPROVAL_CLOSED: its invocation ended without it (cancelled), the message says how and by whom */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    denyApproval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                approvalId: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ApprovalVote"];
            };
        };
        responses: {
            /** @description the approval after the vote */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description INVALID_STATE: no longer pending, or this approver already voted; APPROVAL_CLOSED: its invocation ended without it (cancelled), the message says how and by whom */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    revokeApproval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                approvalId: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["ApprovalVote"];
            };
        };
        responses: {
            /** @description the approval after the vote */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ApprovalAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description INVALID_STATE: no longer pending, or this approver already voted; APPROVAL_CLOSED: its invocation ended without it (cancelled), the message says how and by whom */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listReconciliations: {
        parameters: {
            query?: {
                status?: "open" | "resolved";
                limit?: number;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description reconciliations and unknown keys */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ReconciliationList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    resolveReconciliation: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
                reconciliationId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Resolve"];
            };
        };
        responses: {
            /** @description the invocation after the resolution */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["InvocationAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description INVALID_STATE: already resolved */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listSubscriptions: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description subscriptions, oldest first (secrets never shown) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionList"];
                };
            };
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    createSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubscriptionCreate"];
            };
        };
        responses: {
            /** @description the subscription and its secret */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionCreated"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the subscription */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    deleteSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    updateSubscription: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                subscriptionId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubscriptionUpdate"];
            };
        };
        responses: {
            /** @description the subscription as changed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubscriptionAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listDeliveries: {
        parameters: {
            query?: {
                subscriptionId?: string;
                status?: "pending" | "delivered" | "dead";
                limit?: number;
                beforeSeq?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description deliveries, newest first */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    getDelivery: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                deliveryId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the delivery */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    redeliver: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                deliveryId: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["Redeliver"];
            };
        };
        responses: {
            /** @description the delivery, pending again */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeliveryAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            /** @description INVALID_STATE: it is still pending */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listBreakers: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description breakers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BreakerList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    readJournal: {
        parameters: {
            query?: {
                fromSeq?: number;
                limit?: number;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description entries, ascending */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JournalPage"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    exportJournal: {
        parameters: {
            query?: {
                fromSeq?: number;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description JSON Lines: a JournalExportHeader line, then one JournalEntry a line */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    verifyJournal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the verification (ok: false lists the problems) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["JournalVerification"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    previewDecision: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ActionRequest"];
            };
        };
        responses: {
            /** @description the policy's answer */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Preview"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    evaluateAndSign: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EvaluateAndSign"];
            };
        };
        responses: {
            /** @description the signed decision */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SignedDecision"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    boundaryExecute: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["BoundaryExecute"];
            };
        };
        responses: {
            /** @description the recorded attempt */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AttemptAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    resolveBoundaryKey: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ResolveKey"];
            };
        };
        responses: {
            /** @description the key after the resolution */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["KeyResolution"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            /** @description NOT_FOUND: no such key */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description INVALID_STATE: the key is not unknown, or an invocation holds it */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            415: components["responses"]["Error415"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    receiveCompletion: {
        parameters: {
            query?: never;
            header: {
                "webhook-id": string;
                "webhook-timestamp": string;
                "webhook-signature": string;
            };
            path: {
                connector: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["Completion"];
            };
        };
        responses: {
            /** @description applied, absorbed as a duplicate, kept as early, or recorded as contradictory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CompletionAnswer"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            /** @description COMPLETION_UNKNOWN_REFERENCE (retry later) or INVALID_STATE */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            413: components["responses"]["Error413"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
    listEarlyCompletions: {
        parameters: {
            query?: {
                /** @description page size, 1-1000 (default 100) */
                limit?: number;
            };
            header?: never;
            path: {
                spaceId: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description early completions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EarlyCompletionList"];
                };
            };
            400: components["responses"]["Error400"];
            401: components["responses"]["Error401"];
            403: components["responses"]["Error403"];
            404: components["responses"]["Error404"];
            429: components["responses"]["Error429"];
            500: components["responses"]["Error500"];
            503: components["responses"]["Error503"];
        };
    };
}
