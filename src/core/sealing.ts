/**
 * Sensitive values encrypted at rest (docs/security.md). Parameters and step outputs an action
 * marks `sensitive` are sealed with a data key before a store sees them, and opened when the host
 * reads them back: the SQLite file, the PostgreSQL tables and the memory store hold only sealed
 * envelopes `{ "$writ.sealed": "<opaque>" }` at those pointers. The key comes through the
 * {@link DataKeyPort}: a local key file by default (`localDataKey` in src/runtime), a KMS in
 * production through the same port (it unwraps the data key once; sealing stays local).
 * Each envelope is bound to its place (scope, invocation, pointer) as associated data, so one
 * cannot be moved to another record. Journal, events and API answers stay redacted as before.
 * Completion results (`host.complete`, webhooks) are sealed too: at the step's sensitive output
 * pointers once the completion names its invocation and step, and whole while it names none (an
 * early completion, kept until its step parks: which parts are sensitive is not known yet).
 */
import { outcomeOf, type BatchOutcome } from "./batch.js";
import { WritError, isWritError } from "./errors.js";
import { utf8 } from "./encoding.js";
import { mapAtPointers } from "./redact.js";
import type { Store, StoreTx } from "./store.js";
import { applyMember, genericTransitions, type AdmitInput, type AdmitResult, type BatchMember, type BeginResult, type Prepared, type StoreTransitions } from "./transitions.js";
import type { ActionRequest, CompletionRecord, Invocation, Json, StepCheckpoint } from "./types.js";

/** Seals and opens bytes under a data key; `context` is authenticated, not encrypted. */
export interface DataKeyPort {
  /** Id of the key that seals (recorded in the envelope; older keys still open). */
  readonly keyId: string;
  seal(plaintext: Uint8Array, context: Uint8Array): string;
  /** Throws when the envelope was altered, moved, or sealed under a key it does not hold. */
  open(sealed: string, context: Uint8Array): Uint8Array;
}

export const SEALED_FIELD = "$writ.sealed";

const INNER = Symbol("writ.sealedStore.inner");

/**
 * The store under a `sealedStore` (itself otherwise). Journal machinery keyed by store (the
 * sequencer) uses it, so the sealing layer and the plain store share one sequencer.
 */
export function innerStore(store: Store): Store {
  return ((store as unknown as { [INNER]?: Store })[INNER]) ?? store;
}

/**
 * Claimed invocations holding a sealed value this process could not open (sealed under a data key
 * it does not hold, or altered), with why: a claim answers them as stored instead of failing the
 * whole claim after it committed (which would strand every other invocation it claimed), and the
 * worker hands each back without running it (docs/security.md, "A value this process cannot open").
 */
const unopened = new WeakMap<Invocation, string>();

/** Why this claimed invocation's sealed values could not be opened here; undefined when they were (or it has none). */
export function unopenedReason(inv: Invocation): string | undefined {
  return unopened.get(inv);
}

/** Whether `e` says a sealed value could not be opened here (and nothing else). */
export function isUnopenedError(e: unknown): e is WritError {
  return isWritError(e, "INVALID_STATE") && (e.details as { unopened?: unknown } | undefined)?.unopened === true;
}

/** `open()`, or `stored` (what the store answered) with `inv` marked when a sealed value in it cannot be opened. */
function openClaimed<T>(inv: Invocation, open: () => T, stored: T): T {
  try {
    return open();
  } catch (e) {
    if (!isUnopenedError(e)) throw e;
    unopened.set(inv, e.message);
    return stored;
  }
}

function isSealed(v: Json): v is { [SEALED_FIELD]: string } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v)[SEALED_FIELD] === "string" && Object.keys(v).length === 1;
}

function context(inv: { tenantId: string; spaceId: string; invocationId: string }, pointer: string): Uint8Array {
  return utf8(JSON.stringify([inv.tenantId, inv.spaceId, inv.invocationId, pointer]));
}

/** Sensitive pointers of an action, split by where they apply. */
export interface SensitiveMap {
  get(action: string): readonly string[] | undefined;
  /**
   * True when no action marks anything sensitive: sealing then changes no invocation, step or
   * named completion, and the store's own transitions may run beneath the sealed store.
   */
  readonly empty?: boolean;
  /** The action's step names by index (to place a completion's result); absent: completions seal whole. */
  stepNames?(action: string): readonly string[] | undefined;
}

function sealAt(port: DataKeyPort, root: Json, pointers: readonly string[], where: { tenantId: string; spaceId: string; invocationId: string }, prefix: string): Json {
  return mapAtPointers(root, pointers, (v, ptr) => (isSealed(v) ? v : { [SEALED_FIELD]: port.seal(utf8(JSON.stringify(v)), context(where, prefix + ptr)) }));
}

function openAt(port: DataKeyPort, root: Json, pointers: readonly string[], where: { tenantId: string; spaceId: string; invocationId: string }, prefix: string): Json {
  return mapAtPointers(root, pointers, (v, ptr) => {
    if (!isSealed(v)) return v;
    try {
      return JSON.parse(new TextDecoder().decode(port.open(v[SEALED_FIELD], context(where, prefix + ptr)))) as Json;
    } catch {
      throw new WritError("INVALID_STATE", `a sealed value of invocation ${where.invocationId} could not be opened (altered, moved, or sealed under a key this process does not hold)`, { details: { unopened: true } });
    }
  });
}

/** Pointers under `/params/...`, relative to `{ params }`. */
function paramPointers(pointers: readonly string[]): string[] {
  return pointers.filter((p) => p.startsWith("/params/"));
}

/** Pointers under `/outputs/<step>/...`, relative to the step's output. */
function outputPointers(pointers: readonly string[], stepName: string): string[] {
  const prefix = `/outputs/${stepName.replace(/~/g, "~0").replace(/\//g, "~1")}`;
  return pointers.filter((p) => p === prefix || p.startsWith(prefix + "/")).map((p) => p.slice(prefix.length) || "");
}

function mapInvocation(inv: Invocation, pointers: readonly string[] | undefined, f: typeof sealAt, port: DataKeyPort): Invocation {
  const ptrs = paramPointers(pointers ?? []);
  if (ptrs.length === 0 || !inv.request) return inv;
  const params = f(port, { params: inv.request.params }, ptrs, inv, "") as { params: ActionRequest["params"] };
  return { ...inv, request: { ...inv.request, params: params.params } };
}

function mapStep(step: StepCheckpoint, action: string | undefined, sensitive: SensitiveMap, f: typeof sealAt, port: DataKeyPort): StepCheckpoint {
  if (step.output === undefined || action === undefined) return step;
  const ptrs = outputPointers(sensitive.get(action) ?? [], step.stepName);
  if (ptrs.length === 0) return step;
  const rel = ptrs.map((p) => (p === "" ? "/output" : `/output${p}`));
  const out = f(port, { output: step.output }, rel, step, `/outputs/${step.stepName}`) as { output: Json };
  return { ...step, output: out.output };
}

/** Where a completion's result is bound: its scope and, once known, invocation and step name. */
function completionWhere(c: CompletionRecord): { tenantId: string; spaceId: string; invocationId: string } {
  return { tenantId: c.tenantId, spaceId: c.spaceId, invocationId: c.invocationId ?? "" };
}

function mapCompletion(c: CompletionRecord, action: string | undefined, sensitive: SensitiveMap, f: typeof sealAt, port: DataKeyPort): CompletionRecord {
  if (c.result === undefined) return c;
  const prefix = `/completions/${c.connector}/${c.completionId}`;
  if (c.invocationId === undefined) {
    // No invocation yet: the whole result is sealed (its sensitive parts are not known).
    return { ...c, result: (f(port, { result: c.result }, ["/result"], completionWhere(c), prefix) as { result: Json }).result };
  }
  const stepName = action === undefined || c.stepIndex === undefined ? undefined : sensitive.stepNames?.(action)?.[c.stepIndex];
  if (stepName === undefined) {
    // The step cannot be named (no step names given): sealed whole, bound to the invocation.
    return action !== undefined && (sensitive.get(action) ?? []).some((p) => p.startsWith("/outputs"))
      ? { ...c, result: (f(port, { result: c.result }, ["/result"], completionWhere(c), prefix) as { result: Json }).result }
      : c;
  }
  const ptrs = outputPointers(sensitive.get(action!) ?? [], stepName);
  if (ptrs.length === 0) return c;
  const rel = ptrs.map((p) => (p === "" ? "/result" : `/result${p}`));
  return { ...c, result: (f(port, { result: c.result }, rel, completionWhere(c), `${prefix}/outputs/${stepName}`) as { result: Json }).result };
}

/**
 * A store whose transactions seal sensitive params and step outputs on write and open them on
 * read; every other method is the inner store's. The host installs it when given a data key.
 */
export function sealedStore(inner: Store, port: DataKeyPort, sensitive: SensitiveMap): Store {
  // Step rows do not name their action: the invocation's action is remembered per transaction.
  const wrapTx = (tx: StoreTx): StoreTx => {
    const actionOf = new Map<string, string>();
    const note = (inv: Invocation | null): Invocation | null => {
      if (inv) actionOf.set(`${inv.tenantId}/${inv.spaceId}/${inv.invocationId}`, inv.action);
      return inv ? mapInvocation(inv, sensitive.get(inv.action), openAt, port) : inv;
    };
    const stepAction = async (s: { tenantId: string; spaceId: string; invocationId: string }): Promise<string | undefined> => {
      const k = `${s.tenantId}/${s.spaceId}/${s.invocationId}`;
      if (!actionOf.has(k)) {
        const inv = await tx.getInvocation({ tenantId: s.tenantId, spaceId: s.spaceId }, s.invocationId);
        if (inv) actionOf.set(k, inv.action);
      }
      return actionOf.get(k);
    };
    // The store stamps the new `rev` on the record it writes: a sealed copy's rev goes back to the caller's record.
    const write = async <R extends { rev?: number }>(orig: R, sealed: R, put: (x: R) => Promise<void>): Promise<void> => {
      await put(sealed);
      if (sealed !== orig && sealed.rev !== undefined) orig.rev = sealed.rev;
    };
    const completionAction = (c: CompletionRecord): Promise<string | undefined> =>
      c.invocationId === undefined ? Promise.resolve(undefined) : stepAction({ tenantId: c.tenantId, spaceId: c.spaceId, invocationId: c.invocationId });
    const openCompletions = async (cs: CompletionRecord[]): Promise<CompletionRecord[]> => {
      const out: CompletionRecord[] = [];
      for (const c of cs) out.push(mapCompletion(c, await completionAction(c), sensitive, openAt, port));
      return out;
    };
    const overrides: Partial<StoreTx> = {
      // Every argument beyond the ones mapped is passed through (fences, row-lock options).
      insertInvocation: (scope, inv, ...rest: unknown[]) => (note(inv), write(inv, mapInvocation(inv, sensitive.get(inv.action), sealAt, port), (x) => (tx.insertInvocation as (...a: unknown[]) => Promise<void>)(scope, x, ...rest))),
      updateInvocation: (scope, inv, ...rest: unknown[]) => (note(inv), write(inv, mapInvocation(inv, sensitive.get(inv.action), sealAt, port), (x) => (tx.updateInvocation as (...a: unknown[]) => Promise<void>)(scope, x, ...rest))),
      getInvocation: async (...a: unknown[]) => note(await (tx.getInvocation as (...x: unknown[]) => Promise<Invocation | null>)(...a)),
      findInvocationByKey: async (...a: unknown[]) => note(await (tx.findInvocationByKey as (...x: unknown[]) => Promise<Invocation | null>)(...a)),
      listInvocations: async (...a: unknown[]) => (await (tx.listInvocations as (...x: unknown[]) => Promise<Invocation[]>)(...a)).map((i) => note(i)!),
      claimInvocations: async (...a: unknown[]) =>
        (await (tx.claimInvocations as (...x: unknown[]) => Promise<Invocation[]>)(...a)).map((i) => openClaimed(i, () => note(i)!, i)),
      listOverdueParked: async (...a: unknown[]) => (await (tx.listOverdueParked as (...x: unknown[]) => Promise<Invocation[]>)(...a)).map((i) => note(i)!),
      putStep: async (scope, step, ...rest: unknown[]) => (tx.putStep as (...a: unknown[]) => Promise<void>)(scope, mapStep(step, await stepAction(step), sensitive, sealAt, port), ...rest),
      getSteps: async (scope, id) => {
        const steps = await tx.getSteps(scope, id);
        const action = steps.length > 0 ? await stepAction(steps[0]!) : undefined;
        return steps.map((s) => mapStep(s, action, sensitive, openAt, port));
      },
      findStepByExternalRef: async (scope, connector, ref) => {
        const s = await tx.findStepByExternalRef(scope, connector, ref);
        return s ? mapStep(s, await stepAction(s), sensitive, openAt, port) : s;
      },
      insertCompletion: async (scope, c, ...rest: unknown[]) => write(c, mapCompletion(c, await completionAction(c), sensitive, sealAt, port), (x) => (tx.insertCompletion as (...a: unknown[]) => Promise<void>)(scope, x, ...rest)),
      updateCompletion: async (scope, c, ...rest: unknown[]) => write(c, mapCompletion(c, await completionAction(c), sensitive, sealAt, port), (x) => (tx.updateCompletion as (...a: unknown[]) => Promise<void>)(scope, x, ...rest)),
      listCompletions: async (...a: unknown[]) => openCompletions(await (tx.listCompletions as (...x: unknown[]) => Promise<CompletionRecord[]>)(...a)),
      listEarlyCompletions: async (...a: unknown[]) => openCompletions(await (tx.listEarlyCompletions as (...x: unknown[]) => Promise<CompletionRecord[]>)(...a)),
    };
    return new Proxy(tx, {
      get(target, prop, receiver) {
        if (typeof prop === "string" && prop in overrides) return overrides[prop as keyof StoreTx];
        const v = Reflect.get(target, prop, receiver) as unknown;
        return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
  };
  let transitions: StoreTransitions | undefined;
  const outer: Store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === INNER) return target;
      if (prop === "transitions") return (transitions ??= sealedTransitions(target, () => outer, sensitive, port));
      const v = Reflect.get(target, prop, receiver) as unknown;
      if ((prop === "transact" || prop === "read") && typeof v === "function") {
        return <T>(fn: (tx: StoreTx) => Promise<T>) => (v as (f: (tx: StoreTx) => Promise<T>) => Promise<T>).call(target, (tx: StoreTx) => fn(wrapTx(tx)));
      }
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return outer;
}

/** Most invocations whose action the sealed transitions remember (steps do not name theirs). */
const REMEMBERED_ACTIONS = 10_000;

/**
 * The store's own transitions beneath a sealed store (docs/security.md, "Sealed values and the hot
 * path"): each input is sealed as the sealing store's transactions would seal it before the store
 * sees it (invocations' params, steps' outputs), each answer opened (invocations and steps read
 * back), and a record's new `rev` goes back to the caller's. A step does not name its action: the
 * action of every invocation this process admitted, claimed or began is remembered, and a call whose
 * step's action is not known (an advance or a prepare of an invocation never seen here) runs as the
 * generic composition over the sealing store, as does a settle that runs code in its transaction
 * (`within`), alone or out of a batch. Early completions (sealed whole) are written and read through
 * the sealing store's transactions, never by a transition.
 */
function sealedTransitions(inner: Store, outer: () => Store, sensitive: SensitiveMap, port: DataKeyPort): StoreTransitions | undefined {
  const own = inner.transitions;
  if (own === undefined) return undefined;
  let generic: StoreTransitions | undefined;
  const sealing = (): StoreTransitions => (generic ??= genericTransitions(outer()));
  // Nothing sensitive: every mapping below is the identity, and no call needs an action.
  const identity = sensitive.empty === true;
  const actions = new Map<string, string>();
  const keyOf = (scope: { tenantId: string; spaceId: string }, invocationId: string): string => `${scope.tenantId}\u0000${scope.spaceId}\u0000${invocationId}`;
  const remember = (scope: { tenantId: string; spaceId: string }, invocationId: string, action: string | undefined): void => {
    if (identity || action === undefined) return;
    const k = keyOf(scope, invocationId);
    actions.delete(k);
    actions.set(k, action);
    if (actions.size > REMEMBERED_ACTIONS) actions.delete(actions.keys().next().value!);
  };
  const actionOf = (scope: { tenantId: string; spaceId: string }, invocationId: string): string | undefined => {
    const action = actions.get(keyOf(scope, invocationId));
    remember(scope, invocationId, action);
    return action;
  };
  const sealInv = (inv: Invocation): Invocation => mapInvocation(inv, sensitive.get(inv.action), sealAt, port);
  const openInv = (inv: Invocation): Invocation => {
    remember(inv, inv.invocationId, inv.action);
    return mapInvocation(inv, sensitive.get(inv.action), openAt, port);
  };
  const sealStep = (step: StepCheckpoint, action: string | undefined): StepCheckpoint => mapStep(step, action, sensitive, sealAt, port);
  const openSteps = (steps: StepCheckpoint[], action: string | undefined): StepCheckpoint[] => steps.map((st) => mapStep(st, action, sensitive, openAt, port));
  const openPrepared = (p: Prepared, action: string | undefined): Prepared => ({ ...p, steps: openSteps(p.steps, action) });
  const revBack = (orig: { rev?: number } | undefined, sealed: { rev?: number } | undefined): void => {
    if (orig !== undefined && sealed !== undefined && sealed !== orig && sealed.rev !== undefined) orig.rev = sealed.rev;
  };

  const openOutcome = (open: () => unknown): BatchOutcome => {
    try {
      return { ok: true, value: open() };
    } catch (error) {
      return { ok: false, error };
    }
  };
  /** A member as the store gets it, with what turns its answer into the caller's; null: the generic composition runs it. */
  type Prepped = { member: BatchMember; open(v: unknown): unknown };
  const prep = (m: BatchMember): Prepped | null => {
    switch (m.kind) {
      case "admit": {
        const orig = m.input.invocation;
        const sealed = sealInv(orig);
        return {
          member: { ...m, input: { ...m.input, invocation: sealed } },
          open(v) {
            revBack(orig, sealed);
            const r = v as AdmitResult;
            if (r.created) remember(orig, orig.invocationId, orig.action);
            return r.created ? r : { created: false, existing: openInv(r.existing) };
          },
        };
      }
      case "begin": {
        const action = m.input.attempt.action ?? m.input.idempotency.action;
        if (!identity && action === undefined) return null;
        remember(m.scope, m.input.step.invocationId, action);
        return {
          member: { ...m, input: { ...m.input, step: sealStep(m.input.step, action) } },
          open(v) {
            const r = v as BeginResult;
            return r.started ? r : { started: false, found: { ...r.found, steps: openSteps(r.found.steps, action) } };
          },
        };
      }
      case "record":
        return { member: m, open: (v) => v };
      case "advance": {
        const action = actionOf(m.scope, m.input.done.invocationId);
        if (!identity && action === undefined) return null;
        return { member: { ...m, input: { ...m.input, done: sealStep(m.input.done, action), next: sealStep(m.input.next, action) } }, open: (v) => v };
      }
      case "settle": {
        if (m.input.within !== undefined) return null;
        if (m.input.invocation !== undefined) remember(m.scope, m.input.invocation.invocationId, m.input.invocation.action);
        const action = m.input.idempotency.action;
        const orig = m.input.invocation;
        const sealed = orig === undefined ? undefined : sealInv(orig);
        return {
          member: { ...m, input: { ...m.input, step: sealStep(m.input.step, action), ...(sealed !== undefined ? { invocation: sealed } : {}) } },
          open(v) {
            revBack(orig, sealed);
            return v;
          },
        };
      }
    }
  };
  const ownCall = (m: BatchMember): Promise<unknown> => applyMember(own, m);
  // An unknown kind is refused there by name.
  const genericCall = (m: BatchMember): Promise<unknown> => applyMember(sealing(), m);
  /**
   * `prep`, where a member it cannot read (malformed input, an unknown kind) goes to the generic
   * composition over the sealing store: the guard there refuses it by name, and nothing is written
   * unsealed.
   */
  const prepOrGeneric = (m: BatchMember): Prepped | null => {
    try {
      return prep(m) ?? null;
    } catch {
      return null;
    }
  };
  const via = async (m: BatchMember): Promise<unknown> => {
    const p = prepOrGeneric(m);
    if (p === null) return genericCall(m);
    return p.open(await ownCall(p.member));
  };
  const overrides: Partial<StoreTransitions> = {
    admit: (scope, input) => via({ kind: "admit", scope, input }) as Promise<AdmitResult>,
    begin: (scope, input) => via({ kind: "begin", scope, input }) as Promise<BeginResult>,
    record: (scope, input) => via({ kind: "record", scope, input }) as Promise<number>,
    advance: (scope, input) => via({ kind: "advance", scope, input }) as Promise<void>,
    settle: (scope, input) => via({ kind: "settle", scope, input }) as Promise<{ invocationRev?: number }>,
    async claim(opts) {
      return (await own.claim(opts)).map((inv) => openClaimed(inv, () => openInv(inv), inv));
    },
    async prepare(scope, input) {
      const action = actionOf(scope, input.invocationId);
      if (!identity && action === undefined) return sealing().prepare(scope, input);
      return openPrepared(await own.prepare(scope, input), action);
    },
    async batch(members) {
      // Each member succeeds or fails alone, here too: one the store's batch cannot take runs the
      // generic way beside it, and an answer that cannot be opened fails its own member.
      const preps = members.map(prepOrGeneric);
      const out: BatchOutcome[] = new Array<BatchOutcome>(members.length);
      const plain = members.flatMap((_, i) => (preps[i] === null ? [] : [i]));
      const others = members.flatMap((_, i) => (preps[i] === null ? [i] : []));
      const [applied] = await Promise.all([
        plain.length > 0 ? own.batch(plain.map((i) => preps[i]!.member)) : Promise.resolve([]),
        ...others.map(async (i) => void (out[i] = await outcomeOf(Promise.resolve().then(() => genericCall(members[i]!))))),
      ]);
      plain.forEach((i, k) => {
        const o = applied[k]!;
        out[i] = o.ok ? openOutcome(() => preps[i]!.open(o.value)) : o;
      });
      return out;
    },
  };
  if (own.admitClaimed !== undefined) {
    // The admission's part as an admit member's; what it claimed is opened beside.
    overrides.admitClaimed = async (scope, input, claim, breakers) => {
      const p = prepOrGeneric({ kind: "admit", scope, input });
      if (p === null) return sealing().admitClaimed!(scope, input, claim, breakers);
      const r = await own.admitClaimed!(scope, (p.member as { input: AdmitInput }).input, claim, breakers);
      const admitted = p.open(r) as AdmitResult;
      if (!r.created || r.claimed === undefined) return admitted;
      const inv = openInv(r.claimed.invocation);
      return { created: true, claimed: { invocation: inv, prepared: openPrepared(r.claimed.prepared, inv.action) } };
    };
  }
  if (own.claimPrepared !== undefined) {
    overrides.claimPrepared = async (opts, breakers) => {
      const out = await own.claimPrepared!(opts, breakers);
      const claimed = out.claimed.map((c) =>
        openClaimed(
          c.invocation,
          () => {
            const inv = openInv(c.invocation);
            return { invocation: inv, prepared: openPrepared(c.prepared, inv.action) };
          },
          c,
        ),
      );
      return { ...out, claimed };
    };
  }
  return new Proxy(own, {
    get(target, prop, receiver) {
      if (typeof prop === "string" && prop in overrides) return overrides[prop as keyof StoreTransitions];
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
