/**
 * The length of a scope's journal (for progress bars), and reading an exported JSONL file back for
 * an offline check. Reading page by page and writing an export: src/core/journal-export.ts.
 */
import { parseJsonStrict } from "../core/canonical.js";
import { errorMessage } from "../core/errors.js";
import { corruptJournalRow } from "../core/journal.js";
import { isSegmentHeader, type SegmentHeader } from "../core/archive-format.js";
import type { Store } from "../core/store.js";
import type { JournalEntry, Scope } from "../core/types.js";

/** The head seq of a scope's journal (0 when empty): how many entries there are to read. */
export async function journalLength(store: Store, scope: Scope): Promise<number> {
  return (await store.transact((tx) => tx.journalHead(scope)))?.seq ?? 0;
}

/**
 * Parses JSONL export text into its header (the first line, when it is one: docs/archives.md) and
 * entries; a line that is not a JSON object becomes a corrupt-row placeholder (seq: the one after
 * the previous line's), which verification reports by line.
 */
export function parseJournalFile(text: string, source: string): { header: SegmentHeader | null; entries: JournalEntry[] } {
  const scopeOf = (e: JournalEntry | undefined): Scope => ({ tenantId: typeof e?.tenantId === "string" ? e.tenantId : "?", spaceId: typeof e?.spaceId === "string" ? e.spaceId : "?" });
  const out: JournalEntry[] = [];
  const lines = text.split("\n");
  let header: SegmentHeader | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line.length === 0) continue;
    const prevSeq = out[out.length - 1]?.seq;
    const seq = typeof prevSeq === "number" && Number.isSafeInteger(prevSeq) ? prevSeq + 1 : out.length + 1;
    let v: unknown;
    try {
      v = parseJsonStrict(line);
    } catch (e) {
      out.push(corruptJournalRow(scopeOf(out[out.length - 1]), seq, `${source} line ${i + 1} is not valid JSON (${errorMessage(e)})`));
      continue;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      out.push(corruptJournalRow(scopeOf(out[out.length - 1]), seq, `${source} line ${i + 1} is not a journal entry (a JSON object)`));
      continue;
    }
    if (header === null && out.length === 0 && isSegmentHeader(v)) {
      header = v;
      continue;
    }
    out.push(v as JournalEntry);
  }
  return { header, entries: out };
}
