/**
 * The per-scope hash-chained journal (docs/journal.md). `hash = sha256(JCS(entry without hash))`; each
 * entry's `prevHash` is the previous entry's hash (null for the first). Deterministic entry ids
 * make repeated writes idempotent. Signed checkpoints of (scope, seq, head hash) let an auditor
 * detect truncation as well as tampering.
 */
import { canonicalize, canonicalizeFields, parseJsonStrict } from "./canonical.js";
import { base64url, fromBase64url, fromUtf8, utf8 } from "./encoding.js";
import { readArchive, type ArchivedSegment, type ArchiveTarget, type SegmentHeader } from "./archive-format.js";
import { createKeyring, type Keyring, type SigningKey } from "./keyring.js";
import type { CryptoPort, PublicJwk } from "./ports.js";
import { outcomeOf, type BatchOutcome } from "./batch.js";
import { WritError } from "./errors.js";
import type { Store, StoreTx } from "./store.js";
import type { AuthorityStatus, InvocationStatus, Json, JournalCheckpoint, JournalEntry, Scope, UnsealedEntry } from "./types.js";


export interface JournalDraft {
  id: string;
  /** Writ's own entries are one of {@link JournalEntryType} (built by {@link draft}); the journal takes any type. */
  type: string;
  at: number;
  refs?: { [k: string]: string };
  data?: Json;
}

/** Every type of journal entry Writ writes (docs/journal.md lists what each records). */
export type JournalEntryType =
  | "attempt.refused"
  | "attempt.duplicate"
  | "attempt.settled"
  | "decision.consumed"
  | "step.succeeded"
  | "invocation.submitted"
  | "invocation.claimed"
  | `invocation.${InvocationStatus}`
  | "approval.opened"
  | "approval.vote"
  | "approval.granted"
  | "approval.denied"
  | "approval.revoked"
  | "approval.expired"
  | "approval.closed"
  | "completion.applied"
  | "completion.early"
  | "completion.contradicted"
  | "completion.evidence"
  | "completion.expired"
  | "reconciliation.opened"
  | "reconciliation.resolved"
  | "key.resolved"
  | `authority.${AuthorityStatus}`
  | "authority.created"
  | "policy.activated"
  | "api_key.created"
  | "api_key.delegation_set"
  | "breaker.opened";

/**
 * The one builder of journal drafts: the entry's id is its type and the key parts that make it
 * unique in the scope (`type:part:part…`), so a transition written twice writes its entry once.
 */
export function draft(type: JournalEntryType, key: ReadonlyArray<string | number>, at: number, refs: { [k: string]: string }, data?: Json): JournalDraft {
  return { id: [type, ...key].join(":"), type, at, refs, ...(data !== undefined ? { data } : {}) };
}

/**
 * The hash of an entry (the `hash` field itself excluded). `strict` canonicalises with every input
 * check (for entries read back from outside, e.g. an export under audit); the default trusts data
 * Writ built itself.
 */
export function entryHash(crypto: CryptoPort, e: Omit<JournalEntry, "hash">, strict = false): string {
  if (!strict) {
    // The hot path (every seal): the body's keys in canonical order, no object built, no sort.
    const text = canonicalizeFields(ENTRY_KEYS, [e.at, e.data, e.id, e.prevHash, e.refs, e.seq, e.spaceId, e.tenantId, e.type]);
    return "sha256:" + base64url(crypto.sha256(text));
  }
  const body = {
    tenantId: e.tenantId,
    spaceId: e.spaceId,
    seq: e.seq,
    id: e.id,
    at: e.at,
    type: e.type,
    refs: e.refs,
    data: e.data,
    prevHash: e.prevHash,
  };
  return "sha256:" + base64url(crypto.sha256(canonicalize(body)));
}

/** The hashed fields of an entry, in canonical (UTF-16 code unit) order. */
const ENTRY_KEYS = ["at", "data", "id", "prevHash", "refs", "seq", "spaceId", "tenantId", "type"] as const;

/** Drafts as the unsealed entries a transition writes (a repeated id is kept once, first wins). */
export function unsealedEntries(scope: Scope, drafts: readonly JournalDraft[]): UnsealedEntry[] {
  const entries: UnsealedEntry[] = [];
  const seen = new Set<string>();
  for (const d of drafts) {
    if (seen.has(d.id)) continue;
    seen.add(d.id);
    entries.push({ tenantId: scope.tenantId, spaceId: scope.spaceId, id: d.id, at: d.at, type: d.type, refs: d.refs ?? {}, data: d.data ?? null });
  }
  return entries;
}

/**
 * Writes drafts to the scope's journal inside `tx`, unsealed: durable when `tx` commits, chained
 * later by the sequencer (`sealPending`). Takes no journal lock and reads no head, so transitions
 * of one scope never wait on each other for the chain. Drafts whose id is already in the scope's
 * journal (sealed or not) are skipped (idempotent re-writes). Returns the entries written.
 */
export async function appendJournal(tx: StoreTx, _crypto: CryptoPort, scope: Scope, drafts: JournalDraft[]): Promise<UnsealedEntry[]> {
  if (drafts.length === 0) return [];
  const entries = unsealedEntries(scope, drafts);
  const written = new Set(await tx.insertUnsealed(scope, entries));
  return entries.filter((e) => written.has(e.id));
}

/** Most entries one sealing transaction chains. */
export const SEAL_BATCH = 500;

/**
 * The sequencer's one step for one scope, in a transaction of its own: takes the scope's journal
 * lock, reads the sealed head, then chains the unsealed entries this transaction can see, in the
 * order they were written, and seals them. On PostgreSQL the lock is taken in its own statement,
 * so the reads after it see every seal committed before it was granted. Returns how many entries
 * it sealed (a full batch means more may be waiting).
 */
export async function sealPending(tx: StoreTx, crypto: CryptoPort, scope: Scope, limit = SEAL_BATCH): Promise<number> {
  await tx.lock(scope, ["journal"]);
  const pending = await tx.listUnsealed(scope, { limit });
  if (pending.length === 0) return 0;
  const sealed = chain(crypto, scope, await tx.journalHead(scope), pending);
  await tx.sealJournal(scope, sealed);
  return sealed.length;
}

/** Unsealed entries chained after `head`, in the order given. */
export function chain(crypto: CryptoPort, scope: Scope, head: { seq: number; hash: string } | null, pending: readonly UnsealedEntry[]): JournalEntry[] {
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? null;
  const sealed: JournalEntry[] = [];
  for (const u of pending) {
    seq += 1;
    // One object per entry: its hash is filled in after it is computed (the hash does not read it).
    const e: JournalEntry = { tenantId: scope.tenantId, spaceId: scope.spaceId, seq, id: u.id, at: u.at, type: u.type, refs: u.refs, data: u.data, prevHash, hash: "" };
    const hash = entryHash(crypto, e);
    e.hash = hash;
    sealed.push(e);
    prevHash = hash;
  }
  return sealed;
}

/** Seals everything of `scope` that is committed and visible now, batch after batch. */
export async function sealScopeNow(store: Store, crypto: CryptoPort, scope: Scope): Promise<number> {
  const t = store.transitions;
  let total = 0;
  for (let lost = 0; ; ) {
    let n: number;
    if (t?.readUnsealed !== undefined && t.sealIfHead !== undefined) {
      // Optimistic: chain what was read, and seal only if no one sealed since (else read again).
      const { head, entries } = await t.readUnsealed(scope, SEAL_BATCH);
      const sealed = chain(crypto, scope, head, entries);
      if (sealed.length > 0 && !(await t.sealIfHead(scope, head?.seq ?? 0, sealed))) {
        if (++lost > 100) throw new WritError("STALE", "the journal head kept moving while sealing");
        continue;
      }
      n = sealed.length;
    } else {
      n = await store.transact((tx) => sealPending(tx, crypto, scope));
    }
    total += n;
    if (n < SEAL_BATCH) return total;
  }
}

/**
 * Seals several scopes in rounds of two statements (the store's `readUnsealedMany` and
 * `sealIfHeadMany`; scope by scope with `sealScopeNow` on a store without them): one outcome per
 * scope given (a repeated scope shares its outcome), each scope sealed or failing alone.
 */
export async function sealScopesNow(store: Store, crypto: CryptoPort, scopes: readonly Scope[]): Promise<Array<BatchOutcome<number>>> {
  const key = (sc: Scope): string => JSON.stringify([sc.tenantId, sc.spaceId]);
  const t = store.transitions;
  const outcome = new Map<string, BatchOutcome<number>>();
  const unique = [...new Map(scopes.map((sc) => [key(sc), { tenantId: sc.tenantId, spaceId: sc.spaceId }])).values()];
  if (t?.readUnsealedMany === undefined || t.sealIfHeadMany === undefined) {
    for (const sc of unique) outcome.set(key(sc), await outcomeOf(sealScopeNow(store, crypto, sc)));
    return scopes.map((sc) => outcome.get(key(sc))!);
  }
  const total = new Map<string, number>(unique.map((sc) => [key(sc), 0]));
  const lost = new Map<string, number>();
  let pending = unique;
  try {
    while (pending.length > 0) {
      const reads = await t.readUnsealedMany(pending, SEAL_BATCH);
      const chained = pending.map((scope, i) => ({ scope, head: reads[i]!.head, sealed: chain(crypto, scope, reads[i]!.head, reads[i]!.entries) }));
      const toSeal = chained.filter((c) => c.sealed.length > 0);
      const answers = toSeal.length > 0 ? await t.sealIfHeadMany(toSeal.map((c) => ({ scope: c.scope, headSeq: c.head?.seq ?? 0, entries: c.sealed }))) : [];
      const next: Scope[] = [];
      toSeal.forEach((c, i) => {
        const k = key(c.scope);
        const a = answers[i]!;
        if (!a.ok) {
          outcome.set(k, a);
        } else if (a.value) {
          total.set(k, total.get(k)! + c.sealed.length);
          if (c.sealed.length >= SEAL_BATCH) next.push(c.scope);
        } else {
          // Another sequencer sealed first: read again.
          const n = (lost.get(k) ?? 0) + 1;
          lost.set(k, n);
          if (n > 100) outcome.set(k, { ok: false, error: new WritError("STALE", "the journal head kept moving while sealing") });
          else next.push(c.scope);
        }
      });
      pending = next;
    }
  } catch (error) {
    // The round itself failed (the store is unreachable): every scope still pending fails with it.
    for (const sc of pending) outcome.set(key(sc), { ok: false, error });
  }
  return scopes.map((sc) => outcome.get(key(sc)) ?? { ok: true, value: total.get(key(sc))! });
}

const CHECKPOINT_TYP = "writ-checkpoint+jws";

interface CheckpointStatement {
  tenantId: string;
  spaceId: string;
  seq: number;
  headHash: string;
  at: number;
}

/** Signs a checkpoint of the scope's sealed head (null while nothing is sealed). */
export async function writeCheckpoint(tx: StoreTx, crypto: CryptoPort, scope: Scope, key: SigningKey, at: number): Promise<JournalCheckpoint | null> {
  await tx.lock(scope, ["journal"]);
  const head = await tx.journalHead(scope);
  if (!head) return null;
  const stmt: CheckpointStatement = { tenantId: scope.tenantId, spaceId: scope.spaceId, seq: head.seq, headHash: head.hash, at };
  const cp: JournalCheckpoint = { ...stmt, signature: signStatement(crypto, key, stmt) };
  await tx.insertCheckpoint(scope, cp);
  return cp;
}

function signStatement(crypto: CryptoPort, key: SigningKey, stmt: CheckpointStatement): string {
  const header = { alg: "EdDSA", kid: key.kid, typ: CHECKPOINT_TYP };
  const input = `${base64url(utf8(JSON.stringify(header)))}.${base64url(utf8(canonicalize(stmt)))}`;
  return `${input}.${base64url(crypto.signEd25519(key.privateJwk, utf8(input)))}`;
}

function checkStatementSignature(crypto: CryptoPort, keyring: Keyring, cp: JournalCheckpoint): string | null {
  const parts = typeof cp.signature === "string" ? cp.signature.split(".") : [];
  if (parts.length !== 3) return "signature is not JWS compact";
  const [h, p, s] = parts as [string, string, string];
  const hb = fromBase64url(h);
  const pb = fromBase64url(p);
  const sig = fromBase64url(s);
  if (!hb || !pb || !sig) return "signature is not base64url";
  let header: unknown;
  let stmt: unknown;
  try {
    header = parseJsonStrict(fromUtf8(hb));
    stmt = parseJsonStrict(fromUtf8(pb));
  } catch {
    return "signature parts are not JSON";
  }
  // A forged header may be any JSON (null included): report it, never throw.
  if (typeof header !== "object" || header === null) return "unexpected checkpoint header";
  const { alg, kid, typ } = header as { alg?: unknown; kid?: unknown; typ?: unknown };
  if (alg !== "EdDSA" || typ !== CHECKPOINT_TYP || typeof kid !== "string") return "unexpected checkpoint header";
  const key = keyring.get(kid);
  if (!key) return `checkpoint key ${kid} is unknown`;
  if (key.status === "revoked") return `checkpoint key ${kid} is revoked`;
  if (!crypto.verifyEd25519(key.publicJwk, utf8(`${h}.${p}`), sig)) return "checkpoint signature does not verify";
  let expected: string;
  try {
    expected = canonicalize({ tenantId: cp.tenantId, spaceId: cp.spaceId, seq: cp.seq, headHash: cp.headHash, at: cp.at });
  } catch {
    // A stored checkpoint row with a missing or non-JSON field cannot match what was signed.
    return "checkpoint fields are not plain JSON";
  }
  if (canonicalize(stmt) !== expected) return "checkpoint fields differ from the signed statement";
  return null;
}

/** Every kind of journal finding (docs/journal.md; the `segment_*` and `archive_*` kinds: docs/archives.md). */
export const JOURNAL_PROBLEM_KINDS = [
  "hash_mismatch",
  "broken_link",
  "gap",
  "scope_mismatch",
  "truncated",
  "checkpoint_mismatch",
  "checkpoint_signature",
  "unsealed_overdue",
  "corrupt_row",
  "segment_missing",
  "segment_misplaced",
  "segment_overlap",
  "segment_truncated",
  "segment_corrupt",
  "archive_mismatch",
  "witness_mismatch",
  "witness_ahead",
  "witness_invalid",
  "witness_unreachable",
] as const;
export type JournalProblemKind = (typeof JOURNAL_PROBLEM_KINDS)[number];

/** Why a checkpoint's signature does not hold under `keyring` (null when it does). Never throws. */
export function checkpointSignatureProblem(crypto: CryptoPort, keyring: Keyring, cp: JournalCheckpoint): string | null {
  try {
    return typeof cp === "object" && cp !== null ? checkStatementSignature(crypto, keyring, cp) : "not a checkpoint";
  } catch {
    return "checkpoint is corrupt";
  }
}

export interface JournalProblem {
  seq?: number;
  kind: JournalProblemKind;
  /** For `unsealed_overdue`: the entry's id (it has no seq yet). */
  id?: string;
  /** The archive segment the finding is in (its name in the archive target), when it is in one. */
  segment?: string;
  /** The checkpoint witness the finding is about (docs/archives.md, Checkpoint witnesses). */
  witness?: string;
  message: string;
}

/**
 * What a store returns for a journal row it cannot read as an entry (unparseable JSON, not an
 * object, no integer seq): a placeholder with the row's scope and seq and why, which verification
 * reports as a `corrupt_row` finding instead of throwing.
 */
export function corruptJournalRow(scope: Scope, seq: number, why: string): JournalEntry {
  return { tenantId: scope.tenantId, spaceId: scope.spaceId, seq, id: "", at: 0, type: "", refs: {}, data: null, prevHash: null, hash: "", corrupt: why } as JournalEntry;
}

/** A row as a store read it: the entry, or a `corruptJournalRow` placeholder. */
export function journalRowOf(scope: Scope, seq: number, doc: unknown): JournalEntry {
  let v = doc;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return corruptJournalRow(scope, seq, "unparseable JSON");
    }
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) return corruptJournalRow(scope, seq, "not a JSON object");
  const e = v as { seq?: unknown };
  if (typeof e.seq !== "number" || !Number.isSafeInteger(e.seq)) return corruptJournalRow(scope, seq, "seq is missing or not an integer");
  return v as JournalEntry;
}

/** Why `e` is not a well-formed entry (wrong types, missing fields), or null. Never throws. */
function entryShapeProblem(e: unknown): string | null {
  try {
    if (typeof e !== "object" || e === null || Array.isArray(e)) return "not a JSON object";
    const o = e as Record<string, unknown>;
    if (typeof o.corrupt === "string") return o.corrupt;
    const wrong: string[] = [];
    for (const k of ["tenantId", "spaceId", "id", "type", "hash"]) if (typeof o[k] !== "string") wrong.push(k);
    if (typeof o.seq !== "number" || !Number.isSafeInteger(o.seq) || o.seq < 1) wrong.push("seq");
    if (typeof o.at !== "number" || !Number.isFinite(o.at)) wrong.push("at");
    if (typeof o.refs !== "object" || o.refs === null || Array.isArray(o.refs)) wrong.push("refs");
    if (!("data" in o)) wrong.push("data");
    if (o.prevHash !== null && typeof o.prevHash !== "string") wrong.push("prevHash");
    return wrong.length > 0 ? `missing or wrong-typed field(s): ${wrong.join(", ")}` : null;
  } catch {
    return "unreadable";
  }
}

export interface JournalVerification {
  ok: boolean;
  entries: number;
  checkpoints: number;
  headSeq: number;
  headHash: string | null;
  /**
   * Entries written and not sealed yet when verified (not a problem unless older than the bound);
   * set by `verifyStoredJournal`, absent when verifying exported entries.
   */
  unsealed?: number;
  /** What of the chain came from archive segments (set when archives were verified with the database). */
  archive?: ArchiveSummary;
  /**
   * Kids of checkpoints verified with a key carried by the archive or export itself (only with
   * `trustArchivedKeys`): such a checkpoint proves the data intact and not cut, not who wrote it.
   */
  keysFromArchive?: string[];
  problems: JournalProblem[];
}

export interface ArchiveSummary {
  /** Segments read. */
  segments: number;
  /** The last seq the segments hold (0: none). */
  archivedThrough: number;
  /** The segments' size in bytes. */
  bytes: number;
  /** The first entry still in the database (null when it holds none). */
  firstLiveSeq: number | null;
}

/**
 * Where a chain being verified starts, when not at seq 1 (the entries before were pruned, or an
 * export starts later): its first seq and the hash of the entry before it (undefined: unknown, so
 * the first entry's link is not judged).
 */
export interface ChainStart {
  seq: number;
  prevHash?: string | null;
}

/** What `verifyStoredJournal` checks unsealed entries against. */
export interface UnsealedCheck {
  /** The verifier's current time (epoch ms). */
  now: number;
  /** The sequencer's bound: an entry unsealed for longer than this is a finding. */
  sealWithinMs: number;
}

/**
 * Findings for unsealed entries: each one whose `at` is more than `sealWithinMs` before `now`
 * is `unsealed_overdue` (the sequencer should have sealed it by now).
 */
export function checkUnsealed(unsealed: readonly UnsealedEntry[], check: UnsealedCheck): JournalProblem[] {
  const problems: JournalProblem[] = [];
  for (const u of unsealed) {
    const age = check.now - u.at;
    if (age > check.sealWithinMs) {
      problems.push({ kind: "unsealed_overdue", id: u.id, message: `entry ${u.id} (${u.type}) is unsealed ${age} ms after it was written (bound ${check.sealWithinMs} ms)` });
    }
  }
  return problems;
}

/**
 * Recomputes the chain of one scope's entries (ascending seq from 1) and checks every signed
 * checkpoint against it. Detects edited entries, reordering, gaps, and a tail cut below a checkpoint.
 */
export function verifyJournal(
  crypto: CryptoPort,
  keyring: Keyring,
  scope: Scope,
  entries: readonly JournalEntry[],
  checkpoints: readonly JournalCheckpoint[] = [],
  start?: ChainStart,
): JournalVerification {
  const problems: JournalProblem[] = [];
  const hashes = new Map<number, string>();
  let prev: string | null = start?.prevHash ?? null;
  let expectSeq = start?.seq ?? 1;
  // After a corrupt row the next link cannot be judged (its predecessor's hash is unknown); neither
  // can the first one of a chain that starts later without the hash before it.
  let linkKnown = start === undefined || start.prevHash !== undefined;
  if (start !== undefined && typeof start.prevHash === "string") hashes.set(start.seq - 1, start.prevHash);
  let position = 0;
  for (const e of entries) {
    position++;
    const shape = entryShapeProblem(e);
    if (shape !== null) {
      const raw = (e as { seq?: unknown } | null)?.seq;
      const seq = typeof raw === "number" && Number.isSafeInteger(raw) ? raw : expectSeq;
      problems.push({ seq, kind: "corrupt_row", message: `row ${seq} of ${scope.tenantId}/${scope.spaceId} (entry ${position}) is corrupt: ${shape}` });
      expectSeq = seq + 1;
      const h = (e as { hash?: unknown } | null)?.hash;
      if (typeof h === "string" && h.length > 0) hashes.set(seq, h);
      prev = null;
      linkKnown = false;
      continue;
    }
    if (e.tenantId !== scope.tenantId || e.spaceId !== scope.spaceId) {
      problems.push({ seq: e.seq, kind: "scope_mismatch", message: `entry ${e.seq} belongs to another scope` });
    }
    if (e.seq !== expectSeq) {
      problems.push({ seq: e.seq, kind: "gap", message: `expected seq ${expectSeq}, found ${e.seq}` });
    }
    expectSeq = e.seq + 1;
    const { hash, ...rest } = e;
    let computed: string;
    try {
      computed = entryHash(crypto, rest, true);
    } catch {
      computed = "unhashable";
    }
    if (computed !== hash) problems.push({ seq: e.seq, kind: "hash_mismatch", message: `entry ${e.seq} does not match its hash (edited)` });
    if (linkKnown && e.prevHash !== prev) problems.push({ seq: e.seq, kind: "broken_link", message: `entry ${e.seq} does not link to the entry before it` });
    linkKnown = true;
    hashes.set(e.seq, hash);
    prev = hash;
  }
  const lastRaw = entries.length > 0 ? entries[entries.length - 1]! : null;
  const last = lastRaw && entryShapeProblem(lastRaw) === null ? lastRaw : null;
  for (const cp of checkpoints) {
    let sigProblem: string | null;
    try {
      sigProblem = typeof cp === "object" && cp !== null ? checkStatementSignature(crypto, keyring, cp) : "not a checkpoint row";
    } catch {
      sigProblem = "checkpoint row is corrupt";
    }
    if (sigProblem) {
      problems.push({ seq: cp.seq, kind: "checkpoint_signature", message: `checkpoint at ${cp.seq}: ${sigProblem}` });
      continue;
    }
    if (cp.tenantId !== scope.tenantId || cp.spaceId !== scope.spaceId) {
      problems.push({ seq: cp.seq, kind: "scope_mismatch", message: `checkpoint at ${cp.seq} belongs to another scope` });
      continue;
    }
    const h = hashes.get(cp.seq);
    // A checkpoint of an entry before the chain's start (pruned, or not exported) cannot be judged here.
    if (h === undefined && start !== undefined && cp.seq < start.seq) continue;
    if (h === undefined) {
      problems.push({ seq: cp.seq, kind: "truncated", message: `signed checkpoint at seq ${cp.seq} but the journal ends at ${last?.seq ?? 0}: entries were removed` });
    } else if (h !== cp.headHash) {
      problems.push({ seq: cp.seq, kind: "checkpoint_mismatch", message: `entry ${cp.seq} differs from the signed checkpoint` });
    }
  }
  return {
    ok: problems.length === 0,
    entries: entries.length,
    checkpoints: checkpoints.length,
    headSeq: last?.seq ?? 0,
    headHash: last?.hash ?? null,
    problems,
  };
}

/**
 * Reads a scope's whole sealed journal (in pages) and its checkpoints from a store and verifies
 * them; with `unsealed`, also reports every entry still unsealed longer than the bound. Unsealed
 * entries are read first: one sealed meanwhile then shows in the chain too, never in neither.
 * With `archive`, the scope's archived segments and the database are verified as one chain
 * (`verifyArchivedChain`); without it, a journal whose archived entries were pruned is verified
 * from its first live entry (its link to the archive unjudged), and entries missing above the
 * archive watermark are a `gap`.
 */
export async function verifyStoredJournal(
  store: Store,
  crypto: CryptoPort,
  keyring: Keyring,
  scope: Scope,
  unsealed?: UnsealedCheck,
  pageSize = 1000,
  archive?: ArchiveTarget,
): Promise<JournalVerification> {
  const pending = await store.transact((tx) => tx.listUnsealed(scope));
  const entries = await readWholeJournal(store, scope, pageSize);
  const [checkpoints, watermark] = await store.transact(async (tx) => [await tx.listCheckpoints(scope), await tx.journalArchivedThrough(scope)] as const);
  const v =
    archive !== undefined
      ? verifyArchivedChain(crypto, keyring, scope, await readArchive(archive, scope), entries, checkpoints, watermark)
      : verifyJournal(crypto, keyring, scope, entries, checkpoints, liveStart(entries, watermark));
  const sealedIds = new Set(entries.map((e) => e.id));
  const still = pending.filter((u) => !sealedIds.has(u.id));
  const late = unsealed === undefined ? [] : checkUnsealed(still, unsealed);
  return { ...v, ok: v.ok && late.length === 0, unsealed: still.length, problems: [...v.problems, ...late] };
}

/** Where a database's chain starts when its archived entries were pruned (undefined: at seq 1). */
export function liveStart(entries: readonly JournalEntry[], archivedThrough: number): ChainStart | undefined {
  const first = entries[0]?.seq;
  if (typeof first !== "number" || first <= 1) return undefined;
  return { seq: Math.min(first, archivedThrough + 1) };
}

/**
 * The verifier's keyring, and with `trust` the keys archived (or exported) with the checkpoints for
 * a kid it does not know. Those keys came with the data they vouch for: whoever could rewrite the
 * data could put their own key beside it, so they are used only when the caller says so, and every
 * kid used that way is recorded in `used` (reported as `keysFromArchive`).
 */
function withArchivedKeys(keyring: Keyring, keys: readonly PublicJwk[], trust: boolean, used: Set<string>): Keyring {
  if (!trust) return keyring;
  const archived = createKeyring();
  for (const k of keys) {
    try {
      if (typeof k?.kid === "string" && keyring.get(k.kid) === undefined) archived.add({ kid: k.kid, publicJwk: k });
    } catch {
      // A malformed or conflicting archived key verifies nothing: its checkpoints are reported.
    }
  }
  return {
    ...keyring,
    get: (kid) => {
      const own = keyring.get(kid);
      if (own !== undefined) return own;
      const k = archived.get(kid);
      if (k !== undefined) used.add(kid);
      return k;
    },
  };
}

/**
 * Verifies a scope's archived segments (ascending, from `readArchive`) and the entries still in the
 * database (`live`) as one chain, with every checkpoint of both (docs/archives.md). Besides the
 * chain's own findings, each tagged with the segment it is in: a range of seqs in no segment and
 * not in the database, or archived per the watermark but in no segment (`segment_missing`); a
 * segment that holds other seqs or another scope than its name states (`segment_misplaced`), one
 * overlapping the one before (`segment_overlap`), one with fewer entries than its header states
 * (`segment_truncated`), one that cannot be read (`segment_corrupt`); an entry the database still
 * holds that differs from its archived copy (`archive_mismatch`). A checkpoint is verified with the
 * verifier's keyring; with `trustArchivedKeys`, for a kid it does not know, with the keys archived
 * beside it (each such kid listed in `keysFromArchive`). Without it such a checkpoint is a
 * `checkpoint_signature` problem: whoever could rewrite an archive could sign it with a key of their own.
 */
export function verifyArchivedChain(
  crypto: CryptoPort,
  keyring: Keyring,
  scope: Scope,
  segments: readonly ArchivedSegment[],
  live: readonly JournalEntry[],
  liveCheckpoints: readonly JournalCheckpoint[],
  archivedThrough = 0,
  opts: { trustArchivedKeys?: boolean } = {},
): JournalVerification {
  const problems: JournalProblem[] = [];
  const combined: JournalEntry[] = [];
  const segmentOf = new Map<number, string>();
  const cps: JournalCheckpoint[] = [];
  const cpSegment = new Map<number, string>();
  const keys: PublicJwk[] = [];
  // The first seq after each range already reported missing: the chain's gap there is that finding.
  const after = new Set<number>();
  // Ranges already reported (missing or unreadable): a checkpoint inside one cannot be judged.
  const gone: Array<[number, number]> = [];
  const missing = (from: number, to: number, message: string): void => {
    problems.push({ seq: from, kind: "segment_missing", message });
    after.add(to + 1);
    gone.push([from, to]);
  };
  let next = 1;
  let bytes = 0;
  const segHash = new Map<number, string>();
  const archivedHashOf = (seq: number): string | undefined => segHash.get(seq);
  for (const s of segments) {
    // Two archivers that raced write segments from one seq through different checkpoints: a later
    // one that agrees with what came before only adds what lies past it.
    // One that holds only what came before is a harmless duplicate.
    let skipThrough = 0;
    if (s.fromSeq < next) {
      const agrees = s.ok && s.segment.header.fromSeq === s.fromSeq && s.segment.header.throughSeq === s.throughSeq && s.segment.entries.every((e) => e.seq >= next || archivedHashOf(e.seq) === e.hash);
      if (!agrees) {
        problems.push({ seq: s.fromSeq, kind: "segment_overlap", segment: s.name, message: `${s.name} overlaps the segment before it (which ends at seq ${next - 1}) and differs from it` });
        continue;
      }
      if (s.throughSeq < next) continue;
      skipThrough = next - 1;
    }
    if (!s.ok) {
      problems.push({ seq: s.fromSeq, kind: "segment_corrupt", segment: s.name, message: s.error });
      after.add(s.throughSeq + 1);
      gone.push([s.fromSeq, s.throughSeq]);
      next = s.throughSeq + 1;
      continue;
    }
    const { header: h, entries } = s.segment;
    if (h.kind !== "segment" || h.tenantId !== scope.tenantId || h.spaceId !== scope.spaceId || h.fromSeq !== s.fromSeq || h.throughSeq !== s.throughSeq) {
      problems.push({ seq: s.fromSeq, kind: "segment_misplaced", segment: s.name, message: `${s.name} holds seqs ${h.fromSeq}..${h.throughSeq} of ${h.tenantId}/${h.spaceId}, not what its name states` });
      continue;
    }
    if (s.fromSeq > next) missing(next, s.fromSeq - 1, `seqs ${next}..${s.fromSeq - 1} are in no archive segment`);
    const last = entries[entries.length - 1];
    if (entries.length !== h.entries || last?.seq !== h.throughSeq || last.hash !== h.headHash) {
      problems.push({
        seq: s.throughSeq,
        kind: "segment_truncated",
        segment: s.name,
        message: `${s.name} should hold ${h.entries} entries through seq ${h.throughSeq} but holds ${entries.length}${last !== undefined ? ` ending at seq ${String(last.seq)}` : ""}`,
      });
    }
    for (const e of entries) {
      if (typeof e.seq === "number" && e.seq <= skipThrough) continue;
      if (typeof e.seq === "number") {
        segmentOf.set(e.seq, s.name);
        segHash.set(e.seq, e.hash);
      }
      combined.push(e);
    }
    for (const cp of h.checkpoints) {
      cps.push(cp);
      // A checkpoint belongs to the segment it closes (a later segment repeats it as its start).
      if (typeof cp?.seq === "number" && (!cpSegment.has(cp.seq) || cp.seq === s.throughSeq)) cpSegment.set(cp.seq, s.name);
    }
    keys.push(...h.keys);
    bytes += s.bytes;
    next = s.throughSeq + 1;
  }
  const archivedEnd = next - 1;
  if (archivedThrough > archivedEnd) missing(archivedEnd + 1, archivedThrough, `the archive watermark is at seq ${archivedThrough} but the archive segments end at seq ${archivedEnd}`);
  const archivedHash = new Map(combined.map((e) => [e.seq, e.hash]));
  let firstLiveSeq: number | null = null;
  for (const e of live) {
    const seq = typeof e.seq === "number" ? e.seq : Number.MAX_SAFE_INTEGER;
    firstLiveSeq ??= seq;
    if (seq <= archivedEnd) {
      const a = archivedHash.get(seq);
      if (a !== undefined && a !== e.hash) problems.push({ seq, kind: "archive_mismatch", segment: segmentOf.get(seq), message: `entry ${seq} in the database differs from its archived copy` });
      continue;
    }
    if (seq > next) {
      // Within the range the watermark claims archived: already reported above.
      if (next > archivedEnd && seq - 1 <= archivedThrough) after.add(seq);
      else missing(next, seq - 1, `seqs ${next}..${seq - 1} are neither archived nor in the database`);
    }
    next = seq + 1;
    combined.push(e);
  }
  const seen = new Set<string>();
  const checkpoints = [...cps, ...liveCheckpoints].filter((cp) => {
    const k = typeof cp?.signature === "string" ? cp.signature : JSON.stringify(cp);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  const used = new Set<string>();
  const v = verifyJournal(crypto, withArchivedKeys(keyring, keys, opts.trustArchivedKeys === true, used), scope, combined, checkpoints);
  for (const p of v.problems) {
    if ((p.kind === "gap" || p.kind === "broken_link") && p.seq !== undefined && after.has(p.seq)) continue;
    if (p.kind === "truncated" && p.seq !== undefined && gone.some(([a, b]) => p.seq! >= a && p.seq! <= b)) continue;
    const segment = p.seq === undefined ? undefined : p.kind.startsWith("checkpoint") ? cpSegment.get(p.seq) : segmentOf.get(p.seq);
    problems.push(segment !== undefined ? { ...p, segment } : p);
  }
  problems.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  return { ...v, ok: problems.length === 0, problems, archive: { segments: segments.length, archivedThrough: archivedEnd, bytes, firstLiveSeq }, ...(used.size > 0 ? { keysFromArchive: [...used].sort() } : {}) };
}

/**
 * Verifies an exported journal file offline (docs/archives.md, Offline verification): its entries
 * from the header's first seq, with the checkpoints the header carries (verified with `keyring`, or
 * with `trustArchivedKeys`, the keys exported beside them for a kid it does not know, listed in
 * `keysFromArchive`). A file cut short of what its header
 * states, or below a checkpoint, is `truncated`. A file without a header (an export made before
 * headers) is verified as a chain from seq 1, with no checkpoint.
 */
export function verifyExportedJournal(crypto: CryptoPort, keyring: Keyring, scope: Scope, header: SegmentHeader | null, entries: readonly JournalEntry[], opts: { trustArchivedKeys?: boolean } = {}): JournalVerification {
  if (header === null) return verifyJournal(crypto, keyring, scope, entries, []);
  const start: ChainStart | undefined = header.fromSeq <= 1 ? undefined : { seq: header.fromSeq, ...(header.prevHash !== null ? { prevHash: header.prevHash } : {}) };
  const used = new Set<string>();
  const v = verifyJournal(crypto, withArchivedKeys(keyring, header.keys, opts.trustArchivedKeys === true, used), scope, entries, header.checkpoints, start);
  const last = entries[entries.length - 1];
  const problems = [...v.problems];
  if (entries.length < header.entries || (header.entries > 0 && (last?.seq !== header.throughSeq || last.hash !== header.headHash))) {
    problems.push({ seq: header.throughSeq, kind: "truncated", message: `the export states ${header.entries} entries through seq ${header.throughSeq} but holds ${entries.length}${last !== undefined ? ` ending at seq ${String(last.seq)}` : ""}: entries were removed` });
  }
  return { ...v, ok: problems.length === 0, problems, ...(used.size > 0 ? { keysFromArchive: [...used].sort() } : {}) };
}

/** Where the page after `page` (read from `from`) starts; always forward, even past an edited seq. */
export function nextPageFrom(from: number, page: readonly JournalEntry[]): number {
  const lastSeq = page[page.length - 1]?.seq;
  return typeof lastSeq === "number" && Number.isSafeInteger(lastSeq) && lastSeq >= from ? lastSeq + 1 : from + page.length;
}

/** Every sealed entry of a scope's journal, ascending. */
export async function readWholeJournal(store: Store, scope: Scope, pageSize = 1000): Promise<JournalEntry[]> {
  const entries: JournalEntry[] = [];
  let from = 1;
  for (;;) {
    const page = await store.transact((tx) => tx.readJournal(scope, { fromSeq: from, limit: pageSize }));
    entries.push(...page);
    if (page.length < pageSize) return entries;
    from = nextPageFrom(from, page);
  }
}
