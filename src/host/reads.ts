/**
 * Reading invocations the way the host answers for them: the rows as stored, then each action's
 * redaction applied, which replaces every value sealed at rest (docs/security.md, "A value this
 * process cannot open"). The host answers `get` and `list` with these; so does the CLI's read-only
 * path (`writ ls`), which never loads the rest of the host.
 */
import type { ActionDefinition } from "../core/action.js";
import { redactFor } from "../core/redact.js";
import { innerStore, sealedStore, type DataKeyPort, type SensitiveMap } from "../core/sealing.js";
import { readCommitted, type InvocationFilter, type Store } from "../core/store.js";
import type { IdempotencyRecord, Invocation, Scope } from "../core/types.js";

/** Which params of each action are sealed at rest, and each action's step names. */
export function sensitiveMap(actions: ReadonlyArray<ActionDefinition<unknown>>): SensitiveMap {
  const m = new Map<string, readonly string[]>();
  const steps = new Map<string, readonly string[]>();
  for (const a of actions) {
    if (a.sensitive && a.sensitive.length > 0) m.set(a.id, a.sensitive);
    steps.set(a.id, a.steps.map((s) => s.name));
  }
  return { get: (id) => m.get(id), stepNames: (id) => steps.get(id), empty: m.size === 0 };
}

/** `store` as the host sees it: behind the data key when there is one. */
export function readableStore(store: Store, dataKey: DataKeyPort | undefined, actions: ReadonlyArray<ActionDefinition<unknown>>): Store {
  return dataKey ? sealedStore(store, dataKey, sensitiveMap(actions)) : store;
}

/** `inv` with its action's sensitive params redacted (`result` is stored redacted already). */
export function redactInvocation(action: ActionDefinition<unknown> | undefined, inv: Invocation): Invocation {
  const sensitive = action?.sensitive ?? [];
  if (sensitive.length === 0 && action?.redact === undefined) return inv;
  const params = (redactFor(action, { params: inv.request.params }, "params") as { params: Invocation["request"]["params"] }).params;
  return { ...inv, request: { ...inv.request, params } };
}

export interface InvocationReads {
  get(scope: Scope, invocationId: string): Promise<Invocation | null>;
  list(scope: Scope, filter?: InvocationFilter): Promise<Invocation[]>;
}

/**
 * Committed reads of invocations, redacted per action; `store` is a {@link readableStore}. They read
 * beneath the sealing layer: every sealed value sits at a sensitive pointer, which the redaction
 * replaces, so the answer is the same as with the values opened, costs no decryption, and an
 * invocation this process cannot open (sealed under a key it does not hold) is still answered,
 * redacted (docs/security.md, "A value this process cannot open").
 */
export function invocationReads(store: Store, actions: ReadonlyMap<string, ActionDefinition<unknown>>): InvocationReads {
  const stored = innerStore(store);
  const redact = (inv: Invocation): Invocation => redactInvocation(actions.get(inv.action), inv);
  return {
    async get(scope, invocationId) {
      const inv = await readCommitted(stored, (tx) => tx.getInvocation(scope, invocationId));
      return inv ? redact(inv) : null;
    },
    async list(scope, filter) {
      return (await readCommitted(stored, (tx) => tx.listInvocations(scope, filter))).map(redact);
    },
  };
}

/** What an operator sees of a key left unknown (the HTTP queue and `writ reconcile ls` show the same). */
export interface UnknownKeyView {
  action: string;
  idempotencyKey: string;
  attemptId: string;
  requestDigest: string;
  updatedAt: number;
}

export function unknownKeyView(k: IdempotencyRecord): UnknownKeyView {
  return { action: k.action, idempotencyKey: k.idempotencyKey, attemptId: k.attemptId, requestDigest: k.requestDigest, updatedAt: k.updatedAt };
}
