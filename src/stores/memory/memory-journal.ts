/**
 * The per-scope journal and its checkpoints. The store keeps the chain's shape (seq contiguous
 * from 1, ids unique across sealed and unsealed entries); computing and checking hashes is the
 * core's job (`core/journal.ts`, sealed by `core/sequencer.ts`).
 */
import { WritError } from "../../core/errors.js";
import { assertScope, checkArchiveMove, checkPrune, type JournalScopeState, type ListOptions } from "../../core/store.js";
import type { JournalCheckpoint, JournalEntry, Scope, UnsealedEntry } from "../../core/types.js";
import { copy } from "./memory-copy.js";
import { findScope, limited, scopeFor, type Work } from "./memory-state.js";

/** Writes entries unsealed, skipping ids already in the scope (sealed or not); returns the ids written. */
export function insertUnsealed(w: Work, scope: Scope, entries: UnsealedEntry[]): string[] {
  if (!Array.isArray(entries)) throw new WritError("INVALID_ARGUMENT", "insertUnsealed needs an array of entries");
  for (const e of entries) assertScope(scope, e, "journal entry");
  if (entries.length === 0) return [];
  const sd = scopeFor(w.state, scope);
  const written: string[] = [];
  const before = sd.unsealed.length;
  for (const e of entries) {
    if (typeof e.id !== "string" || e.id === "") throw new WritError("INVALID_ARGUMENT", "a journal entry needs a non-empty string id");
    if (sd.journalIds.has(e.id)) continue;
    sd.unsealed.push(copy(e));
    sd.journalIds.add(e.id);
    written.push(e.id);
  }
  if (written.length === 0) return written;
  // Keyed by the two ids, the first one's length first (no two scopes share a key).
  const key = `${scope.tenantId.length}:${scope.tenantId}${scope.spaceId}`;
  const journaled = (w.journaled ??= new Map());
  if (!journaled.has(key)) journaled.set(key, { tenantId: scope.tenantId, spaceId: scope.spaceId });
  w.undo.push(() => {
    sd.unsealed.length = before;
    for (const id of written) sd.journalIds.delete(id);
  });
  return written;
}

/** Unsealed entries in the order written (memory transactions are serial: that is commit order). */
export function listUnsealed(w: Work, scope: Scope, opts: ListOptions = {}): UnsealedEntry[] {
  return limited(findScope(w.state, scope)?.unsealed ?? [], opts.limit).map(copy);
}

/** Seals unsealed entries with seqs continuing the sealed head; all or nothing. */
export function sealJournal(w: Work, scope: Scope, entries: JournalEntry[]): void {
  if (entries.length === 0) return;
  const sd = findScope(w.state, scope);
  if (sd === undefined) throw new WritError("CONFLICT", `journal entry ${entries[0]!.id} is not unsealed in this scope`);
  let seq = sd.archive.pruned + sd.journal.length;
  // The usual seal takes the oldest unsealed entries in the order written (the sequencer chains
  // what `listUnsealed` listed): while they are a prefix, no index of the rest is built.
  let at: Map<string, number> | null = null;
  let taken: Set<number> | null = null;
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k]!;
    assertScope(scope, e, "journal entry");
    seq += 1;
    if (e.seq !== seq) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the chain (expected ${seq})`);
    if (taken === null && sd.unsealed[k]?.id === e.id) continue;
    if (at === null || taken === null) {
      at = new Map(sd.unsealed.map((u, i) => [u.id, i]));
      taken = new Set(Array.from({ length: k }, (_, i) => i));
    }
    const i = at.get(e.id);
    if (i === undefined || taken.has(i)) throw new WritError("CONFLICT", `journal entry ${e.id} is not unsealed in this scope`);
    taken.add(i);
  }
  let restore: () => void;
  if (taken === null) {
    // The oldest entries: undone by putting them back in front (the rest of the list is not copied).
    const removed = sd.unsealed.splice(0, entries.length);
    restore = () => {
      sd.unsealed.unshift(...removed);
    };
  } else {
    const unsealedBefore = [...sd.unsealed];
    const held = taken;
    const rest = sd.unsealed.filter((_, i) => !held.has(i));
    sd.unsealed.length = 0;
    sd.unsealed.push(...rest);
    restore = () => {
      sd.unsealed.length = 0;
      sd.unsealed.push(...unsealedBefore);
    };
  }
  for (const e of entries) sd.journal.push(copy(e));
  w.undo.push(() => {
    sd.journal.length -= entries.length;
    restore();
  });
}

/** Scopes with unsealed entries and their oldest entry's `at`. */
export function unsealedScopes(w: Work, limit: number): Array<Scope & { oldestAt: number }> {
  if (!Number.isSafeInteger(limit) || limit < 0) throw new WritError("INVALID_ARGUMENT", "unsealedScopes: limit must be a non-negative integer");
  const out: Array<Scope & { oldestAt: number }> = [];
  for (const [tenantId, spaces] of w.state.tenants) {
    for (const [spaceId, sd] of spaces) {
      if (out.length >= limit) return out;
      if (sd.unsealed.length > 0) out.push({ tenantId, spaceId, oldestAt: Math.min(...sd.unsealed.map((u) => u.at)) });
    }
  }
  return out;
}

/** Scopes with a sealed journal, ascending after `after` (`Tx.journalScopes`). */
export function journalScopes(w: Work, limit: number, after?: Scope): JournalScopeState[] {
  const out: JournalScopeState[] = [];
  for (const [tenantId, spaces] of w.state.tenants) {
    for (const [spaceId, sd] of spaces) {
      const first = sd.journal[0];
      if (first === undefined) continue;
      if (after !== undefined && (tenantId < after.tenantId || (tenantId === after.tenantId && spaceId <= after.spaceId))) continue;
      out.push({ tenantId, spaceId, headSeq: sd.journal[sd.journal.length - 1]!.seq, firstSeq: first.seq, firstAt: first.at, archivedThrough: sd.archive.through });
    }
  }
  out.sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.spaceId < b.spaceId ? -1 : a.spaceId > b.spaceId ? 1 : 0));
  return out.slice(0, limit);
}

export function journalHead(w: Work, scope: Scope): { seq: number; hash: string } | null {
  const last = findScope(w.state, scope)?.journal.at(-1);
  return last === undefined ? null : { seq: last.seq, hash: last.hash };
}

export function journalIdsPresent(w: Work, scope: Scope, ids: string[]): Set<string> {
  const present = findScope(w.state, scope)?.journalIds;
  const out = new Set<string>();
  if (present !== undefined) for (const id of ids) if (present.has(id)) out.add(id);
  return out;
}

/** Appends entries whose seqs continue the head (head + 1, + 2, …) and whose ids are new; all or nothing. */
export function insertJournal(w: Work, scope: Scope, entries: JournalEntry[]): void {
  if (entries.length === 0) return;
  const sd = scopeFor(w.state, scope);
  const batchIds = new Set<string>();
  let seq = sd.archive.pruned + sd.journal.length;
  for (const e of entries) {
    assertScope(scope, e, "journal entry");
    seq += 1;
    if (e.seq !== seq) throw new WritError("CONFLICT", `journal entry seq ${e.seq} does not continue the chain (expected ${seq})`);
    if (sd.journalIds.has(e.id) || batchIds.has(e.id)) throw new WritError("CONFLICT", `journal entry ${e.id} already exists`);
    batchIds.add(e.id);
  }
  for (const e of entries) {
    sd.journal.push(copy(e));
    sd.journalIds.add(e.id);
  }
  w.undo.push(() => {
    sd.journal.length -= entries.length;
    for (const id of batchIds) sd.journalIds.delete(id);
  });
}

/** Entries with seq >= fromSeq, ascending. */
export function readJournal(w: Work, scope: Scope, opts: ListOptions & { fromSeq?: number } = {}): JournalEntry[] {
  const sd = findScope(w.state, scope);
  const all = sd?.journal ?? [];
  const start = opts.fromSeq === undefined ? 0 : Math.max(0, Math.ceil(opts.fromSeq) - 1 - (sd?.archive.pruned ?? 0));
  const end = opts.limit === undefined ? undefined : start + Math.max(0, opts.limit);
  return limited(all.slice(start, end), opts.limit).map(copy);
}

/** Keeps checkpoints in seq order; several at one seq are kept in insertion order. */
export function insertCheckpoint(w: Work, scope: Scope, cp: JournalCheckpoint): void {
  assertScope(scope, cp, "journal checkpoint");
  const list = scopeFor(w.state, scope).checkpoints;
  let i = list.length;
  while (i > 0 && (list[i - 1] as JournalCheckpoint).seq > cp.seq) i -= 1;
  const stored = copy(cp);
  list.splice(i, 0, stored);
  w.undo.push(() => {
    list.splice(list.indexOf(stored), 1);
  });
}

/** In seq order. */
export function listCheckpoints(w: Work, scope: Scope): JournalCheckpoint[] {
  return (findScope(w.state, scope)?.checkpoints ?? []).map(copy);
}

export function journalArchivedThrough(w: Work, scope: Scope): number {
  return findScope(w.state, scope)?.archive.through ?? 0;
}

export function setJournalArchivedThrough(w: Work, scope: Scope, seq: number): void {
  const current = journalArchivedThrough(w, scope);
  checkArchiveMove(current, journalHead(w, scope)?.seq ?? 0, seq);
  if (seq === current) return;
  const archive = scopeFor(w.state, scope).archive;
  archive.through = seq;
  w.undo.push(() => {
    archive.through = current;
  });
}

/** Deletes up to `limit` of the lowest live sealed entries at or below `throughSeq`, the leading ones written before `writtenBefore` if given (`Tx.pruneJournal`). */
export function pruneJournal(w: Work, scope: Scope, throughSeq: number, limit: number, writtenBefore?: number): number {
  const sd = findScope(w.state, scope);
  checkPrune(sd?.archive.through ?? 0, journalHead(w, scope)?.seq ?? 0, throughSeq);
  if (sd === undefined) return 0;
  let n = Math.min(limit, Math.max(0, throughSeq - sd.archive.pruned));
  if (writtenBefore !== undefined) {
    const young = sd.journal.slice(0, n).findIndex((e) => !(e.at < writtenBefore));
    if (young !== -1) n = young;
  }
  if (n === 0) return 0;
  const gone = sd.journal.splice(0, n);
  for (const e of gone) sd.journalIds.delete(e.id);
  const archive = sd.archive;
  archive.pruned += n;
  w.undo.push(() => {
    sd.journal.unshift(...gone);
    for (const e of gone) sd.journalIds.add(e.id);
    archive.pruned -= n;
  });
  return n;
}
