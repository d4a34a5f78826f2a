/**
 * The journal export (docs/archives.md, Offline verification): a `kind: "export"` header line (the
 * range, its signed checkpoints and the public keys that verify them), then the sealed entries of
 * the range, one JSON object a line. One writer for `writ journal export` and `GET
 * /v1/spaces/{spaceId}/journal/export`, so a file saved from either verifies offline with `writ
 * journal verify --file`, a cut tail included.
 */
import { checkpointKeys, SEGMENT_FORMAT, type SegmentHeader } from "./archive-format.js";
import { WritError } from "./errors.js";
import { nextPageFrom } from "./journal.js";
import type { Keyring } from "./keyring.js";
import { readCommitted, type Store } from "./store.js";
import type { JournalEntry, Scope } from "./types.js";

/** Entries read per page (one short transaction each). */
export const JOURNAL_PAGE = 1000;

/**
 * Pages of entries with seq >= fromSeq (and <= throughSeq, when given), ascending, each page its
 * own short read on the store's read path (an export never queues behind, or as, a write).
 */
export async function* journalPages(store: Store, scope: Scope, fromSeq = 1, pageSize = JOURNAL_PAGE, throughSeq = Infinity): AsyncGenerator<JournalEntry[]> {
  let from = fromSeq;
  for (;;) {
    const read = await readCommitted(store, (tx) => tx.readJournal(scope, { fromSeq: from, limit: pageSize }));
    const page = read.filter((e) => !(typeof e.seq === "number" && e.seq > throughSeq));
    if (page.length > 0) yield page;
    if (read.length < pageSize || page.length < read.length) return;
    from = nextPageFrom(from, page);
  }
}

/** An export being written: its header (read first), then its text chunk by chunk. */
export interface JournalExport {
  header: SegmentHeader;
  /** The sealed head when the export began (0: an empty journal). */
  headSeq: number;
  /**
   * The header line, then the entries of its range page by page, as JSON Lines text (`entries`:
   * how many entries the chunk holds). Entries missing inside the range are left out, for verify
   * to name; throws `CONFLICT` when the archiver pruned part of the range since the header was
   * read (export again).
   */
  chunks(pageSize?: number): AsyncGenerator<{ text: string; entries: number }>;
}

/**
 * Opens an export of `scope` from `fromSeq` (an export of a pruned journal starts at its first live
 * entry) up to the sealed head as of now: the header with the range's checkpoints and the public
 * keys in `keyring` that signed them.
 *
 * @example
 * const exp = await openJournalExport(store, keyring, scope);
 * for await (const c of exp.chunks()) out.write(c.text);
 */
export async function openJournalExport(store: Store, keyring: Keyring, scope: Scope, fromSeq = 1): Promise<JournalExport> {
  if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new WritError("INVALID_ARGUMENT", "journal export: fromSeq must be a positive integer");
  const sc: Scope = { tenantId: scope.tenantId, spaceId: scope.spaceId };
  const { header, headSeq } = await readCommitted(store, async (tx) => {
    const head = await tx.journalHead(sc);
    const [first] = await tx.readJournal(sc, { fromSeq, limit: 1 });
    const start = first?.seq ?? Math.max(fromSeq, (head?.seq ?? 0) + 1);
    const [before] = start > 1 ? await tx.readJournal(sc, { fromSeq: start - 1, limit: 1 }) : [];
    const prevHash = before !== undefined && before.seq === start - 1 ? before.hash : null;
    const through = head !== null && head.seq >= start ? head.seq : start - 1;
    const checkpoints = (await tx.listCheckpoints(sc)).filter((cp) => cp.seq >= start - 1 && cp.seq <= through);
    const h: SegmentHeader = {
      format: SEGMENT_FORMAT,
      kind: "export",
      tenantId: sc.tenantId,
      spaceId: sc.spaceId,
      fromSeq: start,
      throughSeq: through,
      prevHash,
      headHash: through >= start ? head!.hash : prevHash,
      entries: through - start + 1,
      checkpoints,
      keys: checkpointKeys(checkpoints, keyring),
    };
    return { header: h, headSeq: head?.seq ?? 0 };
  });
  return {
    header,
    headSeq,
    async *chunks(pageSize = JOURNAL_PAGE) {
      yield { text: `${JSON.stringify(header)}\n`, entries: 0 };
      let expect = header.fromSeq;
      for await (const page of journalPages(store, sc, header.fromSeq, pageSize, header.throughSeq)) {
        // A page that starts past where the last one ended: a gap in the chain (exported as it is,
        // for verify to name), or entries archived and pruned since the header was read.
        if (page[0]!.seq !== expect) await notPruned(store, sc, expect);
        yield { text: page.map((e) => JSON.stringify(e)).join("\n") + "\n", entries: page.length };
        expect = page[page.length - 1]!.seq + 1;
      }
      if (expect <= header.throughSeq) await notPruned(store, sc, expect);
    },
  };
}

/** Throws `CONFLICT` when the entries below `seq` are gone from the database (pruned while exporting). */
async function notPruned(store: Store, scope: Scope, seq: number): Promise<void> {
  const [first] = await readCommitted(store, (tx) => tx.readJournal(scope, { limit: 1 }));
  if (first === undefined || first.seq > seq) {
    throw new WritError("CONFLICT", `the journal of ${scope.tenantId}/${scope.spaceId} no longer holds seq ${seq} (archived and pruned while exporting): export again`);
  }
}
