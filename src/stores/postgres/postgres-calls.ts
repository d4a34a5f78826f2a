/**
 * The server-side write transitions by signature (migration 6's functions), and what batches them:
 * `writ_call` (migration 9) calls one of them with its arguments taken from a JSON array, and
 * `writ_batch` runs a list of such calls, each in a subtransaction of its own, in one statement
 * and one commit (docs/stores.md, "Batches").
 *
 * These signatures mirror migration 6 and migration 9's text is generated from them: they never
 * change; a changed function is a new function and a new migration.
 */

/** One server-side function: its name, the SQL type of each parameter, what it returns. */
export interface PgFunction {
  fn: string;
  casts: readonly string[];
  /** `bigint` stands for any scalar (returned as JSON). */
  returns: "json" | "bigint" | "void";
}

const ENTRY_CASTS = ["text[]", "text[]", "bigint[]", "json[]"] as const;
export const INV_CASTS = ["text", "text", "text", "text", "bigint", "text", "text", "bigint", "integer", "bigint", "bigint", "bigint", "bigint", "json"] as const;
const STEP_CASTS = ["integer", "text", "text", "text", "text", "json"] as const;

export const ADMIT_FN: PgFunction = { fn: "writ_admit", casts: ["text", "text", ...INV_CASTS, ...ENTRY_CASTS], returns: "json" };
export const BEGIN_FN: PgFunction = {
  fn: "writ_begin",
  casts: [
    "text", "text", "text", "text", "text", "text", "bigint[]",
    "boolean", "text", "text", "bigint", "text",
    "text", "text", "text", "bigint",
    "text", "bigint", "json",
    "text", "text", "text", "json",
    "integer", "text", "text", "text", "json",
    "text", "text", "json",
    "text", "text", "json",
    ...ENTRY_CASTS,
  ],
  returns: "json",
};
export const RECORD_FN: PgFunction = { fn: "writ_record_attempt", casts: ["text", "text", "text", "text", "text", "text", "text", "text", "json", ...ENTRY_CASTS], returns: "bigint" };
export const ADVANCE_FN: PgFunction = { fn: "writ_advance", casts: ["text", "text", "text", "text", "text", "text", ...STEP_CASTS, ...STEP_CASTS, ...ENTRY_CASTS], returns: "void" };
export const SETTLE_FN: PgFunction = {
  fn: "writ_settle",
  casts: [
    "text", "text", "text", "text", "text", "text", "bigint[]",
    ...STEP_CASTS,
    "text", "text", "text", "json",
    "text", "text", "text", "json",
    "boolean", ...INV_CASTS.slice(3),
    "text", "text", "bigint", "json",
    ...ENTRY_CASTS,
  ],
  returns: "bigint",
};

export const SEAL_IF_HEAD_FN: PgFunction = { fn: "writ_seal_if_head", casts: ["text", "text", "bigint", "bigint", "text[]", "bigint[]", "text[]", "json[]"], returns: "bigint" };

/** The write transitions a batch may carry (and the sequencer's seal, batched across scopes). */
export const BATCHABLE: readonly PgFunction[] = [ADMIT_FN, BEGIN_FN, RECORD_FN, ADVANCE_FN, SETTLE_FN, SEAL_IF_HEAD_FN];

/** `SELECT fn($1::t1, …) AS out`: one call with typed parameters. */
export function callText(f: PgFunction): string {
  return `SELECT ${f.fn}(${f.casts.map((c, i) => `$${i + 1}::${c}`).join(", ")}) AS out`;
}

/**
 * Argument `i` of a call, read from the JSON array `a`. Values travel as JSON scalars; `json`
 * arguments as JSON text in a string (parsed here, so documents keep their exact text), arrays as
 * JSON arrays (null stays NULL). The array arrives as `jsonb`: parsed once, then each argument is
 * a lookup (with `json`, every `->>` parses the whole call again: a millisecond per call).
 */
function argFromJson(cast: string, i: number): string {
  const elems = (as: string): string => `CASE WHEN jsonb_typeof(a->${i}) = 'array' THEN ARRAY(SELECT e.v${as} FROM jsonb_array_elements_text(a->${i}) WITH ORDINALITY AS e(v, n) ORDER BY e.n) END`;
  switch (cast) {
    case "text":
      return `(a->>${i})`;
    case "json":
      return `(a->>${i})::json`;
    case "text[]":
      return elems("");
    case "bigint[]":
      return elems("::bigint");
    case "json[]":
      return elems("::json");
    default:
      return `(a->>${i})::${cast}`;
  }
}

/**
 * `writ_claim_prepared` (migration 9): the claim, then each claimed invocation's prepare read
 * (steps, authority, approval, the breakers of p_connectors/p_operations in its scope). The reads
 * are a statement of their own after the claim, so their snapshot is taken after the claim locked
 * its rows: they see every commit that came before (a read in the claim's own statement would
 * use a snapshot from before the claim, and miss a commit that landed in between).
 *
 * `keys` is how each row's look-up keys (tenant, space, invocation, authority, approval) come out
 * of its document; see KEYS_ONCE.
 */
function claimPreparedSql(create: "CREATE" | "CREATE OR REPLACE", keys: string): string {
  return `
${create} FUNCTION writ_claim_prepared(p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_tokens text[], p_connectors text[], p_operations text[])
RETURNS TABLE (inv json, steps json, authority json, approval json, breakers json)
LANGUAGE plpgsql AS $$
DECLARE v_claimed json;
BEGIN
  v_claimed := writ_claim(p_owner, p_now, p_lease_ms, p_limit, p_tokens);
  RETURN QUERY
  SELECT c.inv,
         (SELECT coalesce(json_agg(s.doc ORDER BY s.step_index), '[]') FROM writ_steps s WHERE s.tenant_id = k.tid AND s.space_id = k.sid AND s.invocation_id = k.iid),
         (SELECT a.doc FROM writ_authorities a WHERE a.tenant_id = k.tid AND a.space_id = k.sid AND a.authority_ref = k.aref),
         (SELECT json_build_object('rev', p.rev, 'doc', p.doc) FROM writ_approvals p WHERE p.tenant_id = k.tid AND p.space_id = k.sid AND p.approval_id = k.apid),
         (SELECT coalesce(json_agg(b.doc ORDER BY t.n), '[]') FROM unnest(p_connectors, p_operations) WITH ORDINALITY AS t(connector, operation, n)
            LEFT JOIN writ_breakers b ON b.tenant_id = k.tid AND b.space_id = k.sid AND b.connector = t.connector AND b.operation = t.operation)
    FROM json_array_elements(v_claimed) WITH ORDINALITY AS c(inv, n)
   CROSS JOIN LATERAL ${keys}
   ORDER BY c.n;
END
$$;
`;
}

/** Migration 9's keys: the planner pulls the subquery up, so every use of a key reads it again. */
const KEYS_REPARSED = `(SELECT d->>'tenantId' AS tid, d->>'spaceId' AS sid, d->>'invocationId' AS iid, d->'request'->>'authorityRef' AS aref, d->>'approvalId' AS apid
                         FROM (SELECT c.inv->'doc' AS d) q) k`;

/** `p_doc`'s text holds no backslash-u escape (the plain reads decode it as they always did). */
const HAS_NO_ESCAPE = "strpos(p_doc::text, E'\\\\u') = 0";
/**
 * `p_doc` as jsonb, its escapes of NUL and surrogates read as "?" (see `writ_jsonb_lenient`). Only
 * functions of pg_catalog: PostgreSQL 17 and later build an index (and pg_restore restores one)
 * with a search_path of pg_catalog alone, and an index expression that reached a function of the
 * store's schema by name would fail there.
 */
const LENIENT_JSONB = "regexp_replace(replace(p_doc::text, E'\\\\\\\\', E'\\\\u005c'), E'\\\\\\\\u(0000|[dD][89a-fA-F][0-9a-fA-F]{2})', E'\\\\\\\\u003f', 'g')::jsonb";

/**
 * `writ_jsonb_lenient(json)` (migration 23): a document as jsonb, for reading keys out of it.
 * PostgreSQL's JSON operators (`->`, `->>`, a cast to jsonb) decode every escape of the text they
 * walk, and refuse an escaped NUL (backslash-u-0000) and an escaped unpaired surrogate, which the
 * json type stores and the other stores accept: one such character anywhere in an invocation's
 * params made every read of a key from its document fail (docs/stores.md, "Documents that hold
 * NUL"). Text without a backslash-u escape is cast as it is. Other text has each escaped backslash
 * (two backslashes) written as the escape of a backslash first, so that every backslash-u left
 * starts a real escape; then the escapes of NUL and of every surrogate (paired ones too, which
 * JSON.stringify never writes as escapes) become the escape of "?", which every database encoding
 * holds, and the text is cast. The structure and the keys are unchanged (ids hold neither
 * character); only those characters' values read differently. The literals are escape strings
 * (E'...'): the body is parsed under the calling session's settings, and an ordinary literal's
 * backslashes would mean something else where standard_conforming_strings is off.
 */

const JSONB_LENIENT = `
CREATE FUNCTION writ_jsonb_lenient(p_doc json) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN ${HAS_NO_ESCAPE} THEN p_doc::jsonb
              ELSE ${LENIENT_JSONB} END
$$;
`;

/**
 * `writ_doc_text(doc, path)` (migration 24): one field of a document an outside party fills, as
 * text: the plain `#>>` when the document's text holds no backslash-u escape (as cheap as the reads
 * before it), else the lenient jsonb's (docs/stores.md, "Documents that hold NUL"). Partial
 * indexes read documents through it, so it uses pg_catalog's functions only (see LENIENT_JSONB).
 */
export const DOC_TEXT = `
CREATE FUNCTION writ_doc_text(p_doc json, p_path text[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN ${HAS_NO_ESCAPE} THEN p_doc #>> p_path ELSE ${LENIENT_JSONB} #>> p_path END
$$;
`;

/**
 * Each claimed invocation's keys read once (migration 23, docs/stores.md, "Hot statements and
 * history"). With migration 9's keys, every use of a key in the four reads (an index scan's key,
 * the breakers' join condition) took the document out of the claimed row and read the key from
 * it, two parses of JSON text each, about twenty per claimed invocation: 7% of the server's CPU in
 * the host loop (`perf record` of the server under bench/prof-host-pg.ts's loop,
 * docs/benchmarks.md). Here the claimed row is parsed once, by `writ_jsonb_lenient` (so that an
 * invocation whose params hold NUL is claimed like any other), and `OFFSET 0` keeps each subquery
 * from being pulled up, so the keys are computed once per claimed row. Same rows, same answers.
 */
const KEYS_ONCE = `(SELECT d->>'tenantId' AS tid, d->>'spaceId' AS sid, d->>'invocationId' AS iid, d->'request'->>'authorityRef' AS aref, d->>'approvalId' AS apid
                         FROM (SELECT writ_jsonb_lenient(c.inv)->'doc' AS d OFFSET 0) q OFFSET 0) k`;

const CLAIM_PREPARED_SQL = claimPreparedSql("CREATE", KEYS_REPARSED);

/**
 * Argument `i` of a call in `writ_call_2` (migration 25): as `argFromJson`, except that an array
 * travels as the text of a PostgreSQL array literal (`batchArgs`) and is cast at once. Reading
 * an array out of the JSON took a subquery (unnest, sort, ARRAY), and the executor sets up every
 * subquery of a statement at each run, taken or not: about 13 µs per call of five arrays against 2
 * µs for the casts, in a loop of the two dispatchers on one server (docs/benchmarks.md, "2026-12-07
 * (morning)").
 */
export function argFromLiteral(cast: string, i: number): string {
  return cast.endsWith("[]") ? `(a->>${i})::${cast}` : argFromJson(cast, i);
}

/**
 * A dispatcher of `fns` named `name` (`replace`: over an earlier one, keeping its signature), its
 * arguments read by `arg`.
 */
function dispatcherSql(fns: readonly PgFunction[], replace: boolean, name = "writ_call", arg: (cast: string, i: number) => string = argFromJson): string {
  const branches = fns.map((f) => {
    const call = `${f.fn}(${f.casts.map((c, i) => arg(c, i)).join(", ")})`;
    const body = f.returns === "void" ? `PERFORM ${call}; RETURN NULL;` : f.returns === "json" ? `RETURN ${call};` : `RETURN to_json(${call});`;
    return `    WHEN '${f.fn}' THEN\n      ${body}`;
  });
  return `
CREATE ${replace ? "OR REPLACE " : ""}FUNCTION ${name}(p_fn text, a jsonb) RETURNS json
LANGUAGE plpgsql AS $$
BEGIN
  CASE p_fn
${branches.join("\n")}
    ELSE
      RAISE EXCEPTION '${name}: % is not a batchable function', p_fn USING ERRCODE = '22023';
  END CASE;
END
$$;
`;
}

/** A batch runner named `name`: each call of `p_calls` through `dispatcher`, in a subtransaction of its own. */
function batchRunnerSql(name: string, dispatcher: string): string {
  return `
CREATE FUNCTION ${name}(p_calls jsonb) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_out json[] := '{}';
  v_call jsonb;
  v_r json;
BEGIN
  FOR v_call IN SELECT e.v FROM jsonb_array_elements(p_calls) WITH ORDINALITY AS e(v, n) ORDER BY e.n LOOP
    BEGIN
      v_r := json_build_object('ok', ${dispatcher}(v_call->>0, v_call->1));
    EXCEPTION WHEN OTHERS THEN
      v_r := json_build_object('state', SQLSTATE, 'message', SQLERRM);
    END;
    v_out := v_out || v_r;
  END LOOP;
  RETURN to_json(v_out);
END
$$;
`;
}

/** Migration 9's text: the dispatcher and the batch runner, and the claim with its prepare read. */
export function batchFunctionsSql(fns: readonly PgFunction[]): string {
  return `${dispatcherSql(fns, false)}${batchRunnerSql("writ_batch", "writ_call")}${CLAIM_PREPARED_SQL}`;
}

/**
 * The claim with its prepare read as a batchable function (migration 16): `writ_claim_prepared`'s
 * rows as one JSON array, so a worker's claim can ride in the `writ_batch` of the admissions,
 * starts and settlements committing at that moment (docs/stores.md, "Batches"). A plpgsql
 * function: the claim and the reads inside `writ_claim_prepared` each keep a snapshot of their own.
 */
export const CLAIM_PREPARED_FN: PgFunction = { fn: "writ_claim_prepared_json", casts: ["text", "bigint", "bigint", "integer", "text[]", "text[]", "text[]"], returns: "json" };

/** Migration 16's text: the claim as a batch member, and the dispatcher that knows it. */
export function claimInBatchSql(): string {
  return `
CREATE FUNCTION writ_claim_prepared_json(p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_tokens text[], p_connectors text[], p_operations text[])
RETURNS json
LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT coalesce(json_agg(json_build_object('inv', c.inv, 'steps', c.steps, 'authority', c.authority, 'approval', c.approval, 'breakers', c.breakers) ORDER BY c.n), '[]')
            FROM writ_claim_prepared(p_owner, p_now, p_lease_ms, p_limit, p_tokens, p_connectors, p_operations) WITH ORDINALITY AS c(inv, steps, authority, approval, breakers, n));
END
$$;
${dispatcherSql([...BATCHABLE, CLAIM_PREPARED_FN], true)}`;
}

/**
 * An admission handed to an idle worker of the admitting process (migration 21, docs/host.md,
 * "Hand-off to an idle worker"): `writ_admit`'s arguments, then the claim's (owner, now, lease,
 * token) and the breakers the prepare read returns.
 */
export const ADMIT_CLAIMED_FN: PgFunction = {
  fn: "writ_admit_claimed",
  casts: [...ADMIT_FN.casts, "text", "bigint", "bigint", "text", "text[]", "text[]"],
  returns: "json",
};

/**
 * Migration 21's text. `writ_admit_claimed` admits as `writ_admit` does, except that an invocation
 * that is queued and due is inserted already claimed: running under the given owner, token and
 * lease, its attempt counted, with the `invocation.claimed` entry `writ_claim` would write after
 * the admission's own. One row version, no update; and since the row is never queued, the wake-up
 * trigger does not fire for it (no other worker has anything to look for). It then reads what the
 * worker needs before it decides (as `writ_claim_prepared`, in a statement of its own). An
 * invocation that is not claimable (not queued, not yet due) is admitted as `writ_admit` would,
 * with its wake-up. The batch dispatcher learns the new function.
 */
export function admitClaimedSql(): string {
  return `${admitClaimedFunctionSql("CREATE", ADMIT_KEYS_REPARSED)}${dispatcherSql([...BATCHABLE, CLAIM_PREPARED_FN, ADMIT_CLAIMED_FN], true)}`;
}

/** How `writ_admit_claimed` reads the authority's and the approval's keys out of `p_doc`. */
interface AdmitKeys {
  /** Declarations after `v_found json;`. */
  declare: string;
  /** Statements run before the prepare read. */
  before: string;
  authorityRef: string;
  approvalId: string;
}

/** Migration 21's: straight from the JSON text, each use a parse of its own. */
const ADMIT_KEYS_REPARSED: AdmitKeys = { declare: "", before: "", authorityRef: "p_doc->'request'->>'authorityRef'", approvalId: "p_doc->>'approvalId'" };

/** Migration 23's: the document parsed once, by `writ_jsonb_lenient` (NUL in the params reads as any other character). */
const ADMIT_KEYS_ONCE: AdmitKeys = {
  declare: " v_keys jsonb;",
  before: "\n  v_keys := writ_jsonb_lenient(p_doc);",
  authorityRef: "v_keys->'request'->>'authorityRef'",
  approvalId: "v_keys->>'approvalId'",
};

function admitClaimedFunctionSql(create: "CREATE" | "CREATE OR REPLACE", keys: AdmitKeys): string {
  return `
${create} FUNCTION writ_admit_claimed(p_t text, p_s text, p_inv text, p_action text, p_key text, p_status text, p_run_at bigint, p_lease_owner text, p_lease_token text,
    p_lease_expires_at bigint, p_attempt_count integer, p_created_at bigint, p_updated_at bigint, p_deadline_at bigint, p_overdue_at bigint, p_doc json,
    p_ids text[], p_types text[], p_ats bigint[], p_docs json[],
    p_owner text, p_now bigint, p_lease_ms bigint, p_token text, p_connectors text[], p_operations text[]) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE v_found json;${keys.declare}
BEGIN
  IF p_status <> 'queued' OR p_run_at > p_now THEN
    v_found := writ_admit(p_t, p_s, p_inv, p_action, p_key, p_status, p_run_at, p_lease_owner, p_lease_token, p_lease_expires_at, p_attempt_count,
                          p_created_at, p_updated_at, p_deadline_at, p_overdue_at, p_doc, p_ids, p_types, p_ats, p_docs);
    RETURN CASE WHEN v_found IS NULL THEN json_build_object('created', true) ELSE json_build_object('existing', v_found) END;
  END IF;
  v_found := writ_admit(p_t, p_s, p_inv, p_action, p_key, 'running', p_run_at, p_owner, p_token, p_now + p_lease_ms, p_attempt_count + 1,
                        p_created_at, p_now, p_deadline_at, p_overdue_at, p_doc, p_ids, p_types, p_ats, p_docs);
  IF v_found IS NOT NULL THEN
    RETURN json_build_object('existing', v_found);
  END IF;
  INSERT INTO writ_journal (tenant_id, space_id, id, type, at, doc)
  VALUES (p_t, p_s, 'invocation.claimed:' || p_inv || ':' || p_token, 'invocation.claimed', p_now,
          json_build_object('tenantId', p_t, 'spaceId', p_s, 'id', 'invocation.claimed:' || p_inv || ':' || p_token,
                            'at', p_now, 'type', 'invocation.claimed', 'refs', json_build_object('invocationId', p_inv),
                            'data', json_build_object('owner', p_owner, 'attemptCount', p_attempt_count + 1)))
  ON CONFLICT (tenant_id, space_id, id) DO NOTHING;${keys.before}
  RETURN json_build_object('created', true, 'claimed', (
    SELECT json_build_object(
             'inv', json_build_object('status', 'running', 'run_at', p_run_at, 'lease_owner', p_owner, 'lease_token', p_token,
                                      'lease_expires_at', p_now + p_lease_ms, 'attempt_count', p_attempt_count + 1, 'updated_at', p_now,
                                      'rev', 1, 'doc', p_doc),
             'steps', (SELECT coalesce(json_agg(s.doc ORDER BY s.step_index), '[]') FROM writ_steps s WHERE s.tenant_id = p_t AND s.space_id = p_s AND s.invocation_id = p_inv),
             'authority', (SELECT a.doc FROM writ_authorities a WHERE a.tenant_id = p_t AND a.space_id = p_s AND a.authority_ref = ${keys.authorityRef}),
             'approval', (SELECT json_build_object('rev', p.rev, 'doc', p.doc) FROM writ_approvals p WHERE p.tenant_id = p_t AND p.space_id = p_s AND p.approval_id = ${keys.approvalId}),
             'breakers', (SELECT coalesce(json_agg(b.doc ORDER BY t.n), '[]') FROM unnest(p_connectors, p_operations) WITH ORDINALITY AS t(connector, operation, n)
                            LEFT JOIN writ_breakers b ON b.tenant_id = p_t AND b.space_id = p_s AND b.connector = t.connector AND b.operation = t.operation))));
END
$$;
`;
}

/**
 * The claim with its prepare read and, when it took fewer invocations than it could, the next
 * run time (migration 22, docs/host.md, "Workers, leases, fencing"): a worker whose claim came
 * back short sleeps until that time, which it used to read in a statement of its own after every
 * such claim. `{"claimed": [...]}`, plus `"next"` (the earliest `run_at` among queued invocations, or
 * null when none is queued) when it took fewer than `min(p_limit, tokens)`. The read is a
 * statement of its own after the claim, so it sees every commit that came before it and none of
 * the rows this claim took. The batch dispatcher learns the new function; `writ_claim_prepared_json`
 * stays for workers of the previous version.
 */
export const CLAIM_NEXT_FN: PgFunction = { fn: "writ_claim_next", casts: CLAIM_PREPARED_FN.casts, returns: "json" };

/** Migration 22's text. */
export function claimNextSql(): string {
  return `
CREATE FUNCTION writ_claim_next(p_owner text, p_now bigint, p_lease_ms bigint, p_limit integer, p_tokens text[], p_connectors text[], p_operations text[])
RETURNS json
LANGUAGE plpgsql AS $$
DECLARE v_claimed json;
BEGIN
  v_claimed := writ_claim_prepared_json(p_owner, p_now, p_lease_ms, p_limit, p_tokens, p_connectors, p_operations);
  IF json_array_length(v_claimed) >= least(p_limit, coalesce(array_length(p_tokens, 1), 0)) THEN
    RETURN json_build_object('claimed', v_claimed);
  END IF;
  RETURN json_build_object('claimed', v_claimed, 'next', (SELECT min(run_at) FROM writ_invocations WHERE status = 'queued'));
END
$$;
${dispatcherSql([...BATCHABLE, CLAIM_PREPARED_FN, ADMIT_CLAIMED_FN, CLAIM_NEXT_FN], true)}`;
}

/**
 * Migration 23's text: `writ_jsonb_lenient`, then `writ_claim_prepared` and `writ_admit_claimed`
 * again, each reading its keys from a document parsed once by it. Same signatures: the dispatcher
 * and the callers are unchanged.
 */
export function keysOnceSql(): string {
  return `${JSONB_LENIENT}${claimPreparedSql("CREATE OR REPLACE", KEYS_ONCE)}${admitClaimedFunctionSql("CREATE OR REPLACE", ADMIT_KEYS_ONCE)}`;
}

/** Every function a batch may call (what `writ_call` dispatches since migration 22). */
export const BATCH_CALLS: readonly PgFunction[] = [...BATCHABLE, CLAIM_PREPARED_FN, ADMIT_CLAIMED_FN, CLAIM_NEXT_FN];

/** The batch statement's runner since migration 25 (see `literalBatchSql`). */
export const BATCH_RUNNER = "writ_batch_2";

/**
 * Migration 25's text: `writ_call_2` and `writ_batch_2`, the dispatcher and runner of
 * `BATCH_CALLS` with each array argument sent as a PostgreSQL array literal (`argFromLiteral`,
 * `batchArgs`). Same calls, same subtransaction per member, same answers. `writ_call` and
 * `writ_batch` stay, unchanged, for processes of the previous version during a rolling upgrade:
 * they send arrays as JSON, which a cast of the literal would refuse.
 */
export function literalBatchSql(): string {
  return `${dispatcherSql(BATCH_CALLS, false, "writ_call_2", argFromLiteral)}${batchRunnerSql(BATCH_RUNNER, "writ_call_2")}`;
}

/**
 * Characters after which `JSON.stringify` of a string is not its array-literal element: it writes
 * control characters and lone surrogates as escapes (`\n`, `\u0000`), which an array literal would
 * read as other text (a backslash there only quotes the next character). Any surrogate sends the
 * string the slow way, paired ones included: the test stays a plain scan.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NOT_AS_JSON = /[\u0000-\u001f\ud800-\udfff]/;

/**
 * One element of an array literal: the value's text in double quotes, `"` and backslash escaped. No
 * element is NULL: an unquoted NULL reads as the text "NULL" where `array_nulls` is off, and no
 * batched call sends one. For text with neither control characters nor surrogates (every JSON
 * document `JSON.stringify` wrote and every id, unless they hold characters outside the basic
 * plane) that is exactly `JSON.stringify` of the text, which escapes the same two characters the
 * same way and costs a seventh of a regular-expression replace on a document full of quotes (3
 * against 20 µs for 1.6 KB, docs/benchmarks.md).
 */
function literalElement(v: unknown, f: PgFunction, i: number): string {
  if (typeof v === "string") return NOT_AS_JSON.test(v) ? `"${v.replace(/["\\]/g, "\\$&")}"` : JSON.stringify(v);
  if ((typeof v === "number" && Number.isFinite(v)) || typeof v === "bigint") return `"${String(v)}"`;
  throw new TypeError(`${argumentName(f, i)} holds ${v === null ? "null" : `a ${typeof v}`}, which a batch does not send`);
}

function argumentName(f: PgFunction, i: number): string {
  return `${f.fn}: argument ${i + 1} (${f.casts[i]})`;
}

/**
 * The arguments of one call of `f` as `writ_call_2` reads them (migration 25): each array as the
 * text of a PostgreSQL array literal (`{"a","b"}`), every other value as it is. An array's
 * absence (null) stays null. Throws a TypeError naming the function and the argument for a value
 * it has no literal for.
 */
export function batchArgs(f: PgFunction, params: readonly unknown[]): unknown[] {
  return params.map((p, i) => {
    if (!f.casts[i]?.endsWith("[]") || p === null || p === undefined) return p;
    if (!Array.isArray(p)) throw new TypeError(`${argumentName(f, i)} is not an array`);
    let text = "{";
    for (let k = 0; k < p.length; k++) text += (k === 0 ? "" : ",") + literalElement(p[k], f, i);
    return text + "}";
  });
}
