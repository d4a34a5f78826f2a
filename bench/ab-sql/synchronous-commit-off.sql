-- bench/ab.ts experiment (WRIT_AB_B_SQL): this side's database commits without waiting for the
-- write-ahead log's flush (synchronous_commit = off for connections opened after this runs). A
-- crash of the server may then lose the last commits: for measuring what the flush waits cost the
-- loop, never for use.
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$;
