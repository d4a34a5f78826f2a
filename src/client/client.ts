/**
 * A typed client for Writ's HTTP API (docs/client.md), built on `fetch` alone: it runs wherever
 * `fetch` does (Node 20+, Deno, Bun, browsers, workers) and imports no Node built-in. Its types are
 * generated from the server's OpenAPI document (src/client/openapi.ts).
 *
 * @example
 * const writ = createClient({ baseUrl: "http://127.0.0.1:8787", apiKey: process.env.WRIT_KEY!, space: "default" });
 * const { invocation } = await writ.invocations.submit({ action: "payments.refund", actionVersion: "1", authorityRef: "support-bot", params: { paymentId: "pay_1", amount: 1200, currency: "EUR" } });
 * const done = await writ.invocations.wait(invocation.invocationId, { until: "final", timeoutMs: 30_000 });
 */
import { WritApiError, type WritErrorCode } from "./errors.js";
import type * as T from "./types.js";

/** How failed requests are retried: only requests a retry cannot repeat (reads, and submits, which carry an idempotency key). */
export interface RetryOptions {
  /** Retries after the first try (0: none). @defaultValue 3 */
  retries?: number;
  /** The first backoff; each retry doubles it (with full jitter). @defaultValue 200 */
  baseDelayMs?: number;
  /** No backoff is longer, a server's Retry-After included. @defaultValue 5000 */
  maxDelayMs?: number;
}

export interface WritClientOptions {
  /** The server, e.g. `http://127.0.0.1:8787` (a path prefix is kept). */
  baseUrl: string;
  /** An API key (`writ_<keyId>_<secret>`); its tenant, roles and principal decide what the calls may do. */
  apiKey: string;
  /** The space calls act in. @defaultValue "default" */
  space?: string;
  /** The `fetch` to use (a test double, a proxying fetch). @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** @defaultValue { retries: 3, baseDelayMs: 200, maxDelayMs: 5000 } */
  retry?: RetryOptions;
  /** Headers sent with every request (besides Authorization). @defaultValue {} */
  headers?: Record<string, string>;
}

/** Per call: an AbortSignal ends the call (and its retries) with code `ABORTED`. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** `final`, `settled`, or one status (docs/http-api.md, Waiting). */
export type WaitUntil = "final" | "settled" | T.InvocationStatus;

export interface WaitOptions extends CallOptions {
  /** The states that end the wait (a final state always does). @defaultValue "settled" */
  until?: WaitUntil | readonly WaitUntil[];
  /** Give up after this long and answer `reached: false`. @defaultValue 30000 */
  timeoutMs?: number;
}

/** A submit: a request whose idempotency key the client makes when none is given. */
export type SubmitInput = Omit<T.BodyOf<"submitInvocation">, "idempotencyKey"> & { idempotencyKey?: string };

export interface WritClient {
  /** The space the calls act in. */
  readonly space: string;
  invocations: {
    /**
     * Submits a request. Without an `idempotencyKey` the client makes one for this call, so its own
     * retries after a lost answer are the same request (never a second action); pass your own key
     * to make retries across calls (or processes) safe too.
     */
    submit: (req: SubmitInput, o?: CallOptions) => Promise<T.AnswerOf<"submitInvocation", 202>>;
    get: (invocationId: string, o?: CallOptions) => Promise<T.Invocation>;
    list: (query?: T.QueryOf<"listInvocations">, o?: CallOptions) => Promise<T.AnswerOf<"listInvocations", 200>>;
    cancel: (invocationId: string, o?: CallOptions) => Promise<T.Invocation>;
    /**
     * Waits (server long polls, not a client poll) until the invocation is in a state `until`
     * names or a final state, or `timeoutMs` passes; `reached` says whether `until` was met.
     */
    wait: (invocationId: string, o?: WaitOptions) => Promise<{ invocation: T.Invocation; reached: boolean }>;
  };
  actions: {
    /** The actions the key's principal may ask for, with the authority to submit under (the tool adapters' source). */
    list: (o?: CallOptions) => Promise<T.GrantedAction[]>;
  };
  approvals: {
    list: (query?: T.QueryOf<"listApprovals">, o?: CallOptions) => Promise<T.Approval[]>;
    get: (approvalId: string, o?: CallOptions) => Promise<T.Approval>;
    approve: (approvalId: string, body?: T.BodyOf<"approveApproval">, o?: CallOptions) => Promise<T.Approval>;
    deny: (approvalId: string, body?: T.BodyOf<"denyApproval">, o?: CallOptions) => Promise<T.Approval>;
    revoke: (approvalId: string, body?: T.BodyOf<"revokeApproval">, o?: CallOptions) => Promise<T.Approval>;
  };
  reconciliations: {
    /** The reconciliation queue: invocations' unknown outcomes (`items`) and keys bare executions left unknown (`unknownKeys`). */
    list: (query?: T.QueryOf<"listReconciliations">, o?: CallOptions) => Promise<T.AnswerOf<"listReconciliations", 200>>;
    resolve: (reconciliationId: string, body: T.BodyOf<"resolveReconciliation">, o?: CallOptions) => Promise<T.Invocation>;
  };
  breakers: { list: (o?: CallOptions) => Promise<T.Breaker[]> };
  journal: {
    read: (query?: T.QueryOf<"readJournal">, o?: CallOptions) => Promise<T.JournalPage>;
    /**
     * Every sealed entry from `fromSeq` up to the sealed head when the export began (`head`), with
     * the export's header (its range, signed checkpoints and their keys; null from a server that
     * writes none). `text` is the export as received: save it for `writ journal verify --file`.
     */
    export: (query?: T.QueryOf<"exportJournal">, o?: CallOptions) => Promise<{ head: number | null; header: T.JournalExportHeader | null; entries: T.JournalEntry[]; text: string }>;
    verify: (o?: CallOptions) => Promise<T.JournalVerification>;
  };
  decisions: {
    preview: (req: T.BodyOf<"previewDecision">, o?: CallOptions) => Promise<T.Preview>;
    evaluateAndSign: (body: T.BodyOf<"evaluateAndSign">, o?: CallOptions) => Promise<T.SignedDecision>;
  };
  boundary: {
    execute: (body: T.BodyOf<"boundaryExecute">, o?: CallOptions) => Promise<T.Attempt>;
    /** Settles a key a bare boundary execution left unknown (one of `reconciliations.list().unknownKeys`). */
    resolveKey: (body: T.BodyOf<"resolveBoundaryKey">, o?: CallOptions) => Promise<T.KeyResolution>;
  };
  completions: { early: (query?: T.QueryOf<"listEarlyCompletions">, o?: CallOptions) => Promise<T.EarlyCompletionList> };
  /** Webhook subscriptions of the key's tenant and their deliveries (docs/notifications.md); admin keys. */
  notifications: {
    subscriptions: {
      list: (o?: CallOptions) => Promise<T.AnswerOf<"listSubscriptions", 200>["items"]>;
      /** The answer carries the signing secret, shown this once. */
      create: (body: T.BodyOf<"createSubscription">, o?: CallOptions) => Promise<T.AnswerOf<"createSubscription", 201>>;
      get: (subscriptionId: string, o?: CallOptions) => Promise<T.AnswerOf<"getSubscription", 200>["subscription"]>;
      update: (subscriptionId: string, body: T.BodyOf<"updateSubscription">, o?: CallOptions) => Promise<T.AnswerOf<"updateSubscription", 200>["subscription"]>;
      delete: (subscriptionId: string, o?: CallOptions) => Promise<void>;
    };
    deliveries: {
      list: (query?: T.QueryOf<"listDeliveries">, o?: CallOptions) => Promise<T.AnswerOf<"listDeliveries", 200>>;
      get: (deliveryId: string, o?: CallOptions) => Promise<T.AnswerOf<"getDelivery", 200>["delivery"]>;
      redeliver: (deliveryId: string, o?: CallOptions) => Promise<T.AnswerOf<"redeliver", 200>["delivery"]>;
    };
  };
  system: {
    health: (o?: CallOptions) => Promise<T.Health>;
    jwks: (o?: CallOptions) => Promise<T.Jwks>;
    openapi: (o?: CallOptions) => Promise<Record<string, unknown>>;
  };
}

/** The longest long poll the server grants (`MAX_WAIT_SECONDS`, src/server/schemas.ts). */
const MAX_WAIT_SECONDS = 60;

/** Statuses a retry may help with: rate limited, and a server or gateway that is unavailable. */
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

interface Req {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined> | undefined;
  body?: unknown;
  /** A retry cannot repeat an effect: a read, or a submit under its idempotency key. */
  safe: boolean;
  signal?: AbortSignal | undefined;
}

function fail(message: string): never {
  throw new WritApiError("INVALID_OPTION", 0, message);
}

function checkOptions(o: WritClientOptions): Required<RetryOptions> {
  if (typeof o !== "object" || o === null) fail("createClient: options must be an object");
  if (typeof o.baseUrl !== "string" || !/^https?:\/\//.test(o.baseUrl)) fail("createClient: baseUrl must be an http(s) URL");
  if (typeof o.apiKey !== "string" || o.apiKey.length === 0) fail("createClient: apiKey must be the API key text (writ_…)");
  if (o.space !== undefined && (typeof o.space !== "string" || o.space.length === 0 || o.space.length > 200)) fail("createClient: space must be 1-200 characters");
  if (o.fetch !== undefined && typeof o.fetch !== "function") fail("createClient: fetch must be a function");
  const r = { retries: 3, baseDelayMs: 200, maxDelayMs: 5000, ...o.retry };
  if (!Number.isInteger(r.retries) || r.retries < 0 || r.retries > 20) fail("createClient: retry.retries must be an integer from 0 to 20");
  if (!Number.isFinite(r.baseDelayMs) || r.baseDelayMs < 0) fail("createClient: retry.baseDelayMs must be a number of milliseconds >= 0");
  if (!Number.isFinite(r.maxDelayMs) || r.maxDelayMs < r.baseDelayMs) fail("createClient: retry.maxDelayMs must be a number of milliseconds >= retry.baseDelayMs");
  return r;
}

function aborted(signal: AbortSignal | undefined, cause?: unknown): WritApiError {
  return new WritApiError("ABORTED", 0, "the call was aborted", { cause: cause ?? signal?.reason });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted(signal));
    const done = (): void => {
      signal?.removeEventListener("abort", stop);
      resolve();
    };
    const timer = setTimeout(done, ms);
    function stop(): void {
      clearTimeout(timer);
      reject(aborted(signal));
    }
    signal?.addEventListener("abort", stop, { once: true });
  });
}

/** A new idempotency key: `client-` and 128 random bits (Web Crypto, present wherever fetch is). */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `client-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function untilText(u: WaitUntil | readonly WaitUntil[] | undefined): string {
  if (u === undefined) return "settled";
  return typeof u === "string" ? u : u.join(",");
}

/**
 * Creates a client for one server, API key and space.
 * @example
 * const writ = createClient({ baseUrl: "https://writ.internal", apiKey: key, space: "prod" });
 * const queue = await writ.reconciliations.list({ status: "open" });
 */
export function createClient(options: WritClientOptions): WritClient {
  const retry = checkOptions(options);
  const base = options.baseUrl.replace(/\/+$/, "");
  const space = options.space ?? "default";
  const doFetch = options.fetch ?? ((input: URL, init?: RequestInit) => globalThis.fetch(input, init));
  const headers = { ...options.headers, authorization: `Bearer ${options.apiKey}` };
  const sp = `/v1/spaces/${encodeURIComponent(space)}`;
  const id = encodeURIComponent;

  async function send(r: Req): Promise<Response> {
    const url = new URL(base + r.path);
    for (const [k, v] of Object.entries(r.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const init: RequestInit = { method: r.method, headers: r.body !== undefined ? { ...headers, "content-type": "application/json" } : headers };
    if (r.body !== undefined) init.body = JSON.stringify(r.body);
    if (r.signal) init.signal = r.signal;
    for (let attempt = 0; ; attempt++) {
      if (r.signal?.aborted) throw aborted(r.signal);
      let res: Response | null = null;
      let cause: unknown;
      try {
        res = await doFetch(url, init);
      } catch (e) {
        if (r.signal?.aborted) throw aborted(r.signal, e);
        cause = e;
      }
      const again = r.safe && attempt < retry.retries && (res === null || RETRY_STATUSES.has(res.status));
      if (!again) {
        if (res === null) throw new WritApiError("NETWORK_ERROR", 0, `no answer from ${url.origin}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
        return res;
      }
      const backoff = Math.random() * Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** attempt);
      const after = Number(res?.headers.get("retry-after"));
      await res?.body?.cancel();
      await sleep(Number.isFinite(after) && after > 0 ? Math.min(retry.maxDelayMs, after * 1000) : backoff, r.signal);
    }
  }

  async function errorOf(res: Response): Promise<WritApiError> {
    const requestId = res.headers.get("x-request-id") ?? undefined;
    const text = await res.text().catch(() => "");
    try {
      const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error;
      if (e && typeof e.code === "string" && typeof e.message === "string") return new WritApiError(e.code as WritErrorCode, res.status, e.message, { requestId, details: e.details });
    } catch {
      // not the API's error shape: below
    }
    return new WritApiError("BAD_RESPONSE", res.status, `HTTP ${res.status} without a Writ error body: ${text.slice(0, 200)}`, { requestId });
  }

  async function json<T>(r: Req): Promise<T> {
    const res = await send(r);
    if (!res.ok) throw await errorOf(res);
    try {
      return (await res.json()) as T;
    } catch (e) {
      if (r.signal?.aborted) throw aborted(r.signal, e);
      throw new WritApiError("BAD_RESPONSE", res.status, `the answer to ${r.method} ${r.path} is not JSON`, { requestId: res.headers.get("x-request-id") ?? undefined, cause: e });
    }
  }

  const get = <T>(path: string, o: CallOptions = {}, query?: Req["query"]): Promise<T> => json<T>({ method: "GET", path, query, safe: true, signal: o.signal });
  const post = <T>(path: string, body: unknown, o: CallOptions = {}, safe = false): Promise<T> => json<T>({ method: "POST", path, body: body ?? {}, safe, signal: o.signal });

  const invocations: WritClient["invocations"] = {
    async submit(req, o) {
      // One key for this logical call, made before the first try: every retry sends the same request.
      const body = { ...req, idempotencyKey: req.idempotencyKey ?? newIdempotencyKey() };
      return post(`${sp}/invocations`, body, o, true);
    },
    async get(invocationId, o) {
      return (await get<T.AnswerOf<"getInvocation", 200>>(`${sp}/invocations/${id(invocationId)}`, o)).invocation;
    },
    list: (query, o) => get(`${sp}/invocations`, o, query),
    async cancel(invocationId, o) {
      return (await post<T.AnswerOf<"cancelInvocation", 200>>(`${sp}/invocations/${id(invocationId)}/cancel`, {}, o)).invocation;
    },
    async wait(invocationId, o = {}) {
      const timeoutMs = o.timeoutMs ?? 30_000;
      if (!Number.isFinite(timeoutMs) || timeoutMs < 0) fail("wait: timeoutMs must be a number of milliseconds >= 0");
      const until = untilText(o.until);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const seconds = Math.min(MAX_WAIT_SECONDS, Math.max(0, Math.ceil((deadline - Date.now()) / 1000)));
        const a = await get<T.AnswerOf<"getInvocation", 200>>(`${sp}/invocations/${id(invocationId)}`, o, { wait: seconds, until });
        const reached = a.reached === true;
        const final = a.invocation.status === "succeeded" || a.invocation.status === "failed" || a.invocation.status === "denied" || a.invocation.status === "cancelled";
        if (reached || final || Date.now() >= deadline) return { invocation: a.invocation, reached };
      }
    },
  };

  return {
    space,
    invocations,
    actions: { list: async (o) => (await get<T.AnswerOf<"listActions", 200>>(`${sp}/actions`, o)).items },
    approvals: {
      list: async (query, o) => (await get<T.AnswerOf<"listApprovals", 200>>(`${sp}/approvals`, o, query)).items,
      get: async (approvalId, o) => (await get<T.AnswerOf<"getApproval", 200>>(`${sp}/approvals/${id(approvalId)}`, o)).approval,
      approve: async (approvalId, body, o) => (await post<T.AnswerOf<"approveApproval", 200>>(`${sp}/approvals/${id(approvalId)}/approve`, body, o)).approval,
      deny: async (approvalId, body, o) => (await post<T.AnswerOf<"denyApproval", 200>>(`${sp}/approvals/${id(approvalId)}/deny`, body, o)).approval,
      revoke: async (approvalId, body, o) => (await post<T.AnswerOf<"revokeApproval", 200>>(`${sp}/approvals/${id(approvalId)}/revoke`, body, o)).approval,
    },
    reconciliations: {
      list: (query, o) => get(`${sp}/reconciliations`, o, query),
      resolve: async (reconciliationId, body, o) => (await post<T.AnswerOf<"resolveReconciliation", 200>>(`${sp}/reconciliations/${id(reconciliationId)}/resolve`, body, o)).invocation,
    },
    breakers: { list: async (o) => (await get<T.AnswerOf<"listBreakers", 200>>(`${sp}/breakers`, o)).items },
    journal: {
      read: (query, o) => get(`${sp}/journal`, o, query),
      async export(query, o = {}) {
        const res = await send({ method: "GET", path: `${sp}/journal/export`, query, safe: true, signal: o.signal });
        if (!res.ok) throw await errorOf(res);
        const head = res.headers.get("x-writ-journal-head");
        const text = await res.text();
        const lines = text
          .split("\n")
          .filter((line) => line.length > 0)
          .map((line) => JSON.parse(line) as T.JournalEntry | T.JournalExportHeader);
        const first = lines[0];
        const header = first !== undefined && "format" in first && first.format === "writ-journal/1" ? first : null;
        const entries = (header !== null ? lines.slice(1) : lines) as T.JournalEntry[];
        return { head: head === null || head === "" ? null : Number(head), header, entries, text };
      },
      verify: (o) => get(`${sp}/journal/verify`, o),
    },
    decisions: {
      // A preview signs and changes nothing: safe to retry.
      preview: (req, o) => post(`${sp}/decisions/preview`, req, o, true),
      evaluateAndSign: (body, o) => post(`${sp}/decisions/evaluate-and-sign`, body, o),
    },
    boundary: {
      execute: async (body, o) => (await post<T.AnswerOf<"boundaryExecute", 200>>(`${sp}/boundary/execute`, body, o)).attempt,
      resolveKey: (body, o) => post(`${sp}/boundary/keys/resolve`, body, o),
    },
    completions: { early: (query, o) => get(`${sp}/completions/early`, o, query) },
    notifications: {
      subscriptions: {
        list: async (o) => (await get<T.AnswerOf<"listSubscriptions", 200>>("/v1/notifications/subscriptions", o)).items,
        create: (body, o) => post("/v1/notifications/subscriptions", body, o),
        get: async (subscriptionId, o) => (await get<T.AnswerOf<"getSubscription", 200>>(`/v1/notifications/subscriptions/${id(subscriptionId)}`, o)).subscription,
        update: async (subscriptionId, body, o = {}) =>
          (await json<T.AnswerOf<"updateSubscription", 200>>({ method: "PATCH", path: `/v1/notifications/subscriptions/${id(subscriptionId)}`, body, safe: false, signal: o.signal })).subscription,
        async delete(subscriptionId, o = {}) {
          const res = await send({ method: "DELETE", path: `/v1/notifications/subscriptions/${id(subscriptionId)}`, safe: false, signal: o.signal });
          if (!res.ok) throw await errorOf(res);
          await res.body?.cancel();
        },
      },
      deliveries: {
        list: (query, o) => get("/v1/notifications/deliveries", o, query),
        get: async (deliveryId, o) => (await get<T.AnswerOf<"getDelivery", 200>>(`/v1/notifications/deliveries/${id(deliveryId)}`, o)).delivery,
        redeliver: async (deliveryId, o) => (await post<T.AnswerOf<"redeliver", 200>>(`/v1/notifications/deliveries/${id(deliveryId)}/redeliver`, {}, o)).delivery,
      },
    },
    system: {
      health: (o) => get("/healthz", o),
      jwks: (o) => get("/.well-known/jwks.json", o),
      openapi: (o) => get("/openapi.json", o),
    },
  };
}
