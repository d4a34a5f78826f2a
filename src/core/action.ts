/** Action and connector definitions (docs/concepts.md). */
import type { RedactHook } from "./redact.js";
import { WritError } from "./errors.js";
import type { StandardSchemaV1 } from "./standard-schema.js";
import type { ActionRequest, Json } from "./types.js";

/** Where a step's input comes from: the params and the outputs of earlier steps (by step name). */
export interface StepInputContext<P> {
  params: P;
  outputs: { [stepName: string]: Json };
}

export interface StepDefinition<P = unknown> {
  /** Unique within the action; names the step's output. */
  name: string;
  /** Registered connector id (never guessed from names). */
  connector: string;
  operation: string;
  /** Builds the connector input; defaults to the params. Must be deterministic. */
  input?: (ctx: StepInputContext<P>) => Json;
  /** Undo for this step, run in reverse order when a later step fails permanently. */
  compensate?: { connector: string; operation: string; input?: (ctx: StepInputContext<P> & { output: Json }) => Json };
}

export interface RetryPolicy {
  /** Attempts in all, the first included. @defaultValue 3 */
  maxAttempts: number;
  /** @defaultValue 1000 */
  baseDelayMs: number;
  /** @defaultValue 60000 */
  maxDelayMs: number;
}

export interface ActionDefinition<P = unknown> {
  id: string;
  version: string;
  /** Any Standard Schema (zod, valibot, arktype). */
  params: StandardSchemaV1<unknown, P>;
  /** True when repeating the action's effects with the same step keys is safe. */
  idempotent: boolean;
  steps: StepDefinition<P>[];
  completion?: { deadlineMs: number };
  retry?: Partial<RetryPolicy>;
  /** JSON pointers into `{ params, outputs }` whose values are redacted, e.g. `/params/card`. */
  sensitive?: string[];
  /** A short human title (the MCP tool title). */
  title?: string;
  /** What the action does, for people and agents (the MCP tool description). At most 4000 characters. */
  description?: string;
  /** True when the action changes nothing outside (the MCP `readOnlyHint`). @defaultValue false */
  readOnly?: boolean;
  /** True when the action may destroy or irreversibly change something (the MCP `destructiveHint`). @defaultValue true unless readOnly */
  destructive?: boolean;
  /** True when the action reaches systems outside the operator's own (the MCP `openWorldHint`). @defaultValue true */
  openWorld?: boolean;
  /**
   * A function redaction hook applied after `sensitive` (journal, events, API answers): receives the
   * params (or the outputs by step name) and returns what may be recorded. A throw withholds it all.
   */
  redact?: RedactHook;
}

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/**
 * Defines an action. Validated at definition time: ids, unique step names, at least one step.
 * @example
 * defineAction({ id: "payments.refund", version: "1", params: z.object({ amount: z.number() }),
 *   idempotent: true, steps: [{ name: "refund", connector: "stripe", operation: "refund" }] })
 */
export function defineAction<P>(def: ActionDefinition<P>): ActionDefinition<P> {
  const where = `action ${String(def?.id)}`;
  if (typeof def !== "object" || def === null) throw new WritError("INVALID_OPTION", "defineAction needs an object");
  if (typeof def.id !== "string" || !ID_RE.test(def.id)) throw new WritError("INVALID_OPTION", `${where}: id must match ${ID_RE.source}`);
  if (typeof def.version !== "string" || def.version.length === 0) throw new WritError("INVALID_OPTION", `${where}: version must be a non-empty string`);
  if (typeof def.params?.["~standard"]?.validate !== "function") throw new WritError("INVALID_OPTION", `${where}: params must be a Standard Schema`);
  if (typeof def.idempotent !== "boolean") throw new WritError("INVALID_OPTION", `${where}: idempotent must be true or false`);
  if (!Array.isArray(def.steps) || def.steps.length === 0) throw new WritError("INVALID_OPTION", `${where}: steps must be a non-empty array`);
  const names = new Set<string>();
  for (const s of def.steps) {
    if (typeof s.name !== "string" || !ID_RE.test(s.name)) throw new WritError("INVALID_OPTION", `${where}: step name must match ${ID_RE.source}`);
    if (names.has(s.name)) throw new WritError("INVALID_OPTION", `${where}: duplicate step name ${s.name}`);
    names.add(s.name);
    if (typeof s.connector !== "string" || s.connector.length === 0) throw new WritError("INVALID_OPTION", `${where}: step ${s.name} needs a connector id`);
    if (typeof s.operation !== "string" || s.operation.length === 0) throw new WritError("INVALID_OPTION", `${where}: step ${s.name} needs an operation`);
  }
  if (def.completion !== undefined && !(Number.isFinite(def.completion.deadlineMs) && def.completion.deadlineMs > 0)) {
    throw new WritError("INVALID_OPTION", `${where}: completion.deadlineMs must be a positive number`);
  }
  for (const k of ["title", "description"] as const) {
    const v = def[k];
    if (v !== undefined && (typeof v !== "string" || v.length > (k === "title" ? 200 : 4000))) throw new WritError("INVALID_OPTION", `${where}: ${k} must be a string of at most ${k === "title" ? 200 : 4000} characters`);
  }
  for (const k of ["readOnly", "destructive", "openWorld"] as const) {
    if (def[k] !== undefined && typeof def[k] !== "boolean") throw new WritError("INVALID_OPTION", `${where}: ${k} must be true or false`);
  }
  if (def.readOnly === true && def.destructive === true) throw new WritError("INVALID_OPTION", `${where}: an action cannot be both readOnly and destructive`);
  if (def.redact !== undefined && typeof def.redact !== "function") throw new WritError("INVALID_OPTION", `${where}: redact must be a function (value, context) => value`);
  for (const p of def.sensitive ?? []) {
    if (typeof p !== "string" || !/^\/(params|outputs)(\/|$)/.test(p)) throw new WritError("INVALID_OPTION", `${where}: sensitive pointer ${String(p)} must start with /params or /outputs`);
  }
  return def;
}

/** A connector reply (docs/connectors.md, The reply contract). */
export type ConnectorReply =
  | { outcome: "success"; externalRef: string; output?: Json }
  | { outcome: "permanent_failure"; reason: string }
  | { outcome: "transient_failure"; reason: string }
  | { outcome: "timeout" }
  | { outcome: "ambiguous"; reason: string }
  | { outcome: "accepted"; externalRef: string };

export interface ConnectorContext {
  request: ActionRequest;
  operation: string;
  input: Json;
  /** Stable across retries and recovery of this step: send it to the provider as its dedupe key. */
  idempotencyKey: string;
  /** Fires when the boundary gives up waiting (timeout) or the host stops. */
  signal: AbortSignal;
  /** Epoch ms by which the reply must arrive. */
  deadline: number;
  attemptId: string;
  decisionId: string;
  invocationId: string;
  step: { index: number; name: string };
}

export type ConnectorOperation = (ctx: ConnectorContext) => Promise<ConnectorReply> | ConnectorReply;

export interface Connector {
  id: string;
  operations: { [operation: string]: ConnectorOperation };
}

/** Defines a connector: a registered identity and its operations. Connectors make no authorization decisions. */
export function defineConnector(def: Connector): Connector {
  if (typeof def !== "object" || def === null) throw new WritError("INVALID_OPTION", "defineConnector needs an object");
  if (typeof def.id !== "string" || !ID_RE.test(def.id)) throw new WritError("INVALID_OPTION", `connector id must match ${ID_RE.source}`);
  if (typeof def.operations !== "object" || def.operations === null) throw new WritError("INVALID_OPTION", `connector ${def.id}: operations must be an object`);
  for (const [name, fn] of Object.entries(def.operations)) {
    if (typeof fn !== "function") throw new WritError("INVALID_OPTION", `connector ${def.id}: operation ${name} must be a function`);
  }
  return def;
}
