/**
 * The hot transitions on PostgreSQL (docs/stores.md, "Transitions"): each is one call of a
 * server-side function from migration 6, run in autocommit, so it costs one round trip and one
 * commit. The functions lock and check in the store's one lock order; a raised WRLSE, WRCNF,
 * WRSTL or WRNFD becomes the same error the generic composition throws.
 */
import { coalescer, outcomeOf, type BatchOutcome } from "../../core/batch.js";
import { LeaseLostError, WritError, isWritError } from "../../core/errors.js";
import { leaseView, type AdmitClaimedResult, type AdmitInput, type AdmitResult, type AdvanceInput, type BatchMember, type BeginFound, type BeginInput, type BeginResult, type ClaimedBatch, type ClaimedPrepared, type Prepared, type RecordInput, type SettleInput, type StoreTransitions } from "../../core/transitions.js";
import type { ClaimOptions } from "../../core/store.js";
import type { Approval, AttemptRecord, Authority, BreakerRecord, IdempotencyRecord, Invocation, JournalEntry, Scope, StepCheckpoint, UnsealedEntry } from "../../core/types.js";
import { ADMIT_CLAIMED_FN, ADMIT_FN, ADVANCE_FN, BATCH_RUNNER, BEGIN_FN, CLAIM_NEXT_FN, RECORD_FN, SEAL_IF_HEAD_FN, SETTLE_FN, batchArgs, callText, type PgFunction } from "./postgres-calls.js";
import { toWritError } from "./postgres-errors.js";
import { checkValues, statement, type Exec, type Statement } from "./postgres-exec.js";
import { advisoryKeys } from "./postgres-locks.js";
import { attemptFromRow, docOf, invocationFromRow, invocationParams, numOrNull, type InvocationRow } from "./postgres-rows.js";

/** `n` placeholders `$1 … $n`, cast where the driver cannot tell the type of a NULL. */
function call(fn: string, casts: readonly string[]): string {
  return `SELECT ${fn}(${casts.map((c, i) => `$${i + 1}::${c}`).join(", ")}) AS out`;
}

/**
 * The one-call statement of each batchable function, by function name. `single` checks every value
 * (into arrays, `encodedArgs`) before it takes a connection, so the exec does not check them again.
 */
const SINGLE = new Map<string, Statement>(
  [
    ["t_admit", ADMIT_FN],
    ["t_begin", BEGIN_FN],
    ["t_record", RECORD_FN],
    ["t_advance", ADVANCE_FN],
    ["t_settle", SETTLE_FN],
    ["t_seal_if_head", SEAL_IF_HEAD_FN],
    ["t_claim_next", CLAIM_NEXT_FN],
    ["t_admit_claimed", ADMIT_CLAIMED_FN],
  ].map(([name, f]) => [(f as PgFunction).fn, { ...statement(name as string, callText(f as PgFunction)), checked: true }]),
);
/** Its one value is the JSON of members `many` checked one by one. */
const BATCH: Statement = { ...statement("t_batch", `SELECT ${BATCH_RUNNER}($1::jsonb) AS out`), checked: true };
/** SQLSTATEs after which a batch member runs again alone: deadlock detected, serialization failure. */
const RETRY_ALONE = new Set(["40P01", "40001"]);

const CLAIM = statement("t_claim", call("writ_claim", ["text", "bigint", "bigint", "integer", "text[]"]));
const PREPARE = statement(
  "t_prepare_2",
  `SELECT (SELECT coalesce(json_agg(doc ORDER BY step_index), '[]') FROM writ_steps WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3) AS steps,
          (SELECT doc FROM writ_authorities WHERE tenant_id = $1 AND space_id = $2 AND authority_ref = $4) AS authority,
          (SELECT json_build_object('rev', rev, 'doc', doc) FROM writ_approvals WHERE tenant_id = $1 AND space_id = $2 AND approval_id = $5::text) AS approval,
          (SELECT json_build_object('status', status, 'leaseOwner', lease_owner, 'leaseToken', lease_token) FROM writ_invocations WHERE tenant_id = $1 AND space_id = $2 AND invocation_id = $3) AS invocation,
          (SELECT coalesce(json_agg(b.doc ORDER BY t.n), '[]') FROM unnest($6::text[], $7::text[]) WITH ORDINALITY AS t(connector, operation, n)
             LEFT JOIN writ_breakers b ON b.tenant_id = $1 AND b.space_id = $2 AND b.connector = t.connector AND b.operation = t.operation) AS breakers`,
);
const READ_UNSEALED = statement(
  "t_read_unsealed",
  `SELECT (SELECT json_build_object('seq', seq, 'hash', hash) FROM writ_journal_chain WHERE tenant_id = $1 AND space_id = $2 ORDER BY seq DESC LIMIT 1) AS head,
          (SELECT coalesce(json_agg(u.doc ORDER BY u.pos), '[]') FROM writ_unsealed($1, $2, $3) u) AS entries`,
);

const READ_UNSEALED_MANY = statement(
  "t_read_unsealed_many",
  `SELECT (SELECT json_build_object('seq', seq, 'hash', hash) FROM writ_journal_chain WHERE tenant_id = sc.tid AND space_id = sc.sid ORDER BY seq DESC LIMIT 1) AS head,
          (SELECT coalesce(json_agg(u.doc ORDER BY u.pos), '[]') FROM writ_unsealed(sc.tid, sc.sid, $3) u) AS entries
     FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS sc(tid, sid, n) ORDER BY sc.n`,
);

function entryParams(entries: readonly UnsealedEntry[]): unknown[] {
  return [entries.map((e) => e.id), entries.map((e) => e.type), entries.map((e) => e.at), entries.map(docOf)];
}

function stepParams(s: StepCheckpoint): unknown[] {
  return [s.stepIndex, s.status, s.attemptId, s.connector ?? null, s.externalRef ?? null, docOf(s)];
}

/**
 * A call's arguments as the batch runner reads them (`batchArgs`), checked first for text
 * PostgreSQL cannot store, into arrays too (a string inside one would fail a whole batch's JSON on
 * the server); a value it cannot check or encode is a usage error.
 */
function encodedArgs(c: { fn: PgFunction; params: unknown[] }): unknown[] {
  checkValues(c.params, true);
  try {
    return batchArgs(c.fn, c.params);
  } catch (e) {
    throw new WritError("INVALID_ARGUMENT", e instanceof Error ? e.message : String(e));
  }
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
 * One write transition as a call of its server-side function: the parameters, and how to read
 * what the function returned (which may throw: a begin that found the lease gone).
 */
interface Call {
  fn: PgFunction;
  params: unknown[];
  scope: Scope;
  invocationId: string;
  /**
   * What the call locks first within its scope, for the batch's lock order: the invocation row,
   * or for an admission the idempotency key (a new invocation's id is random: two nodes admitting
   * the same keys must take them in one order).
   */
  lockKey: string;
  /** Journal entries the call writes (the sequencer is hinted after it committed). */
  journals: boolean;
  decode: (out: unknown) => unknown;
}

const fenceParams = (f: { owner: string; token: string } | undefined): unknown[] => [f?.owner ?? null, f?.token ?? null];
const leaseParams = (f: { invocationId: string; owner: string; token: string } | undefined): unknown[] => [...fenceParams(f), f?.invocationId ?? null];

function admitCall(scope: Scope, input: AdmitInput): Call {
  const inv = input.invocation;
  return {
    fn: ADMIT_FN,
    params: [scope.tenantId, scope.spaceId, ...invocationParams({ ...inv, rev: 1 }), ...entryParams(input.entries)],
    scope,
    invocationId: inv.invocationId,
    lockKey: `a\u0000${inv.action}\u0000${inv.idempotencyKey}`,
    journals: input.entries.length > 0,
    decode: (out): AdmitResult => {
      if (out === null || out === undefined) {
        inv.rev = 1;
        return { created: true };
      }
      return { created: false, existing: invocationFromRow(out as InvocationRow) };
    },
  };
}

/**
 * An admission with its claim for an idle worker of this process (migration 21): locks the key
 * first, as an admission does, and claims only the invocation it created (a row no other
 * transaction can see yet), so it waits on no claim.
 */
function admitClaimedCall(scope: Scope, input: AdmitInput, claim: ClaimOptions, breakers: ReadonlyArray<{ connector: string; operation: string }>): Call {
  const admit = admitCall(scope, input);
  return {
    ...admit,
    fn: ADMIT_CLAIMED_FN,
    // The store guard refused a claim without its one lease token.
    params: [...admit.params, claim.owner, claim.now, claim.leaseMs, claim.tokens[0], breakers.map((b) => b.connector), breakers.map((b) => b.operation)],
    decode: (raw): AdmitClaimedResult => {
      const out = raw as { existing?: InvocationRow; created?: boolean; claimed?: ClaimedRow } | null;
      if (out?.existing !== undefined) return { created: false, existing: invocationFromRow(out.existing) };
      input.invocation.rev = 1;
      return out?.claimed ? { created: true, claimed: claimedOf(out.claimed) } : { created: true };
    },
  };
}

function beginCall(scope: Scope, input: BeginInput): Call {
  const e = input.expect;
  return {
    fn: BEGIN_FN,
    params: [
      scope.tenantId,
      scope.spaceId,
      input.step.invocationId,
      ...leaseParams(input.fence),
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
    ],
    scope,
    invocationId: input.step.invocationId,
    lockKey: `i\u0000${input.step.invocationId}`,
    journals: input.entries.length > 0,
    decode: (raw): BeginResult => {
      const out = raw as Found;
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
  };
}

function recordCall(scope: Scope, input: RecordInput): Call {
  const a = input.attempt;
  const inv = input.fence?.invocationId ?? a.invocationId ?? null;
  return {
    fn: RECORD_FN,
    params: [scope.tenantId, scope.spaceId, inv, ...fenceParams(input.fence), a.attemptId, a.invocationId ?? null, a.state, docOf(a), ...entryParams(input.entries)],
    scope,
    invocationId: inv ?? a.attemptId,
    lockKey: `i\u0000${inv ?? a.attemptId}`,
    journals: input.entries.length > 0,
    decode: (out) => Number(out),
  };
}

function advanceCall(scope: Scope, input: AdvanceInput): Call {
  return {
    fn: ADVANCE_FN,
    params: [scope.tenantId, scope.spaceId, input.done.invocationId, ...leaseParams(input.fence), ...stepParams(input.done), ...stepParams(input.next), ...entryParams(input.entries)],
    scope,
    invocationId: input.done.invocationId,
    lockKey: `i\u0000${input.done.invocationId}`,
    journals: input.entries.length > 0,
    decode: () => undefined,
  };
}

function settleCall(scope: Scope, input: SettleInput): Call {
  if (input.invocation && !input.fence) throw new WritError("INVALID_ARGUMENT", "settle: an invocation write needs the fence");
  const inv = input.invocation;
  const rec = input.reconciliation;
  const invCols = inv ? invocationParams(inv).slice(3) : new Array<null>(11).fill(null);
  return {
    fn: SETTLE_FN,
    params: [
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
    ],
    scope,
    invocationId: input.step.invocationId,
    lockKey: `i\u0000${input.step.invocationId}`,
    journals: input.entries.length > 0,
    decode: (rev) => {
      if (rec) rec.rev = 1;
      if (inv && rev !== null && rev !== undefined) {
        inv.rev = Number(rev);
        return { invocationRev: inv.rev };
      }
      return {};
    },
  };
}

/** A claimed invocation with its prepare read, as `writ_claim_next` answers it (under `claimed`). */
interface ClaimedRow {
  inv: InvocationRow;
  steps: StepCheckpoint[];
  authority: Authority | null;
  approval: { rev: number; doc: Approval } | null;
  breakers: Array<BreakerRecord | null>;
}

/**
 * A worker's claim with each claimed invocation's prepare read (migration 16): a batch member
 * like the write transitions, so it commits with whatever else is queued. It locks only rows it
 * can take (`SKIP LOCKED`), so it never waits on another member's row (see `lockOrder`).
 */
function claimCall(opts: ClaimOptions, n: number, breakers: ReadonlyArray<{ connector: string; operation: string }>): Call {
  return {
    fn: CLAIM_NEXT_FN,
    params: [opts.owner, opts.now, opts.leaseMs, n, opts.tokens.slice(0, n), breakers.map((b) => b.connector), breakers.map((b) => b.operation)],
    scope: { tenantId: "", spaceId: "" },
    invocationId: "",
    lockKey: "",
    // The claim writes one journal entry per claimed invocation: hinted by scope after decoding.
    journals: false,
    decode: (out): ClaimedBatch => {
      const o = out as { claimed: ClaimedRow[]; next?: number | string | null };
      return { claimed: o.claimed.map(claimedOf), ...("next" in o ? { nextRunAt: numOrNull(o.next) } : {}) };
    },
  };
}

/** A claimed row as the worker takes it: the invocation, and what it reads before it decides. */
function claimedOf(r: ClaimedRow): ClaimedPrepared {
  const invocation = invocationFromRow(r.inv);
  const prepared: Prepared = {
    steps: r.steps,
    authority: r.authority,
    approval: r.approval ? { ...r.approval.doc, rev: Number(r.approval.rev) } : null,
    invocation: leaseView(invocation),
    breakers: r.breakers,
  };
  return { invocation, prepared };
}

/** The sequencer's seal of one scope, applied only while the sealed head is still `headSeq`. */
function sealCall(scope: Scope, headSeq: number, entries: readonly JournalEntry[]): Call {
  return {
    fn: SEAL_IF_HEAD_FN,
    params: [
      scope.tenantId,
      scope.spaceId,
      String(advisoryKeys(scope, ["journal"])[0]!),
      headSeq,
      entries.map((e) => e.id),
      entries.map((e) => e.seq),
      entries.map((e) => e.hash),
      // Since migration 11 the function reads only each entry's link from these documents: the
      // entry's own document was written once, unsealed, and stays as it is.
      entries.map((e) => JSON.stringify({ prevHash: e.prevHash })),
    ],
    scope,
    invocationId: "",
    lockKey: "j",
    journals: false,
    decode: (out) => Number(out) > 0 || entries.length === 0,
  };
}

function callOf(m: BatchMember): Call {
  switch (m.kind) {
    case "admit":
      return admitCall(m.scope, m.input);
    case "begin":
      return beginCall(m.scope, m.input);
    case "record":
      return recordCall(m.scope, m.input);
    case "advance":
      return advanceCall(m.scope, m.input);
    case "settle":
      return settleCall(m.scope, m.input);
    default:
      throw new WritError("INVALID_ARGUMENT", `batch: unknown member kind ${JSON.stringify((m as { kind?: unknown }).kind)}`);
  }
}

/**
 * Batch members in lock order: by scope (its attempt counter), then what each locks first (its row
 * or key). A claim goes last: it waits on no lock (`SKIP LOCKED`), and after the admissions of
 * its own batch it can take the invocations they queued, in the same commit.
 */
function lockOrder(a: Call, b: Call): number {
  const ca = a.fn === CLAIM_NEXT_FN;
  if (ca !== (b.fn === CLAIM_NEXT_FN)) return ca ? 1 : -1;
  const ka = [a.scope.tenantId, a.scope.spaceId, a.lockKey];
  const kb = [b.scope.tenantId, b.scope.spaceId, b.lockKey];
  for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}

export interface BatchingOptions {
  /** Most calls in one statement; 1 sends each alone. */
  batchMax: number;
  /** How long the first call of a batch waits for company (0: never). */
  batchLingerMs: number;
  /** Batch statements on their way at once (1 by default). */
  batchesInFlight?: number;
}

/**
 * The transitions over `run`, which runs one statement on a pooled connection in autocommit, and
 * `journaled`, the sequencer's hint after a commit that wrote entries. Write transitions go
 * through one queue: a call that finds a batch in flight waits for it and goes with the calls
 * that queued meanwhile, in one `writ_batch_2` statement (docs/stores.md, "Batches"). A settle
 * that carries more work (`within`) runs as the generic composition (`fallback`).
 */
export function postgresTransitions(
  run: <T>(fn: (x: Exec) => Promise<T>) => Promise<T>,
  journaled: (scope: Scope) => void,
  fallback: () => StoreTransitions,
  batching: BatchingOptions = { batchMax: 1, batchLingerMs: 0 },
): StoreTransitions {
  /**
   * One call in its own statement; the function's raised SQLSTATE becomes the generic error. Its
   * values are checked as a batch member's are, before a connection is taken (a refused call does
   * not cost one), and its arrays go as the batch's literals (`encodedArgs`): the driver's own
   * array encoding escapes each document with two regular-expression replaces, several times the cost.
   */
  const single = async (c: Call): Promise<unknown> => {
    let out: unknown;
    const params = encodedArgs(c);
    try {
      const [r] = await run((x) => x.rows<{ out: unknown }>(SINGLE.get(c.fn.fn)!, params));
      out = r?.out ?? null;
    } catch (e) {
      throw mapped(e, c.invocationId);
    }
    const value = c.decode(out);
    if (c.journals) journaled(c.scope);
    return value;
  };

  /** Several calls in one statement and one commit, each in a subtransaction of its own. */
  const many = async (calls: Call[]): Promise<BatchOutcome[]> => {
    if (calls.length === 1) {
      return [await outcomeOf(single(calls[0]!))];
    }
    const outcomes: BatchOutcome[] = new Array<BatchOutcome>(calls.length);
    const sent: number[] = [];
    const args: unknown[][] = new Array<unknown[]>(calls.length);
    calls.forEach((c, i) => {
      try {
        // A value refused or with no array literal fails its member alone.
        args[i] = encodedArgs(c);
        sent.push(i);
      } catch (error) {
        outcomes[i] = { ok: false, error };
      }
    });
    sent.sort((a, b) => lockOrder(calls[a]!, calls[b]!));
    if (sent.length > 0) {
      const payload = JSON.stringify(sent.map((i) => [calls[i]!.fn.fn, args[i]]));
      const [r] = await run((x) => x.rows<{ out: Array<{ ok?: unknown; state?: string; message?: string }> }>(BATCH, [payload]));
      const answers = r?.out ?? [];
      const retry: number[] = [];
      if (answers.length !== sent.length) throw new WritError("STORE_ERROR", `${BATCH_RUNNER} answered ${answers.length} outcomes for ${sent.length} calls`);
      sent.forEach((i, k) => {
        const c = calls[i]!;
        const a = answers[k]!;
        if (a.state !== undefined && RETRY_ALONE.has(a.state)) {
          // A deadlock or serialization failure says nothing about the member itself: it runs
          // again, alone (docs/stores.md, "Batches").
          retry.push(i);
          return;
        }
        if (a.state !== undefined) {
          outcomes[i] = { ok: false, error: mapped(toWritError(Object.assign(new Error(a.message ?? "batch member failed"), { code: a.state })), c.invocationId) };
          return;
        }
        try {
          outcomes[i] = { ok: true, value: c.decode(a.ok ?? null) };
          if (c.journals) journaled(c.scope);
        } catch (error) {
          outcomes[i] = { ok: false, error };
        }
      });
      for (const i of retry) outcomes[i] = await outcomeOf(single(calls[i]!));
    }
    return outcomes;
  };

  const queue = batching.batchMax > 1
    ? coalescer<Call, unknown>(many, { maxBatch: batching.batchMax, lingerMs: batching.batchLingerMs, maxInFlight: batching.batchesInFlight ?? 1, defer: setImmediate, setTimer: (ms, cb) => {
        const t = setTimeout(cb, ms);
        return () => clearTimeout(t);
      } })
    : single;
  const exec = <R>(c: Call): Promise<R> => queue(c) as Promise<R>;
  /** A claim wrote each claimed invocation's journal entry: one hint per scope. */
  const hintClaimed = (claimed: readonly Invocation[]): void => {
    const seen = new Map<string, Scope>();
    for (const inv of claimed) seen.set(`${inv.tenantId}\u0000${inv.spaceId}`, { tenantId: inv.tenantId, spaceId: inv.spaceId });
    for (const sc of seen.values()) journaled(sc);
  };

  return {
    admit: async (scope, input) => exec<AdmitResult>(admitCall(scope, input)),
    async admitClaimed(scope, input, claim, breakers) {
      const out = await exec<AdmitClaimedResult>(admitClaimedCall(scope, input, claim, breakers));
      // The claim wrote the invocation's claimed entry even where the admission wrote none.
      if (out.created && out.claimed !== undefined) journaled(scope);
      return out;
    },
    begin: async (scope, input) => exec<BeginResult>(beginCall(scope, input)),
    record: async (scope, input) => exec<number>(recordCall(scope, input)),
    advance: async (scope, input) => exec<void>(advanceCall(scope, input)),
    async settle(scope, input) {
      if (input.within) return fallback().settle(scope, input);
      return exec<{ invocationRev?: number }>(settleCall(scope, input));
    },
    async batch(members) {
      const outcomes: BatchOutcome[] = new Array<BatchOutcome>(members.length);
      const calls: Call[] = [];
      const at: number[] = [];
      const within: Array<Promise<void>> = [];
      members.forEach((m, i) => {
        if (m.kind === "settle" && m.input.within) {
          within.push(outcomeOf(fallback().settle(m.scope, m.input)).then((o) => void (outcomes[i] = o)));
          return;
        }
        try {
          calls.push(callOf(m));
          at.push(i);
        } catch (error) {
          outcomes[i] = { ok: false, error };
        }
      });
      const applied = calls.length > 0 ? await many(calls) : [];
      applied.forEach((o, k) => (outcomes[at[k]!] = o));
      await Promise.all(within);
      return outcomes;
    },

    async prepare(scope, input) {
      const targets = input.breakers ?? [];
      const [r] = await run((x) =>
        x.rows<{
          steps: StepCheckpoint[];
          authority: Authority | null;
          approval: { rev: number; doc: Approval } | null;
          invocation: { status: Invocation["status"]; leaseOwner: string | null; leaseToken: string | null } | null;
          breakers: Array<BreakerRecord | null>;
        }>(PREPARE, [scope.tenantId, scope.spaceId, input.invocationId, input.authorityRef, input.approvalId ?? null, targets.map((t) => t.connector), targets.map((t) => t.operation)]),
      );
      const inv = r!.invocation;
      return {
        steps: r!.steps,
        authority: r!.authority,
        approval: r!.approval ? { ...r!.approval.doc, rev: Number(r!.approval.rev) } : null,
        invocation: inv === null ? null : { status: inv.status, ...(inv.leaseOwner !== null ? { leaseOwner: inv.leaseOwner } : {}), ...(inv.leaseToken !== null ? { leaseToken: inv.leaseToken } : {}) },
        breakers: r!.breakers,
      };
    },

    async claim(opts) {
      const n = Math.min(opts.limit, opts.tokens.length);
      if (n === 0) return [];
      const [r] = await run((x) => x.rows<{ out: InvocationRow[] }>(CLAIM, [opts.owner, opts.now, opts.leaseMs, n, opts.tokens.slice(0, n)]));
      const claimed = r!.out.map(invocationFromRow);
      hintClaimed(claimed);
      return claimed;
    },

    async claimPrepared(opts, breakers) {
      const n = Math.min(opts.limit, opts.tokens.length);
      if (n === 0) return { claimed: [] };
      const out = await exec<ClaimedBatch>(claimCall(opts, n, breakers));
      hintClaimed(out.claimed.map((o) => o.invocation));
      return out;
    },

    async readUnsealed(scope, limit) {
      const [r] = await run((x) => x.rows<{ head: { seq: number | string; hash: string } | null; entries: UnsealedEntry[] }>(READ_UNSEALED, [scope.tenantId, scope.spaceId, limit]));
      return { head: r!.head ? { seq: Number(r!.head.seq), hash: r!.head.hash } : null, entries: r!.entries };
    },

    async readUnsealedMany(scopes, limit) {
      if (scopes.length === 0) return [];
      const rows = await run((x) =>
        x.rows<{ head: { seq: number | string; hash: string } | null; entries: UnsealedEntry[] }>(READ_UNSEALED_MANY, [scopes.map((sc) => sc.tenantId), scopes.map((sc) => sc.spaceId), limit]),
      );
      return rows.map((r) => ({ head: r.head ? { seq: Number(r.head.seq), hash: r.head.hash } : null, entries: r.entries }));
    },

    async sealIfHeadMany(seals) {
      const calls = seals.map(({ scope, headSeq, entries }) => sealCall(scope, headSeq, entries));
      return (calls.length > 0 ? many(calls) : Promise.resolve([])) as Promise<Array<BatchOutcome<boolean>>>;
    },

    async sealIfHead(scope, headSeq, entries) {
      if (entries.length === 0) return true;
      return (await single(sealCall(scope, headSeq, entries))) as boolean;
    },
  };
}
