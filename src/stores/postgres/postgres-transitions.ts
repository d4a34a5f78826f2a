/**
 * The hot transitions on PostgreSQL (docs/stores.md, "Transitions"): each is one call of a
 * server-side function from migration 6, run in autocommit, so it costs one round trip and one
 * commit. The functions lock and check in the store's one lock order; a raised WRLSE, WRCNF,
 * WRSTL or WRNFD becomes the same error the generic composition throws.
 */
import { LeaseLostError, WritError, isWritError } from "../../core/errors.js";
import type { AdmitResult, BeginFound, BeginResult, StoreTransitions } from "../../core/transitions.js";
import type { Approval, AttemptRecord, Authority, IdempotencyRecord, Scope, StepCheckpoint, UnsealedEntry } from "../../core/types.js";
import { statement, type Exec } from "./postgres-exec.js";
import { advisoryKeys } from "./postgres-locks.js";
import { attemptFromRow, docOf, invocationFromRow, invocationParams, type InvocationRow } from "./postgres-rows.js";

/** `n` placeholders `$1 … $n`, cast where the driver cannot tell the type of a NULL. */
function call(fn: string, casts: readonly string[]): string {
  return `SELECT ${fn}(${casts.map((c, i) => `$${i + 1}::${c}`).join(", ")}) AS out`;
}

const ENTRY_CASTS = ["text[]", "text[]", "bigint[]", "json[]"] as const;
const INV_CASTS = ["text", "text", "text", "text", "bigint", "text", "text", "bigint", "integer", "bigint", "bigint", "bigint", "bigint", "json"] as const;
const STEP_CASTS = ["integer", "text", "text", "text", "text", "json"] as const;

const ADMIT = statement("t_admit", call("writ_admit", ["text", "text", ...INV_CASTS, ...ENTRY_CASTS]));
const BEGIN = statement(
  "t_begin",
  call("writ_begin", [
    "text", "text", "text", "text", "text", "text", "bigint[]",
    "boolean", "text", "text", "bigint", "text",
    "text", "text", "text", "bigint",
    "text", "bigint", "json",
    "text", "text", "text", "json",
    "integer", "text", "text", "text", "json",
    "text", "text", "json",
    "text", "text", "json",
    ...ENTRY_CASTS,
  ]),
);
const RECORD = statement("t_record", call("writ_record_attempt", ["text", "text", "text", "text", "text", "text", "text", "text", "json", ...ENTRY_CASTS]));
const ADVANCE = statement("t_advance", call("writ_advance", ["text", "text", "text", "text", "text", "text", ...STEP_CASTS, ...STEP_CASTS, ...ENTRY_CASTS]));
const SETTLE = statement(
  "t_settle",
  call("writ_settle", [
    "text", "text", "text", "text", "text", "text", "bigint[]",
    ...STEP_CASTS,
    "text", "text", "text", "json",
    "text", "text", "text", "json",
    "boolean", ...INV_CASTS.slice(3),
    "text", "text", "bigint", "json",
    ...ENTRY_CASTS,
  ]),
);

const CLAIM = statement("t_claim", call("writ_claim", ["text", "bigint", "bigint", "integer", "text[]"]));
const SEAL_IF_HEAD = statement("t_seal_if_head", call("writ_seal_if_head", ["text", "text", "bigint", "bigint", "text[]", "bigint[]", "text[]", "json[]"]));
const PREPARE = statement(
  "t_prepare",
  `SELECT (SELECT coalesce(json_agg(doc ORDER BY step_index), '[]') FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3) AS steps,
          (SELECT doc FROM writ_authorities WHERE tenant_id = $1 AND space_id = $2 AND authority_ref = $4) AS authority,
          (SELECT json_build_object('rev', rev, 'doc', doc) FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $5::text) AS approval`,
);
const READ_UNSEALED = statement(
  "t_read_unsealed",
  `SELECT (SELECT json_build_object('seq', seq, 'hash', hash) FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NOT NULL ORDER BY seq DESC LIMIT 1) AS head,
          (SELECT coalesce(json_agg(u.doc ORDER BY u.pos), '[]') FROM (
             SELECT doc, pos FROM writ_journal WHERE tenant_id = $1 AND space_id = $2 AND seq IS NULL ORDER BY pos LIMIT $3) u) AS entries`,
);

function entryParams(entries: readonly UnsealedEntry[]): unknown[] {
  return [entries.map((e) => e.id), entries.map((e) => e.type), entries.map((e) => e.at), entries.map(docOf)];
}

function stepParams(s: StepCheckpoint): unknown[] {
  return [s.stepIndex, s.status, s.attemptId, s.connector ?? null, s.externalRef ?? null, docOf(s)];
}

/** The error the generic composition would have thrown for a function's raised SQLSTATE. */
function mapped(e: unknown, invocationId: string): unknown {
  if (!isWritError(e)) return e;
  const state = (e.details as { sqlState?: unknown } | undefined)?.sqlState;
  const text = e.message.replace(/^postgres: /, "");
  switch (state) {
    case "WRLSE":
      return new LeaseLostError(`lease lost on invocation ${invocationId}`);
    case "WRCNF":
      return new WritError("CONFLICT", text);
    case "WRSTL":
      return new WritError("STALE", text);
    case "WRNFD":
      return new WritError("NOT_FOUND", text);
    default:
      return e;
  }
}

interface Found {
  lease: boolean;
  started?: boolean;
  seq?: string | number;
  idempotency?: IdempotencyRecord | null;
  consumed?: boolean;
  steps?: StepCheckpoint[];
  authority?: Authority | null;
  approval?: { rev: number; doc: Approval } | null;
  attempts?: Array<{ seq: number; doc: AttemptRecord }>;
}

/**
 * The transitions over `run`, which runs one statement on a pooled connection in autocommit, and
 * `journaled`, the sequencer's hint after a commit that wrote entries. A settle that carries more
 * work (`within`) runs as the generic composition (`fallback`).
 */
export function postgresTransitions(
  run: <T>(fn: (x: Exec) => Promise<T>) => Promise<T>,
  journaled: (scope: Scope) => void,
  fallback: () => StoreTransitions,
): StoreTransitions {
  const one = async <R>(scope: Scope, invocationId: string, entries: readonly UnsealedEntry[], fn: (x: Exec) => Promise<R>): Promise<R> => {
    let out: R;
    try {
      out = await run(fn);
    } catch (e) {
      throw mapped(e, invocationId);
    }
    if (entries.length > 0) journaled(scope);
    return out;
  };
  const fenceParams = (f: { owner: string; token: string } | undefined): unknown[] => [f?.owner ?? null, f?.token ?? null];
  const leaseParams = (f: { invocationId: string; owner: string; token: string } | undefined): unknown[] => [...fenceParams(f), f?.invocationId ?? null];
  return {
    async admit(scope, input): Promise<AdmitResult> {
      const inv = input.invocation;
      const row = await one(scope, inv.invocationId, input.entries, async (x) => {
        const [r] = await x.rows<{ out: InvocationRow | null }>(ADMIT, [scope.tenantId, scope.spaceId, ...invocationParams({ ...inv, rev: 1 }), ...entryParams(input.entries)]);
        return r?.out ?? null;
      });
      if (row === null) {
        inv.rev = 1;
        return { created: true };
      }
      return { created: false, existing: invocationFromRow(row) };
    },

    async begin(scope, input): Promise<BeginResult> {
      const e = input.expect;
      const f = input.fence;
      const out = await one(scope, input.step.invocationId, input.entries, async (x) => {
        const [r] = await x.rows<{ out: Found }>(BEGIN, [
          scope.tenantId,
          scope.spaceId,
          input.step.invocationId,
          ...leaseParams(f),
          advisoryKeys(scope, input.locks).map(String),
          e.idempotency !== null,
          e.idempotency?.state ?? null,
          e.idempotency?.attemptId ?? null,
          e.idempotency?.updatedAt ?? null,
          e.steps,
          e.authority?.authorityRef ?? null,
          e.authority?.seen ?? null,
          e.approval?.approvalId ?? null,
          e.approval?.seen ?? null,
          input.consumed.decisionId,
          input.consumed.consumedAt,
          docOf(input.consumed),
          input.idempotency.action,
          input.idempotency.idempotencyKey,
          input.idempotency.state,
          docOf(input.idempotency),
          ...stepParams(input.step).filter((_, i) => i !== 2),
          input.attempt.attemptId,
          input.attempt.state,
          docOf(input.attempt),
          input.supersede?.attemptId ?? null,
          input.supersede?.state ?? null,
          input.supersede ? docOf(input.supersede) : null,
          ...entryParams(input.entries),
        ]);
        return r!.out;
      });
      if (!out.lease) throw new LeaseLostError(`lease lost on invocation ${input.step.invocationId}`);
      if (out.started) return { started: true, seq: Number(out.seq) };
      const found: BeginFound = {
        idempotency: out.idempotency ?? null,
        consumed: out.consumed === true,
        steps: out.steps ?? [],
        authority: out.authority ?? null,
        approval: out.approval ? { ...out.approval.doc, rev: Number(out.approval.rev) } : null,
        attempts: (out.attempts ?? []).map((a) => attemptFromRow({ seq: a.seq, doc: a.doc })),
      };
      return { started: false, found };
    },

    async record(scope, input) {
      const a = input.attempt;
      const inv = input.fence?.invocationId ?? a.invocationId ?? null;
      const seq = await one(scope, inv ?? a.attemptId, input.entries, async (x) => {
        const [r] = await x.rows<{ out: string | number }>(RECORD, [
          scope.tenantId,
          scope.spaceId,
          inv,
          ...fenceParams(input.fence),
          a.attemptId,
          a.invocationId ?? null,
          a.state,
          docOf(a),
          ...entryParams(input.entries),
        ]);
        return r!.out;
      });
      return Number(seq);
    },

    async advance(scope, input) {
      await one(scope, input.done.invocationId, input.entries, (x) =>
        x.rows(ADVANCE, [
          scope.tenantId,
          scope.spaceId,
          input.done.invocationId,
          ...leaseParams(input.fence),
          ...stepParams(input.done),
          ...stepParams(input.next),
          ...entryParams(input.entries),
        ]),
      );
    },

    async prepare(scope, input) {
      const [r] = await run((x) =>
        x.rows<{ steps: StepCheckpoint[]; authority: Authority | null; approval: { rev: number; doc: Approval } | null }>(PREPARE, [
          scope.tenantId,
          scope.spaceId,
          input.invocationId,
          input.authorityRef,
          input.approvalId ?? null,
        ]),
      );
      return { steps: r!.steps, authority: r!.authority, approval: r!.approval ? { ...r!.approval.doc, rev: Number(r!.approval.rev) } : null };
    },

    async claim(opts) {
      const n = Math.min(opts.limit, opts.tokens.length);
      if (n === 0) return [];
      const [r] = await run((x) => x.rows<{ out: InvocationRow[] }>(CLAIM, [opts.owner, opts.now, opts.leaseMs, n, opts.tokens.slice(0, n)]));
      const claimed = r!.out.map(invocationFromRow);
      const seen = new Map<string, Scope>();
      for (const inv of claimed) seen.set(`${inv.tenantId}\u0000${inv.spaceId}`, { tenantId: inv.tenantId, spaceId: inv.spaceId });
      for (const sc of seen.values()) journaled(sc);
      return claimed;
    },

    async readUnsealed(scope, limit) {
      const [r] = await run((x) => x.rows<{ head: { seq: number | string; hash: string } | null; entries: UnsealedEntry[] }>(READ_UNSEALED, [scope.tenantId, scope.spaceId, limit]));
      return { head: r!.head ? { seq: Number(r!.head.seq), hash: r!.head.hash } : null, entries: r!.entries };
    },

    async sealIfHead(scope, headSeq, entries) {
      if (entries.length === 0) return true;
      const [r] = await run((x) =>
        x.rows<{ out: number }>(SEAL_IF_HEAD, [
          scope.tenantId,
          scope.spaceId,
          String(advisoryKeys(scope, ["journal"])[0]!),
          headSeq,
          entries.map((e) => e.id),
          entries.map((e) => e.seq),
          entries.map((e) => e.hash),
          entries.map(docOf),
        ]),
      ).catch((e: unknown) => {
        throw mapped(e, "");
      });
      return r!.out > 0;
    },

    async settle(scope, input) {
      if (input.within) return fallback().settle(scope, input);
      if (input.invocation && !input.fence) throw new WritError("INVALID_ARGUMENT", "settle: an invocation write needs the fence");
      const inv = input.invocation;
      const rec = input.reconciliation;
      const invCols = inv ? invocationParams(inv).slice(3) : new Array<null>(11).fill(null);
      const rev = await one(scope, input.step.invocationId, input.entries, async (x) => {
        const [r] = await x.rows<{ out: string | number | null }>(SETTLE, [
          scope.tenantId,
          scope.spaceId,
          input.step.invocationId,
          ...leaseParams(input.fence),
          advisoryKeys(scope, input.locks ?? []).map(String),
          ...stepParams(input.step),
          input.attempt.attemptId,
          input.attempt.invocationId ?? null,
          input.attempt.state,
          docOf(input.attempt),
          input.idempotency.action,
          input.idempotency.idempotencyKey,
          input.idempotency.state,
          docOf(input.idempotency),
          inv !== undefined,
          ...invCols,
          rec?.reconciliationId ?? null,
          rec?.status ?? null,
          rec?.createdAt ?? null,
          rec ? docOf({ ...rec, rev: 1 }) : null,
          ...entryParams(input.entries),
        ]);
        return r!.out;
      });
      if (rec) rec.rev = 1;
      if (inv && rev !== null) {
        inv.rev = Number(rev);
        return { invocationRev: inv.rev };
      }
      return {};
    },
  };
}
