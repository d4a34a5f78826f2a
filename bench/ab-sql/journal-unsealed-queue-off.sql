-- bench/ab.ts experiment (WRIT_AB_B_SQL): the journal's entries are written but never queued for
-- sealing (the trigger that inserts each unsealed entry into writ_journal_pending is disabled), so
-- no pending row is inserted or deleted, no chain row is inserted and no seal runs. It breaks the
-- journal (nothing is ever sealed): for measuring what the sealing side costs the loop, never for use.
ALTER TABLE writ_journal DISABLE TRIGGER writ_journal_queue;
