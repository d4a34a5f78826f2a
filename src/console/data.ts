/**
 * Every read the console makes, in one place. Reads go through the host (which redacts sensitive
 * values) where it offers them; the rest (steps, attempts, journal pages, key records) read the
 * store through `readCommitted` (its read path), each in one short read, and only here.
 */
import type { ActionDefinition } from "../core/action.js";
import { verifyStoredJournal, type JournalVerification } from "../core/journal.js";
import { readCommitted, type StoreTx } from "../core/store.js";
import type { ApiKeyRecord, Approval, ApprovalStatus, AttemptRecord, IdempotencyRecord, Invocation, InvocationStatus, JournalCheckpoint, ReconciliationRecord, Scope, StepCheckpoint, UnsealedEntry } from "../core/types.js";

/**
 * A journal entry as the console shows it: sealed ones have seq, hash and prevHash; entries not
 * yet sealed by the sequencer (docs/journal.md) have none of the three yet.
 */
export type ShownEntry = UnsealedEntry & { seq?: number; hash?: string; prevHash?: string | null };
import type { Runtime } from "../runtime/runtime.js";
import { storedIdempotencyKey } from "../mcp/idempotency.js";

export interface ConsoleData {
  apiKey(keyId: string): Promise<ApiKeyRecord | null>;
  approvals(scope: Scope, status: ApprovalStatus | undefined, limit: number): Promise<Approval[]>;
  approval(scope: Scope, approvalId: string): Promise<Approval | null>;
  invocation(scope: Scope, invocationId: string): Promise<Invocation | null>;
  invocations(scope: Scope, filter: { status?: InvocationStatus; after?: string; limit: number }): Promise<Invocation[]>;
  /** Invocations with this idempotency key, one per action that has one. */
  byIdempotencyKey(scope: Scope, key: string): Promise<Invocation[]>;
  reconciliations(scope: Scope, opts: { status?: "open" | "resolved"; invocationId?: string; limit: number }): Promise<ReconciliationRecord[]>;
  /** Keys bare boundary executions left with an unknown outcome (resolved with resolve-key). */
  unknownKeys(scope: Scope, limit: number): Promise<IdempotencyRecord[]>;
  steps(scope: Scope, invocationId: string): Promise<StepCheckpoint[]>;
  attempts(scope: Scope, invocationId: string): Promise<AttemptRecord[]>;
  journalHead(scope: Scope): Promise<{ seq: number; hash: string } | null>;
  /** How many entries wait to be sealed (at most `limit`). */
  unsealedCount(scope: Scope, limit: number): Promise<number>;
  lastCheckpoint(scope: Scope): Promise<JournalCheckpoint | null>;
  /** The archive watermark and the oldest entry still in the database (docs/archives.md). */
  archiveState(scope: Scope): Promise<{ archivedThrough: number; oldestLive: { seq: number; at: number } | null; archiving: boolean }>;
  /**
   * Journal entries newest first — those not yet sealed, then the sealed ones read backwards from
   * the head in pages — while `keep` says go on
   * ("last" takes the entry and stops) and at most `maxEntries` were read. `truncated` says the
   * scan stopped at the cap.
   */
  journalBackwards(scope: Scope, keep: (e: ShownEntry) => "take" | "skip" | "stop" | "last", maxEntries: number): Promise<{ entries: ShownEntry[]; truncated: boolean }>;
  verifyJournal(scope: Scope): Promise<JournalVerification>;
  action(id: string): ActionDefinition<unknown> | undefined;
  connectors(): Array<{ id: string; operations: string[] }>;
  /** The space's circuit breakers, as the store holds them. */
  breakers(scope: Scope): ReturnType<Runtime["host"]["breakers"]>;
}

const PAGE = 500;

export function consoleData(runtime: Runtime): ConsoleData {
  const { host, store } = runtime;
  // Read-only, on committed state (a store's read path where it has one).
  const read = <T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> => readCommitted(store, fn);
  const actions = new Map<string, ActionDefinition<unknown>>();
  for (const a of runtime.config.actions) actions.set(a.id, a as ActionDefinition<unknown>);
  return {
    apiKey: (keyId) => read((tx) => tx.getApiKey(keyId)),
    approvals: (scope, status, limit) => host.approvals.list(scope, { limit, ...(status ? { status } : {}) }),
    approval: (scope, id) => host.approvals.get(scope, id),
    invocation: (scope, id) => host.get(scope, id),
    invocations: (scope, f) => host.list(scope, { limit: f.limit, ...(f.status ? { status: f.status } : {}), ...(f.after ? { after: f.after } : {}) }),
    async byIdempotencyKey(scope, key) {
      const found: Invocation[] = [];
      // The key as given, and as the MCP gateway stores an agent's key (`mcp:<key>`, docs/mcp.md),
      // so a search for the key the agent sent finds its call.
      const keys = key.startsWith("mcp:") ? [key] : [key, storedIdempotencyKey(key)];
      for (const id of actions.keys()) {
        for (const k of keys) {
          const inv = await read((tx) => tx.findInvocationByKey(scope, id, k));
          // Through the host again, so sensitive params come back redacted.
          const shown = inv ? await host.get(scope, inv.invocationId) : null;
          if (shown) found.push(shown);
        }
      }
      return found;
    },
    async reconciliations(scope, o) {
      if (o.invocationId) {
        const id = o.invocationId;
        return read((tx) => tx.listReconciliations(scope, { invocationId: id, limit: o.limit, ...(o.status ? { status: o.status } : {}) }));
      }
      return host.reconcile.list(scope, { limit: o.limit, ...(o.status ? { status: o.status } : {}) });
    },
    unknownKeys: (scope, limit) => host.reconcile.unknownKeys(scope, { limit }),
    steps: (scope, id) => read((tx) => tx.getSteps(scope, id)),
    attempts: (scope, id) => read((tx) => tx.listAttempts(scope, { invocationId: id, limit: 1000 })),
    journalHead: (scope) => read((tx) => tx.journalHead(scope)),
    unsealedCount: async (scope, limit) => (await read((tx) => tx.listUnsealed(scope, { limit }))).length,
    async archiveState(scope) {
      const [archivedThrough, [first]] = await read(async (tx) => [await tx.journalArchivedThrough(scope), await tx.readJournal(scope, { limit: 1 })] as const);
      return { archivedThrough, oldestLive: first ? { seq: first.seq, at: first.at } : null, archiving: host.archive.target !== null };
    },
    async lastCheckpoint(scope) {
      const all = await read((tx) => tx.listCheckpoints(scope));
      return all.length > 0 ? all[all.length - 1]! : null;
    },
    async journalBackwards(scope, keep, maxEntries) {
      const [head, unsealed] = await read(async (tx) => [await tx.journalHead(scope), await tx.listUnsealed(scope, { limit: 1000 })] as const);
      const out: ShownEntry[] = [];
      let upTo = head?.seq ?? 0;
      let scanned = 0;
      const seen = new Set<string>();
      for (let i = unsealed.length - 1; i >= 0; i--) {
        const e = unsealed[i]!;
        seen.add(e.id);
        scanned++;
        const k = keep(e);
        if (k === "take" || k === "last") out.push(e);
        if (k === "stop" || k === "last") return { entries: out, truncated: false };
      }
      while (upTo >= 1) {
        const from = Math.max(1, upTo - PAGE + 1);
        // Past a prune the first live seq may be above `from`: keep to the page's own range.
        const page = (await read((tx) => tx.readJournal(scope, { fromSeq: from, limit: upTo - from + 1 }))).filter((e) => e.seq <= upTo);
        for (let i = page.length - 1; i >= 0; i--) {
          const e = page[i]!;
          // Sealed between the two reads: already seen as unsealed.
          if (seen.has(e.id)) continue;
          scanned++;
          const k = keep(e);
          if (k === "take" || k === "last") out.push(e);
          if (k === "stop" || k === "last") return { entries: out, truncated: false };
          if (scanned >= maxEntries) return { entries: out, truncated: from > 1 || i > 0 };
        }
        // Below the first live entry lie only archived ones (docs/archives.md).
        upTo = page.length > 0 && page[0]!.seq > from ? 0 : from - 1;
      }
      return { entries: out, truncated: false };
    },
    async verifyJournal(scope) {
      const v = await verifyStoredJournal(store, host.context.o.crypto, runtime.keyring, scope, undefined, 1000, host.archive.target ?? undefined);
      // A failure is an event for the tenant's subscribers (journal.verify_failed).
      if (!v.ok) await host.notifications.verifyFailed(scope, v).catch(() => undefined);
      return v;
    },
    action: (id) => actions.get(id),
    connectors: () => runtime.config.connectors.map((c) => ({ id: c.id, operations: Object.keys(c.operations) })),
    breakers: (scope) => host.breakers(scope),
  };
}
