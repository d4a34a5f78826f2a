/**
 * The per-scope hash-chained journal (SPEC 6). `hash = sha256(JCS(entry without hash))`; each
 * entry's `prevHash` is the previous entry's hash (null for the first). Deterministic entry ids
 * make repeated writes idempotent. Signed checkpoints of (scope, seq, head hash) let an auditor
 * detect truncation as well as tampering.
 */
import { canonicalize, canonicalizeData, parseJsonStrict } from "./canonical.js";
import { base64url, fromBase64url, fromUtf8, utf8 } from "./encoding.js";
import type { Keyring, SigningKey } from "./keyring.js";
import type { CryptoPort } from "./ports.js";
import type { Store, StoreTx } from "./store.js";
import type { Json, JournalCheckpoint, JournalEntry, Scope } from "./types.js";


export interface JournalDraft {
  id: string;
  type: string;
  at: number;
  refs?: { [k: string]: string };
  data?: Json;
}

/**
 * The hash of an entry (the `hash` field itself excluded). `strict` canonicalises with every input
 * check (for entries read back from outside, e.g. an export under audit); the default trusts data
 * Writ built itself.
 */
export function entryHash(crypto: CryptoPort, e: Omit<JournalEntry, "hash">, strict = false): string {
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
  return "sha256:" + base64url(crypto.sha256(strict ? canonicalize(body) : canonicalizeData(body)));
}

/**
 * Appends drafts to the scope's chain inside `tx`. Drafts whose id is already present are skipped
 * (idempotent re-writes). Returns the entries written.
 */
export async function appendJournal(tx: StoreTx, crypto: CryptoPort, scope: Scope, drafts: JournalDraft[]): Promise<JournalEntry[]> {
  if (drafts.length === 0) return [];
  const ids = drafts.map((d) => d.id);
  let head: { seq: number; hash: string } | null;
  let present: Set<string>;
  if (tx.journalTail) {
    ({ head, present } = await tx.journalTail(scope, ids));
  } else {
    await tx.lock(scope, ["journal"]);
    present = await tx.journalIdsPresent(scope, ids);
    head = await tx.journalHead(scope);
  }
  let seq = head?.seq ?? 0;
  let prevHash = head?.hash ?? null;
  const out: JournalEntry[] = [];
  for (const d of drafts) {
    if (present.has(d.id)) continue;
    present.add(d.id);
    seq += 1;
    const e: Omit<JournalEntry, "hash"> = {
      tenantId: scope.tenantId,
      spaceId: scope.spaceId,
      seq,
      id: d.id,
      at: d.at,
      type: d.type,
      refs: d.refs ?? {},
      data: d.data ?? null,
      prevHash,
    };
    const hash = entryHash(crypto, e);
    out.push({ ...e, hash });
    prevHash = hash;
  }
  if (out.length > 0) await tx.insertJournal(scope, out);
  return out;
}

const CHECKPOINT_TYP = "writ-checkpoint+jws";

interface CheckpointStatement {
  tenantId: string;
  spaceId: string;
  seq: number;
  headHash: string;
  at: number;
}

/** Signs a checkpoint of the scope's current head (null when the journal is empty). */
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

export interface JournalProblem {
  seq?: number;
  kind: "hash_mismatch" | "broken_link" | "gap" | "scope_mismatch" | "truncated" | "checkpoint_mismatch" | "checkpoint_signature";
  message: string;
}

export interface JournalVerification {
  ok: boolean;
  entries: number;
  checkpoints: number;
  headSeq: number;
  headHash: string | null;
  problems: JournalProblem[];
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
): JournalVerification {
  const problems: JournalProblem[] = [];
  const hashes = new Map<number, string>();
  let prev: string | null = null;
  let expectSeq = 1;
  for (const e of entries) {
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
    if (e.prevHash !== prev) problems.push({ seq: e.seq, kind: "broken_link", message: `entry ${e.seq} does not link to the entry before it` });
    hashes.set(e.seq, hash);
    prev = hash;
  }
  const last = entries.length > 0 ? entries[entries.length - 1]! : null;
  for (const cp of checkpoints) {
    const sigProblem = checkStatementSignature(crypto, keyring, cp);
    if (sigProblem) {
      problems.push({ seq: cp.seq, kind: "checkpoint_signature", message: `checkpoint at ${cp.seq}: ${sigProblem}` });
      continue;
    }
    if (cp.tenantId !== scope.tenantId || cp.spaceId !== scope.spaceId) {
      problems.push({ seq: cp.seq, kind: "scope_mismatch", message: `checkpoint at ${cp.seq} belongs to another scope` });
      continue;
    }
    const h = hashes.get(cp.seq);
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

/** Reads a scope's whole journal (in pages) and its checkpoints from a store and verifies them. */
export async function verifyStoredJournal(store: Store, crypto: CryptoPort, keyring: Keyring, scope: Scope, pageSize = 1000): Promise<JournalVerification> {
  const entries = await readWholeJournal(store, scope, pageSize);
  const checkpoints = await store.transact((tx) => tx.listCheckpoints(scope));
  return verifyJournal(crypto, keyring, scope, entries, checkpoints);
}

/** Every entry of a scope's journal, ascending. */
export async function readWholeJournal(store: Store, scope: Scope, pageSize = 1000): Promise<JournalEntry[]> {
  const entries: JournalEntry[] = [];
  for (;;) {
    const from = entries.length > 0 ? entries[entries.length - 1]!.seq + 1 : 1;
    const page = await store.transact((tx) => tx.readJournal(scope, { fromSeq: from, limit: pageSize }));
    entries.push(...page);
    if (page.length < pageSize) return entries;
  }
}
