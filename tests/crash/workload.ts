/**
 * The crash tests' workload, shared by the child process (which runs it) and the test (which
 * checks what survived). Everything about a request follows from its idempotency key, so that a
 * later child can re-execute a key an earlier, killed child used (same request, same digest) and
 * the test can say what that re-execution must answer.
 *
 * Key format: `r<run>-c<caller>-n<n>-<steps><mode>`, e.g. `r0-c3-n17-2flaky`.
 */
import { z } from "zod";
import { defineAction } from "../../src/index.js";
import type { ActionRequest, AttemptState, IdempotencyState, Scope, StepStatus } from "../../src/core/types.js";

/** What the connector answers for the step a mode governs (the last step of the action). */
export const MODES = ["ok", "fail", "ambiguous", "accept", "flaky"] as const;
export type Mode = (typeof MODES)[number];

export const ONE_STEP = "crash.one";
export const TWO_STEP = "crash.two";
export const CRASH_ACTOR = { type: "agent", id: "crash-bot" } as const;
export const CRASH_AUTHORITY = "crash-authority";
export const CRASH_POLICY = "crash-policy:v1";

/**
 * Four scopes (a caller's key picks one), so that every check, journal chains above all, runs per
 * scope, and so that PostgreSQL, which serialises a scope's journal appends, runs several at once.
 */
export const CRASH_SCOPES: readonly Scope[] = [0, 1, 2, 3].map((i) => ({ tenantId: "crash", spaceId: `space-${i}` }));

export interface KeyParts {
  run: number;
  caller: number;
  n: number;
  steps: 1 | 2;
  mode: Mode;
}

export function keyOf(p: KeyParts): string {
  return `r${p.run}-c${p.caller}-n${p.n}-${p.steps}${p.mode}`;
}

const KEY_RE = /^r(\d+)-c(\d+)-n(\d+)-([12])(ok|fail|ambiguous|accept|flaky)$/;

export function parseKey(key: string): KeyParts {
  const m = KEY_RE.exec(key);
  if (!m) throw new Error(`not a crash-test idempotency key: ${key}`);
  return { run: Number(m[1]), caller: Number(m[2]), n: Number(m[3]), steps: m[4] === "1" ? 1 : 2, mode: m[5] as Mode };
}

export function scopeOfKey(key: string): Scope {
  return CRASH_SCOPES[parseKey(key).caller % CRASH_SCOPES.length]!;
}

/** The one request a key stands for. */
export function requestOf(key: string): ActionRequest {
  const p = parseKey(key);
  return {
    ...scopeOfKey(key),
    action: p.steps === 1 ? ONE_STEP : TWO_STEP,
    actionVersion: "1",
    actor: { ...CRASH_ACTOR },
    authorityRef: CRASH_AUTHORITY,
    params: { mode: p.mode, run: p.run, caller: p.caller, n: p.n },
    idempotencyKey: key,
  };
}

export { prng } from "../helpers/seed.js";

/** Picks the shape of a fresh execution: mostly successes, some of every other outcome. */
export function pickShape(rand: () => number): { steps: 1 | 2; mode: Mode } {
  const steps = rand() < 0.5 ? 1 : 2;
  const r = rand();
  const mode: Mode = r < 0.6 ? "ok" : r < 0.72 ? "flaky" : r < 0.82 ? "fail" : r < 0.91 ? "ambiguous" : "accept";
  return { steps, mode };
}

/** One line the child writes after `execute()` resolved: the execution it reports committed. */
export interface Report {
  attemptId: string;
  idempotencyKey: string;
  state: AttemptState;
  reasonCode?: string;
  decisionId: string;
  stepIndex?: number;
  originalAttemptId?: string;
  /** A key handed over by the test from an earlier (killed) child. */
  revisit?: boolean;
}

/** Attempt states that went through consumption (a decision consumed, the key marked). */
export const EXECUTED_STATES: readonly AttemptState[] = ["EXECUTING", "SUCCEEDED", "FAILED", "TIMED_OUT", "UNKNOWN", "HANDED_OFF"];

/** The idempotency state an execution leaves (or holds, while EXECUTING). */
export const IDEM_STATE_OF: Partial<Record<AttemptState, IdempotencyState>> = {
  EXECUTING: "in_progress",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  TIMED_OUT: "unknown",
  UNKNOWN: "unknown",
  HANDED_OFF: "handed_off",
};

/** The status of the step that ended a settled attempt. */
export const STEP_STATUS_OF: Partial<Record<AttemptState, StepStatus>> = {
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  TIMED_OUT: "unknown",
  UNKNOWN: "unknown",
  HANDED_OFF: "handed_off",
};

const params = z.object({ mode: z.enum(MODES), run: z.number(), caller: z.number(), n: z.number() });
/** The two actions every crash child registers: one step, and two steps on connector `crash`. */
export const CRASH_ACTIONS = [
  defineAction({ id: ONE_STEP, version: "1", params, idempotent: true, steps: [{ name: "only", connector: "crash", operation: "last" }] }),
  defineAction({
    id: TWO_STEP,
    version: "1",
    params,
    idempotent: true,
    steps: [
      { name: "prepare", connector: "crash", operation: "first" },
      { name: "commit", connector: "crash", operation: "last" },
    ],
  }),
];
