/** The journal of a space: read a page, export it (src/core/journal-export.ts, the CLI's format), verify the chain and checkpoints. */
import { errorMessage } from "../../core/errors.js";
import { verifyStoredJournal } from "../../core/journal.js";
import { openJournalExport } from "../../core/journal-export.js";
import { checkSealWithinMs } from "../../core/sequencer.js";
import type { ServerContext } from "../context.js";
import { defineRoute, type Route } from "../registry.js";
import { JournalEntry, JournalExportHeader, JournalExportQuery, JournalPage, JournalReadQuery, JournalVerification, SpacePath } from "../schemas.js";

const EXPORT_PAGE = 500;
/** Unsealed entries shown beside a page of sealed ones (docs/journal.md). */
const UNSEALED_SHOWN = 100;

export function journalRoutes(s: ServerContext): Route[] {
  const { store, keyring } = s.runtime;
  return [
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/journal",
      operationId: "readJournal",
      tag: "journal",
      summary: "Read journal entries from a sequence number",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      query: JournalReadQuery,
      responses: { 200: { description: "entries, ascending", schema: JournalPage } },
      async handle({ caller, query }) {
        const limit = query.limit ?? 100;
        const [entries, unsealed] = await store.transact(
          async (tx) => [await tx.readJournal(caller.scope, { fromSeq: query.fromSeq ?? 1, limit }), await tx.listUnsealed(caller.scope, { limit: UNSEALED_SHOWN })] as const,
        );
        const nextFromSeq = entries.length === limit ? entries[entries.length - 1]!.seq + 1 : null;
        return { status: 200, body: { entries, nextFromSeq, unsealed } };
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/journal/export",
      operationId: "exportJournal",
      tag: "journal",
      summary: "Export the journal as JSON Lines: a header line, then one entry per line",
      description:
        "The format `writ journal export` writes (docs/archives.md, Offline verification). The first line is a `JournalExportHeader`: the range exported, the signed checkpoints within it and the public keys that verify them. Then every sealed entry from `fromSeq` (or the first entry still in the database, when older ones were archived) up to the sealed head as it was when the export started, one `JournalEntry` a line (entries still awaiting the sequencer are not exported: they have no seq or hash yet). `writ journal verify --file` checks a saved export offline, a cut tail included (with the keys the header carries, named in its answer as not independently trusted, or with `--keys`: only those). The `x-writ-journal-head` header is the sealed head when the export started.",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      query: JournalExportQuery,
      responses: { 200: { description: "JSON Lines: a JournalExportHeader line, then one JournalEntry a line", contentType: "application/x-ndjson", lines: { first: JournalExportHeader, then: JournalEntry } } },
      async handle({ c, caller, query }) {
        const exp = await openJournalExport(store, keyring, caller.scope, query.fromSeq ?? 1);
        const chunks = exp.chunks(EXPORT_PAGE);
        const encoder = new TextEncoder();
        const requestId = c.get("requestId");
        const body = new ReadableStream<Uint8Array>({
          async pull(ctrl) {
            try {
              const next = await chunks.next();
              if (next.done === true) ctrl.close();
              else ctrl.enqueue(encoder.encode(next.value.text));
            } catch (e) {
              s.log.error({ requestId, err: errorMessage(e) }, "journal export failed mid-stream");
              ctrl.error(e);
            }
          },
          async cancel() {
            await chunks.return(undefined);
          },
        });
        return c.body(body, 200, { "content-type": "application/x-ndjson; charset=utf-8", "x-writ-journal-head": String(exp.headSeq) });
      },
    }),
    defineRoute({
      method: "get",
      path: "/v1/spaces/{spaceId}/journal/verify",
      operationId: "verifyJournal",
      tag: "journal",
      summary: "Recompute the hash chain (the archive segments and the database as one), check the signed checkpoints, and report entries unsealed longer than the bound",
      access: { kind: "key", roles: ["operate"] },
      params: SpacePath,
      responses: { 200: { description: "the verification (ok: false lists the problems)", schema: JournalVerification } },
      async handle({ caller }) {
        const archive = s.runtime.host.archive.target ?? undefined;
        const v = await verifyStoredJournal(store, s.crypto, keyring, caller.scope, { now: s.clock.now(), sealWithinMs: checkSealWithinMs("config host", s.runtime.config.host?.sealWithinMs) }, 1000, archive);
        // A failure is an event for the tenant's subscribers (journal.verify_failed); the answer does not wait on it failing.
        if (!v.ok) await s.runtime.host.notifications.verifyFailed(caller.scope, v).catch((e: unknown) => s.log.error({ err: errorMessage(e) }, "journal.verify_failed not recorded"));
        return { status: 200, body: v };
      },
    }),
  ];
}
