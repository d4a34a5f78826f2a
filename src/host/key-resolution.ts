/**
 * An operator settles a key a bare boundary execution left with an unknown outcome (interrupted
 * and expired, or a timeout / ambiguous reply): docs/boundary.md, "Interrupted executions", and
 * docs/runbooks.md, "A stuck idempotency key". One transaction with its journal entry. A key an
 * invocation of the host holds is resolved through its reconciliation instead.
 */
import { WritError } from "../core/errors.js";
import { appendJournal, draft } from "../core/journal.js";
import type { Actor, AttemptRecord, IdempotencyRecord, Scope, StepCheckpoint } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { retryStale, type HostContext } from "./context.js";

/** An operator's verdict on an unknown outcome (a reconciliation's or a key's). */
export interface ResolveInput {
  outcome: "succeeded" | "failed";
  externalRef?: string;
  note: string;
  by: Actor;
}

/** The key a resolution names: (action, idempotencyKey) in the scope. */
export interface KeyRef {
  action: string;
  idempotencyKey: string;
}

/** The key after its resolution, and the attempt whose outcome was unknown. */
export interface KeyResolution {
  idempotency: IdempotencyRecord;
  attempt: AttemptRecord | null;
}

/** The rules every resolution input follows (reconciliations and keys). */
export function checkResolveInput(input: unknown): asserts input is ResolveInput {
  if (typeof input !== "object" || input === null) throw new WritError("INVALID_ARGUMENT", "resolve needs { outcome, note, by }");
  const i = input as Partial<ResolveInput>;
  if (i.outcome !== "succeeded" && i.outcome !== "failed") throw new WritError("INVALID_ARGUMENT", "outcome must be succeeded or failed");
  if (typeof i.note !== "string" || i.note.trim().length === 0 || i.note.length > 2000) throw new WritError("INVALID_ARGUMENT", "note must be a non-empty string (at most 2000 characters)");
  const problems = checkActor(i.by, "by");
  if (problems.length > 0) throw new WritError("INVALID_ARGUMENT", problems.join("; "));
  if (i.externalRef !== undefined && (typeof i.externalRef !== "string" || i.externalRef.length === 0 || i.externalRef.length > 512)) {
    throw new WritError("INVALID_ARGUMENT", "externalRef must be a non-empty string (at most 512 characters)");
  }
}

/** A step row as an operator's resolution settles it. */
export function resolvedStep(row: StepCheckpoint, input: ResolveInput, now: number): StepCheckpoint {
  return {
    ...row,
    status: input.outcome,
    endedAt: now,
    ...(input.externalRef !== undefined ? { externalRef: input.externalRef } : {}),
    reason: `resolved by ${input.by.type}:${input.by.id}: ${input.note}`,
  };
}

function checkKeyRef(key: unknown): asserts key is KeyRef {
  const k = key as Partial<KeyRef> | null;
  const ok = (v: unknown): boolean => typeof v === "string" && v.length > 0 && v.length <= 256;
  if (typeof k !== "object" || k === null || !ok(k.action) || !ok(k.idempotencyKey)) {
    throw new WritError("INVALID_ARGUMENT", "the key needs action and idempotencyKey, each a non-empty string of at most 256 characters");
  }
}

/**
 * Resolves an unknown key: `succeeded` (with the external reference replays return) on its last
 * step settles the key succeeded; `failed`, or `succeeded` on a middle step, settles it failed,
 * so a new decision can retry it (resuming after its succeeded steps).
 */
export async function resolveKey(ctx: HostContext, scope: Scope, key: KeyRef, input: ResolveInput): Promise<KeyResolution> {
  checkKeyRef(key);
  checkResolveInput(input);
  if (input.outcome === "succeeded" && input.externalRef === undefined) {
    throw new WritError("INVALID_ARGUMENT", "resolving a key as succeeded needs its externalRef (what a replay of the key returns)");
  }
  const { o } = ctx;
  return retryStale(() =>
    o.store.transact(async (tx): Promise<KeyResolution> => {
      await tx.lock(scope, [`idem:${key.action}:${key.idempotencyKey}`]);
      const idem = await tx.getIdempotency(scope, key.action, key.idempotencyKey);
      const named = `key ${key.action}/${key.idempotencyKey}`;
      if (!idem) throw new WritError("NOT_FOUND", `no ${named} in this scope`);
      if (await tx.getInvocation(scope, idem.invocationId)) {
        throw new WritError("INVALID_STATE", `${named} belongs to invocation ${idem.invocationId}: resolve that invocation's reconciliation`);
      }
      if (idem.state !== "unknown") {
        const why = idem.state === "in_progress" ? " (an execution may still be running; an interrupted one is reported unknown once inProgressTimeoutMs has passed and an execution is tried on the key)" : "";
        throw new WritError("INVALID_STATE", `${named} is ${idem.state}, not unknown${why}`);
      }
      const attempt = await tx.getAttempt(scope, idem.attemptId);
      const steps = await tx.getSteps(scope, idem.invocationId);
      const row = steps.filter((s) => s.attemptId === idem.attemptId && s.status === "unknown").sort((a, b) => b.stepIndex - a.stepIndex)[0];
      const action = ctx.actions.get(key.action);
      const stepIndex = row?.stepIndex ?? attempt?.stepIndex ?? 0;
      const last = action ? stepIndex >= action.steps.length - 1 : true;
      const now = o.clock.now();
      const by = { type: input.by.type, id: input.by.id };
      if (row) {
        await tx.putStep(scope, resolvedStep(row, input, now));
      }
      const state = input.outcome === "succeeded" && last ? "succeeded" : "failed";
      const next: IdempotencyRecord = { ...idem, state, updatedAt: now };
      if (state === "succeeded") next.resultAttemptId = idem.attemptId;
      else delete next.resultAttemptId;
      await tx.putIdempotency(scope, next);
      await appendJournal(tx, o.crypto, scope, [
        draft("key.resolved", [key.action, key.idempotencyKey, idem.attemptId], now, { attemptId: idem.attemptId, invocationId: idem.invocationId }, {
          action: key.action,
          idempotencyKey: key.idempotencyKey,
          outcome: input.outcome,
          keyState: state,
          note: input.note,
          by,
          stepIndex,
          ...(input.externalRef !== undefined ? { externalRef: input.externalRef } : {}),
        }),
      ]);
      return { idempotency: next, attempt };
    }),
  );
}
