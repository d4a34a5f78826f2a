/**
 * `httpConnector`: REST calls as connector operations. Each call carries the step idempotency key
 * (`Idempotency-Key`), honours the step's AbortSignal and deadline, and reads the answer by the
 * table in docs/connectors.md: what the provider did is success or accepted; what it provably did
 * not do is a failure (transient when a retry may help); everything else is ambiguous.
 */
import { defineConnector, type Connector, type ConnectorContext, type ConnectorReply } from "../../core/action.js";
import { errorMessage } from "../../core/errors.js";
import type { Json } from "../../core/types.js";
import { budgetMs } from "../connector-options.js";
import { fetchTransport } from "./http-fetch-transport.js";
import { defaultStatusOutcome, oneLine, parseJsonBody, refText, secretMasker, valueAt } from "./http-mapping.js";
import { nodeTransport } from "./http-node-transport.js";
import { isHeaderName, isHeaderValue, resolveHttpOptions, type HttpConnectorOptions, type HttpHeaders, type ResolvedHttpOperation, type ResolvedHttpOptions } from "./http-options.js";
import type { HttpCall, HttpResponse, HttpTransport } from "./http-transport.js";

/** Most characters of a response body quoted in a failure reason. */
const EXCERPT = 300;

type Built = { ok: true; call: HttpCall; mask: (text: string) => string } | { ok: false; reply: ConnectorReply };

function fillPath(op: ResolvedHttpOperation, input: Json): { ok: true; path: string } | { ok: false; missing: string } {
  let missing: string | undefined;
  const path = op.path.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => {
    const v = input !== null && typeof input === "object" && !Array.isArray(input) && Object.prototype.hasOwnProperty.call(input, name) ? input[name] : undefined;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return encodeURIComponent(String(v));
    missing ??= name;
    return "";
  });
  return missing === undefined ? { ok: true, path } : { ok: false, missing };
}

async function connectorHeaders(o: ResolvedHttpOptions): Promise<{ ok: true; headers: HttpHeaders } | { ok: false; problem: string; definite: boolean }> {
  if (typeof o.headers !== "function") return { ok: true, headers: o.headers };
  let got: unknown;
  try {
    got = await o.headers();
  } catch (e) {
    return { ok: false, problem: `the headers function threw: ${errorMessage(e)}`, definite: false };
  }
  if (typeof got !== "object" || got === null) return { ok: false, problem: "the headers function returned no object", definite: true };
  const out: HttpHeaders = {};
  for (const [name, value] of Object.entries(got as Record<string, unknown>)) {
    // Names only in reasons: values may be credentials.
    if (!isHeaderName(name) || !isHeaderValue(value)) return { ok: false, problem: `the headers function returned an invalid header ${JSON.stringify(oneLine(name, 60))}`, definite: true };
    out[name.toLowerCase()] = value;
  }
  return { ok: true, headers: out };
}

/** Builds the request. Anything wrong here is decided before a byte is sent. */
async function build(o: ResolvedHttpOptions, op: ResolvedHttpOperation, ctx: ConnectorContext, where: string): Promise<Built> {
  const fixedMask = secretMasker([...Object.values(typeof o.headers === "function" ? {} : o.headers), ...Object.values(op.headers)]);
  const path = fillPath(op, ctx.input);
  if (!path.ok) return { ok: false, reply: { outcome: "permanent_failure", reason: `${where}: the input has no string, number or boolean field \`${path.missing}\` for the path` } };
  let body: string | undefined;
  if (op.body !== undefined) {
    try {
      const value = op.body(ctx.input);
      body = value === undefined ? undefined : JSON.stringify(value);
    } catch (e) {
      return { ok: false, reply: { outcome: "permanent_failure", reason: fixedMask(`${where}: building the body failed: ${errorMessage(e)}`) } };
    }
  }
  const dynamic = await connectorHeaders(o);
  if (!dynamic.ok) return { ok: false, reply: { outcome: dynamic.definite ? "permanent_failure" : "transient_failure", reason: fixedMask(`${where}: nothing sent: ${dynamic.problem}`) } };
  const mask = typeof o.headers === "function" ? secretMasker([...Object.values(dynamic.headers), ...Object.values(op.headers)]) : fixedMask;
  const headers: HttpCall["headers"] = { accept: "application/json", ...dynamic.headers, ...op.headers };
  if (body !== undefined) headers["content-type"] ??= "application/json";
  // Set last: the step key is the provider's dedupe key and nothing may replace it.
  headers[o.idempotencyHeader.toLowerCase()] = ctx.idempotencyKey;
  return { ok: true, call: { url: new URL(o.baseUrl + path.path), method: op.method, headers, body }, mask };
}

function describeRefPlace(op: ResolvedHttpOperation): string {
  const places: string[] = [];
  if (op.ref.header !== undefined) places.push(`header ${op.ref.header}`);
  if (op.ref.field !== undefined) places.push(`body field ${op.ref.field}`);
  return places.join(" or ");
}

/** Reads a response by the status table (with the operation's overrides). */
function readResponse(o: ResolvedHttpOptions, op: ResolvedHttpOperation, res: HttpResponse, where: string): ConnectorReply {
  const outcome = op.outcomes.get(res.status) ?? defaultStatusOutcome(res.status);
  const statusText = oneLine(res.statusText, 60);
  const label = `HTTP ${res.status}${statusText ? ` ${statusText}` : ""} from ${where}`;
  if (outcome === "success" || outcome === "accepted") {
    if (!res.body.ok) return { outcome: "ambiguous", reason: `${label}, but the response body could not be read (${res.body.problem}): the provider acted but its answer is incomplete` };
    const parsed = parseJsonBody(res.header("content-type"), res.body.text);
    if (!parsed.ok) return { outcome: "ambiguous", reason: `${label}, but its JSON body does not parse: the provider acted but its answer cannot be read` };
    const fromHeader = op.ref.header === undefined ? undefined : refText(res.header(op.ref.header));
    const ref = fromHeader ?? (op.ref.fieldPath === undefined ? undefined : refText(valueAt(parsed.value, op.ref.fieldPath)));
    if (ref === undefined) return { outcome: "ambiguous", reason: `${label} carries no external reference at ${describeRefPlace(op)}: the effect happened but cannot be named` };
    if (outcome === "accepted") return { outcome: "accepted", externalRef: ref };
    return parsed.value === undefined ? { outcome: "success", externalRef: ref } : { outcome: "success", externalRef: ref, output: parsed.value };
  }
  let reason = label;
  if (outcome === "transient_failure") {
    const retryAfter = res.header("retry-after");
    if (retryAfter !== undefined) reason += ` (Retry-After: ${oneLine(retryAfter, 40)})`;
  }
  if (outcome === "ambiguous") reason += ": the request was sent and the provider may have acted";
  if (o.errorBodyInReason && res.body.ok && res.body.text.trim().length > 0) reason += `: ${oneLine(res.body.text, EXCERPT)}`;
  return { outcome, reason };
}

async function callOperation(o: ResolvedHttpOptions, op: ResolvedHttpOperation, transport: HttpTransport, ctx: ConnectorContext): Promise<ConnectorReply> {
  const where = `${op.method} ${op.path} (operation ${op.name})`;
  const built = await build(o, op, ctx, where);
  if (!built.ok) return built.reply;
  const { call, mask } = built;
  const budget = budgetMs(o.clock, ctx.deadline, op.timeoutMs);
  if (ctx.signal.aborted) return { outcome: "transient_failure", reason: `${where}: the request was not sent (the step was aborted)` };
  if (!(budget > 0)) return { outcome: "transient_failure", reason: `${where}: the request was not sent (the step deadline has passed)` };
  const controller = new AbortController();
  let stop: "timeout" | "aborted" | undefined;
  const onAbort = (): void => {
    stop ??= "aborted";
    controller.abort();
  };
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  const cancelTimer = o.clock.setTimer(budget, () => {
    stop ??= "timeout";
    controller.abort();
  });
  let exchange;
  try {
    exchange = await transport(call, controller.signal, o.maxResponseBytes);
  } finally {
    cancelTimer();
    ctx.signal.removeEventListener("abort", onAbort);
  }
  const why = stop === "timeout" ? `no complete answer within ${Math.round(budget)} ms` : stop === "aborted" ? "the step was aborted" : undefined;
  if (exchange.kind === "failed") {
    const problem = why ?? exchange.problem;
    return exchange.sent
      ? { outcome: "ambiguous", reason: mask(`${where}: the request was sent, then failed (${problem}): the provider may have acted`) }
      : { outcome: "transient_failure", reason: mask(`${where}: the request was not sent (${problem})`) };
  }
  const res = exchange.response;
  const body = !res.body.ok && why !== undefined ? { ok: false as const, problem: why } : res.body;
  const reply = readResponse(o, op, { ...res, body }, where);
  return "reason" in reply ? { ...reply, reason: mask(reply.reason) } : reply;
}

/**
 * A connector whose operations are REST calls on one provider.
 *
 * Every call sends the step idempotency key as `Idempotency-Key`, so a provider that dedupes on it
 * applies a retried step once. Replies follow the status table in docs/connectors.md; a network
 * failure is `transient_failure` when the request provably never left and `ambiguous` when it may
 * have reached the provider (a timeout or a reset after sending). Header values are secrets: they
 * never appear in reasons.
 *
 * @example
 * const payments = httpConnector({
 *   id: "payments",
 *   baseUrl: "https://api.example.com/v1",
 *   headers: { authorization: `Bearer ${process.env.PAYMENTS_TOKEN}` },
 *   operations: {
 *     refund: { method: "POST", path: "/charges/{chargeId}/refunds", externalRef: { field: "/id" } },
 *   },
 * });
 */
export function httpConnector(options: HttpConnectorOptions): Connector {
  const o = resolveHttpOptions(options);
  const transport = o.fetch === undefined ? nodeTransport : fetchTransport(o.fetch);
  const operations: Connector["operations"] = {};
  for (const op of o.operations) operations[op.name] = (ctx) => callOperation(o, op, transport, ctx);
  return defineConnector({ id: o.id, operations });
}
