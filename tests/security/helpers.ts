/** Shared by the security tests: a scope's journal with every committed entry sealed first. */
import { readWholeJournal } from "../../src/core/journal.js";
import type { Store } from "../../src/core/store.js";
import type { JournalEntry, Scope } from "../../src/core/types.js";
import { sealJournalNow } from "../../src/index.js";

/** Seals what is committed in `scope` (PostgreSQL seals asynchronously), then reads it all. */
export async function journalOf(store: Store, scope: Scope): Promise<JournalEntry[]> {
  await sealJournalNow(store, scope);
  return readWholeJournal(store, scope);
}
