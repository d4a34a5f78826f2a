/**
 * Reading a scope's journal page by page (so export streams and long work can report progress),
 * and reading an exported JSONL file back for an offline check.
 */
import { parseJsonStrict } from "../core/canonical.js";
import { errorMessage } from "../core/errors.js";
import type { Store } from "../core/store.js";
import type { JournalEntry, Scope } from "../core/types.js";
import { usageError } from "./exit-codes.js";

export const JOURNAL_PAGE = 1000;

/** The head seq of a scope's journal (0 when empty): how many entries there are to read. */
export async function journalLength(store: Store, scope: Scope): Promise<number> {
  return (await store.transact((tx) => tx.journalHead(scope)))?.seq ?? 0;
}

/** Pages of entries with seq >= fromSeq, ascending, each page its own short transaction. */
export async function* journalPages(store: Store, scope: Scope, fromSeq = 1, pageSize = JOURNAL_PAGE): AsyncGenerator<JournalEntry[]> {
  let from = fromSeq;
  for (;;) {
    const page = await store.transact((tx) => tx.readJournal(scope, { fromSeq: from, limit: pageSize }));
    if (page.length > 0) yield page;
    if (page.length < pageSize) return;
    from = page[page.length - 1]!.seq + 1;
  }
}

/** Parses JSONL export text into entries; a line that is not a JSON object is a usage error naming it. */
export function parseJournalJsonl(text: string, source: string): JournalEntry[] {
  const out: JournalEntry[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line.length === 0) continue;
    let v: unknown;
    try {
      v = parseJsonStrict(line);
    } catch (e) {
      throw usageError(`${source} line ${i + 1} is not valid JSON: ${errorMessage(e)}`);
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) throw usageError(`${source} line ${i + 1} is not a journal entry (a JSON object)`);
    out.push(v as JournalEntry);
  }
  return out;
}
