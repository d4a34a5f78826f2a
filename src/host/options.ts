/** Host options: one typed object, defaults in one place, validated at construction. */
import { inProgressTimeoutOf } from "../core/boundary.js";
import type { NotificationOptions } from "./notify-options.js";
import type { ArchiveHostOptions } from "../core/archive-options.js";
import { MAX_TIMER_MS } from "../core/validate.js";
import type { DataKeyPort } from "../core/sealing.js";
import type { ActionDefinition, Connector, RetryPolicy } from "../core/action.js";
import { WritError } from "../core/errors.js";
import { checkSealWithinMs } from "../core/sequencer.js";
import { resolveRetention, type RetentionOptions, type RetentionSettings } from "../core/retention.js";
import type { Keyring, SigningKey } from "../core/keyring.js";
import type { PolicyEngine } from "../core/policy.js";
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import type { ErrorTextContext } from "../core/redact.js";
import type { Store } from "../core/store.js";
import type { HostEvent } from "./events.js";
import type { CompletionSecret } from "./completions.js";

/** A pino-compatible logger (the subset Writ calls). */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface BreakerOptions {
  /** Consecutive transient failures or timeouts that open the breaker: an integer >= 1. @defaultValue 5 */
  failureThreshold: number;
  /** How long an open breaker refuses calls before letting one through: an integer number of ms, 1 to 2147483647. @defaultValue 30000 */
  cooldownMs: number;
  /**
   * How long the one probe of a half-open breaker holds its slot without an outcome (its worker
   * died) before another call may probe: an integer number of ms, at least `timeoutMs` (a live
   * probe's call may last that long). @defaultValue timeoutMs + 10000
   */
  probeTimeoutMs: number;
}

export interface HostOptions {
  /**
   * Seals the params and step outputs an action marks `sensitive` before they are stored (see
   * `sealedStore`). `openRuntime` passes a local key file (`<keys dir>/data-key.json`).
   * @defaultValue none: then an action that marks values `sensitive` is refused at `createHost`
   * unless `allowCleartextSensitive` is true
   */
  dataKey?: DataKeyPort;
  /**
   * Without a `dataKey`, store the values actions mark `sensitive` in clear (still redacted in the
   * journal, events and answers). Meant for tests and throwaway stores (docs/security.md).
   * @defaultValue false: `createHost` refuses a sensitive action without a data key
   */
  allowCleartextSensitive?: boolean;
  store: Store;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  actions: ReadonlyArray<ActionDefinition<any>>;
  connectors: readonly Connector[];
  policy: PolicyEngine;
  /** The host signs the decisions it evaluates with this key. */
  signingKey: SigningKey;
  /** Keys the boundary trusts. @defaultValue a keyring holding `signingKey` */
  keyring?: Keyring;
  clock: Clock;
  crypto: CryptoPort;
  random: Random;
  /** Per connector call. @defaultValue 30000 */
  timeoutMs?: number;
  /**
   * The boundary's bound on a bare execution left `in_progress` by a crash (docs/boundary.md,
   * "Interrupted executions"): an integer from `timeoutMs` to 2147483647.
   * @defaultValue max(900000, 10 × timeoutMs)
   */
  inProgressTimeoutMs?: number;
  /** @defaultValue 300 */
  maxDecisionAgeSeconds?: number;
  /**
   * Worker claims of one invocation (its whole life, docs/host.md "What counts as an attempt")
   * after which the next claim sends it to reconciliation instead of running it. A positive
   * integer, at least every retry cap in force (`retry.maxAttempts` and each action's own), since
   * retries count the same claims. @defaultValue max(5, the largest of those retry caps)
   */
  recoveryMaxAttempts?: number;
  /** Defaults for actions without their own retry policy. @defaultValue { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 60000 } */
  retry?: Partial<RetryPolicy>;
  /** @defaultValue { failureThreshold: 5, cooldownMs: 30000 } */
  breaker?: Partial<BreakerOptions>;
  /** How long an approval request stays open. @defaultValue 86400000 (24 h) */
  approvalTtlMs?: number;
  /** Filters error text at its origin; `context` says where it came from (action, step, connector, operation). */
  redactErrorText?: (text: string, context: ErrorTextContext) => string;
  /** Called for every transition; must not throw (errors are swallowed). */
  onEvent?: (event: HostEvent) => void;
  /** @defaultValue a silent logger */
  logger?: Logger;
  /** Secrets that sign completion callbacks, per scope and connector (docs/completions.md). */
  completionSecrets?: CompletionSecret[];
  /**
   * How long an early completion whose reference never matched a parked step is kept as `early`
   * (listed for operators, applied if the step parks) before the sweep expires it, journaled
   * (docs/completions.md, Retention). An integer number of ms, at least 1. @defaultValue 604800000 (7 days)
   */
  earlyCompletionRetentionMs?: number;
  /** How often a worker runs the sweeps (overdue handoffs, expired approvals, early completions). @defaultValue 1000 */
  sweepMs?: number;
  /**
   * The bound between a transition's commit and the seal of its journal entries (docs/journal.md):
   * a started worker's sequencer polls every quarter of it; `journal verify` reports an entry
   * unsealed for longer. An integer from 1 to 60000. @defaultValue 250
   */
  sealWithinMs?: number;
  /** Notification delivery (docs/notifications.md): console links, retries, dead letters. */
  notifications?: NotificationOptions;
  /**
   * How long ended work stays and how the background pruner paces itself (docs/retention.md).
   * @defaultValue every period 30 days, the replay window as long as `invocationsMs`, batches of
   * 100 with a 100 ms pause, a run every minute in started workers
   */
  retention?: RetentionOptions;
  /** Journal archiving (docs/archives.md): the target, and a started worker's pace. Off without a target. */
  archive?: ArchiveHostOptions;
}

export interface ResolvedHostOptions {
  timeoutMs: number;
  inProgressTimeoutMs: number;
  maxDecisionAgeSeconds: number;
  recoveryMaxAttempts: number;
  retry: RetryPolicy;
  breaker: BreakerOptions;
  approvalTtlMs: number;
  earlyCompletionRetentionMs: number;
  sweepMs: number;
  sealWithinMs: number;
  retention: RetentionSettings;
}

function num(name: string, v: unknown, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
    throw new WritError("INVALID_OPTION", `createHost: ${name} must be a number >= ${min}${max < Number.MAX_SAFE_INTEGER ? ` and <= ${max} (what a timer can hold)` : ""}`);
  }
  return v;
}

/**
 * `recoveryMaxAttempts` (docs/host.md, "What counts as an attempt"): a positive integer, never
 * below a retry cap (both count the same claims; a lower one would end retries as exhausted
 * recovery); by default max(5, the largest retry cap).
 */
function recoveryBudget(o: HostOptions, hostRetryMax: number): number {
  let cap = hostRetryMax;
  let capName = "retry.maxAttempts";
  for (const a of o.actions ?? []) {
    const m = a.retry?.maxAttempts;
    if (typeof m === "number" && Number.isFinite(m) && m > cap) {
      cap = m;
      capName = `the retry.maxAttempts of action ${a.id}`;
    }
  }
  const v = o.recoveryMaxAttempts;
  if (v === undefined) return Math.max(5, cap);
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw new WritError("INVALID_OPTION", `createHost: recoveryMaxAttempts must be a positive integer (got ${typeof v === "number" ? String(v) : typeof v})`);
  }
  if (v < cap) {
    throw new WritError("INVALID_OPTION", `createHost: recoveryMaxAttempts (${v}) must be at least ${capName} (${cap}): both count the same worker claims`);
  }
  return v;
}

/**
 * The longest a host keeps retrying one invocation: its attempts times the longest backoff, the
 * largest over the host's retry policy and each action's own (the replay window's floor).
 */
function retryHorizon(o: HostOptions, hostMax: number, hostMaxDelayMs: number): number {
  let h = hostMax * hostMaxDelayMs;
  for (const a of o.actions ?? []) {
    const m = a.retry?.maxAttempts ?? hostMax;
    const d = a.retry?.maxDelayMs ?? hostMaxDelayMs;
    if (typeof m === "number" && typeof d === "number" && Number.isFinite(m * d)) h = Math.max(h, m * d);
  }
  return h;
}

function integerMs(name: string, v: unknown, dflt: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) throw new WritError("INVALID_OPTION", `createHost: ${name} must be a whole number of milliseconds >= 1`);
  return v;
}

export function resolveHostOptions(o: HostOptions): ResolvedHostOptions {
  if (typeof o !== "object" || o === null) throw new WritError("INVALID_OPTION", "createHost needs an options object");
  for (const k of ["store", "policy", "signingKey", "clock", "crypto", "random"] as const) {
    if (o[k] === undefined || o[k] === null) throw new WritError("INVALID_OPTION", `createHost: ${k} is required`);
  }
  if (typeof o.policy.evaluate !== "function" || typeof o.policy.acceptedPolicyRefs !== "function") {
    throw new WritError("INVALID_OPTION", "createHost: policy must be a PolicyEngine with evaluate() and acceptedPolicyRefs()");
  }
  const retryMax = num("retry.maxAttempts", o.retry?.maxAttempts, 3, 1);
  const timeoutMs = num("timeoutMs", o.timeoutMs, 30_000, 1, MAX_TIMER_MS);
  const retryMaxDelayMs = num("retry.maxDelayMs", o.retry?.maxDelayMs, 60_000, 0, MAX_TIMER_MS);
  const approvalTtlMs = num("approvalTtlMs", o.approvalTtlMs, 86_400_000, 1);
  return {
    timeoutMs,
    inProgressTimeoutMs: inProgressTimeoutOf("createHost", o.inProgressTimeoutMs, timeoutMs),
    maxDecisionAgeSeconds: num("maxDecisionAgeSeconds", o.maxDecisionAgeSeconds, 300, 1),
    recoveryMaxAttempts: recoveryBudget(o, retryMax),
    retry: {
      maxAttempts: retryMax,
      baseDelayMs: num("retry.baseDelayMs", o.retry?.baseDelayMs, 1000, 0, MAX_TIMER_MS),
      maxDelayMs: retryMaxDelayMs,
    },
    breaker: breakerOptions(o.breaker, timeoutMs),
    approvalTtlMs,
    earlyCompletionRetentionMs: integerMs("earlyCompletionRetentionMs", o.earlyCompletionRetentionMs, 604_800_000),
    sweepMs: num("sweepMs", o.sweepMs, 1000, 1, MAX_TIMER_MS),
    sealWithinMs: checkSealWithinMs("createHost", o.sealWithinMs),
    retention: resolveRetention(o.retention, { approvalTtlMs, retryHorizonMs: retryHorizon(o, retryMax, retryMaxDelayMs) }, "createHost: "),
  };
}

/** The breaker options, validated (docs/host.md, "Circuit breakers"). */
function breakerOptions(b: Partial<BreakerOptions> | undefined, timeoutMs: number): BreakerOptions {
  if (b !== undefined && (typeof b !== "object" || b === null)) throw new WritError("INVALID_OPTION", "createHost: breaker must be an object { failureThreshold?, cooldownMs?, probeTimeoutMs? }");
  const int = (name: keyof BreakerOptions, dflt: number, min: number, max: number): number => {
    const v = num(`breaker.${name}`, b?.[name], dflt, min, max);
    if (!Number.isInteger(v)) throw new WritError("INVALID_OPTION", `createHost: breaker.${name} must be an integer (got ${v})`);
    return v;
  };
  const failureThreshold = int("failureThreshold", 5, 1, Number.MAX_SAFE_INTEGER);
  const cooldownMs = int("cooldownMs", 30_000, 1, MAX_TIMER_MS);
  const probeTimeoutMs = int("probeTimeoutMs", Math.min(timeoutMs + 10_000, MAX_TIMER_MS), 1, MAX_TIMER_MS);
  if (probeTimeoutMs < timeoutMs) {
    throw new WritError("INVALID_OPTION", `createHost: breaker.probeTimeoutMs (${probeTimeoutMs}) must be at least timeoutMs (${timeoutMs}): a live probe's call may last that long`);
  }
  return { failureThreshold, cooldownMs, probeTimeoutMs };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
