-- bench/ab.ts experiment (WRIT_AB_B_SQL): writ_batch without a subtransaction per member (a member that
-- raises then fails the whole batch: for measuring only, never for use).
CREATE OR REPLACE FUNCTION writ_batch(p_calls jsonb) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_out json[] := '{}';
  v_call jsonb;
BEGIN
  FOR v_call IN SELECT e.v FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS e(v, n) ORDER BY e.n LOOP
    v_out := v_out || json_build_object('ok', writ_call(v_call->>0, v_call->1));
  END LOOP;
  RETURN to_json(v_out);
END
$$;
