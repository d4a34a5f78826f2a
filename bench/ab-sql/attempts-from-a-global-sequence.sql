-- bench/ab.ts experiment (WRIT_AB_B_SQL): attempts numbered from one global sequence instead of the
-- scope's counter row, whose lock orders a scope's starts (gaps and cross-scope numbers: for measuring only).
CREATE SEQUENCE xp_att_seq;
CREATE OR REPLACE FUNCTION writ_add_attempt(p_t text, p_s text, p_attempt text, p_inv text, p_state text, p_doc json) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE v_seq bigint;
BEGIN
  IF EXISTS (SELECT 1 FROM writ_attempts WHERE tenant_id = p_t AND space_id = p_s AND attempt_id = p_attempt) THEN
    RAISE EXCEPTION 'attempt % already exists', p_attempt USING ERRCODE = 'WRCNF';
  END IF;
  v_seq := nextval('xp_att_seq');
  INSERT INTO writ_attempts (tenant_id, space_id, attempt_id, seq, invocation_id, state, doc) VALUES (p_t, p_s, p_attempt, v_seq, p_inv, p_state, p_doc);
  RETURN v_seq;
END
$$;
