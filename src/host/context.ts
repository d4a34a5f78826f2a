/** What the host's parts share: options, the boundary, breakers, ids, events and journaled transitions. */
import type { ActionDefinition } from "../core/action.js";
import type { Boundary } from "../core/boundary.js";
import { ID_RANDOM_BYTES, timeOrderedId } from "../core/ids.js";
import { errorMessage, isWritError } from "../core/errors.js";
import { assertTransition } from "../core/invocation.js";
import { appendJournal, draft, type JournalDraft } from "../core/journal.js";
import type { ClaimOptions, StoreTx } from "../core/store.js";
import type { ClaimedPrepared } from "../core/transitions.js";
import type { Fence, Invocation, InvocationStatus, Json, Scope } from "../core/types.js";
import type { Breakers } from "./breaker.js";
import type { HostEvent } from "./events.js";
import { redactInvocation } from "./reads.js";
import { countEvent } from "./telemetry.js";
import type { HostOptions, Logger, ResolvedHostOptions } from "./options.js";

export interface HostContext {
  o: HostOptions;
  r: ResolvedHostOptions;
  boundary: Boundary;
  actions: Map<string, ActionDefinition<unknown>>;
  breakers: Breakers;
  log: Logger;
  newId(prefix: string): string;
  emit(e: HostEvent): void;
  /** Events raised inside a transaction are emitted only after it commits. */
  transition(tx: StoreTx, inv: Invocation, to: InvocationStatus, patch: Partial<Invocation>, opts?: { fence?: Fence; data?: Json; events?: HostEvent[] }): Promise<Invocation>;
  /**
   * The same transition as data, for a caller that writes it in a store transition of its own:
   * the next invocation, its journal entry, and its event (pushed to `events` when given).
   */
  plan(inv: Invocation, to: InvocationStatus, patch: Partial<Invocation>, opts?: { data?: Json; events?: HostEvent[] }): { next: Invocation; entry: JournalDraft; event: HostEvent };
  redactInvocation(inv: Invocation): Invocation;
  /**
   * The started workers of this host that may take an admission in its own commit (docs/host.md,
   * "Hand-off to an idle worker"): a worker adds itself when it starts, leaves when it stops.
   */
  handoffs: Set<HandoffSource>;
}

/** A started worker, as an admission sees it. */
export interface HandoffSource {
  /** A ticket when the worker waits for work with a slot free; `undefined` otherwise. */
  offer(): HandoffTicket | undefined;
}

/**
 * A worker's offer to claim one admission in the admission's own commit. Exactly one of `taken` or
 * `failed` is called, once; until then the ticket holds a slot of the worker.
 */
export interface HandoffTicket {
  /** The claim to make: this worker's owner name, one lease token, the lease. */
  claim: ClaimOptions;
  /** The breakers the prepare read returns (those the worker reads on every claim). */
  breakers: Array<{ connector: string; operation: string }>;
  /** The admission committed: the worker runs what it claimed (nothing when it claimed nothing). */
  taken(claimed: ClaimedPrepared | undefined): void;
  /** The admission failed; it may still have committed, so the worker claims under a new owner name. */
  failed(): void;
}

/** The first ticket a started worker offers, if any. */
export function offerHandoff(ctx: HostContext): HandoffTicket | undefined {
  for (const w of ctx.handoffs) {
    const t = w.offer();
    if (t !== undefined) return t;
  }
  return undefined;
}

/**
 * Runs a whole transition again when it lost a race (STALE: a row it read changed before its
 * conditional write; docs/stores.md). Each run re-reads and re-decides, so a retry either applies
 * to the new state or refuses it; after `attempts` lost races the STALE error reaches the caller.
 */
export async function retryStale<T>(run: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await run();
    } catch (e) {
      if (!isWritError(e, "STALE") || i >= attempts) throw e;
    }
  }
}

export function scopeOf(r: { tenantId: string; spaceId: string }): Scope {
  return { tenantId: r.tenantId, spaceId: r.spaceId };
}

export function makeContext(o: HostOptions, r: ResolvedHostOptions, boundary: Boundary, breakers: Breakers, log: Logger): HostContext {
  const actions = new Map<string, ActionDefinition<unknown>>();
  for (const a of o.actions) actions.set(a.id, a as ActionDefinition<unknown>);
  const emit = (e: HostEvent): void => {
    countEvent(e);
    log.debug({ event: e.type, invocationId: e.invocationId, tenantId: e.scope.tenantId, spaceId: e.scope.spaceId, status: e.status }, "writ event");
    try {
      o.onEvent?.(e);
    } catch (err) {
      log.warn({ err: errorMessage(err) }, "onEvent hook threw; ignored");
    }
  };
  const ctx: HostContext = {
    o,
    r,
    boundary,
    actions,
    breakers,
    log,
    newId: (prefix) => timeOrderedId(prefix, o.clock.now(), o.random.bytes(ID_RANDOM_BYTES)),
    emit,
    handoffs: new Set(),
    plan(inv, to, patch, opts = {}) {
      assertTransition(inv.status, to, inv.invocationId);
      const now = o.clock.now();
      const version = (inv.version ?? 0) + 1;
      const next: Invocation = { ...inv, ...patch, status: to, updatedAt: now, version };
      if (to !== "running") {
        delete next.leaseOwner;
        delete next.leaseToken;
        delete next.leaseExpiresAt;
      }
      const scope = scopeOf(inv);
      const data: { [k: string]: Json } = { from: inv.status, to };
      if (next.reasons && to !== inv.status) data.reasons = next.reasons;
      if (next.lastError && to !== inv.status) data.error = next.lastError;
      if (opts.data !== undefined) data.detail = opts.data;
      const entry = draft(`invocation.${to}`, [inv.invocationId, version], now, { invocationId: inv.invocationId }, data);
      const ev: HostEvent = { type: `invocation.${to}`, scope, invocationId: inv.invocationId, at: now, status: to, from: inv.status, data };
      if (opts.events) opts.events.push(ev);
      return { next, entry, event: ev };
    },
    async transition(tx, inv, to, patch, opts = {}) {
      const { next, entry, event } = ctx.plan(inv, to, patch, opts);
      const scope = scopeOf(inv);
      await tx.updateInvocation(scope, next, opts.fence);
      await appendJournal(tx, o.crypto, scope, [entry]);
      if (!opts.events) emit(event);
      return next;
    },
    redactInvocation: (inv) => redactInvocation(actions.get(inv.action), inv),
  };
  return ctx;
}
