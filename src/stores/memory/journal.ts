/**
 * The per-scope journal and its checkpoints. The store keeps the chain's shape (seq contiguous
 * from 1, ids unique); computing and checking hashes is the core's job (`core/journal.ts`).
 */
import { WritError } from "../../core/errors.js";
import { assertScope, type ListOptions } from "../../core/store.js";
import type { JournalCheckpoint, JournalEntry, Scope } from "../../core/types.js";
import { copy } from "./copy.js";
import { findScope, limited, scopeFor, type Work } from "./state.js";

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
  let seq = sd.journal.length;
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
  const all = findScope(w.state, scope)?.journal ?? [];
  const start = opts.fromSeq === undefined ? 0 : Math.max(0, Math.ceil(opts.fromSeq) - 1);
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
