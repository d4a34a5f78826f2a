-- bench/ab.ts experiment (WRIT_AB_B_SQL): no journal at all on the hot path: the transitions'
-- entries are dropped (writ_put_unsealed does nothing) and what the admission and the claim still
-- insert directly is never queued for sealing. It breaks the journal (the evidence): for measuring
-- what the journal costs the loop, the most a cheaper journal could give back, never for use.
ALTER TABLE writ_journal DISABLE TRIGGER writ_journal_queue;
CREATE OR REPLACE FUNCTION writ_put_unsealed(p_t text, p_s text, p_ids text[], p_types text[], p_ats bigint[], p_docs json[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RETURN;
END
$$;
