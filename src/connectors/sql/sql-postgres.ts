/**
 * The PostgreSQL dialect of the SQL connector, on node-postgres (a pool it owns, or yours).
 * Transactions run READ COMMITTED with `statement_timeout` set to the time left before the step
 * deadline; the operation's statement is sent in extended mode (exactly one statement). Two calls
 * with one step key at once serialise on the dedupe row's primary key: the second waits for the
 * first to commit, then answers its recorded result.
 */
import type { PgPool, PgPooledConnection, PgQuery } from "../../stores/postgres/postgres-driver.js";
import { connectGuarded, createPool, type OwnedPgPool } from "../../stores/postgres/postgres-driver.js";
import { passwordOf, redact } from "../../stores/postgres/postgres-errors.js";
import { asGiven } from "../../stores/postgres/postgres-url.js";
import { POSTGRES_DEFAULTS } from "../../stores/postgres/postgres-options.js";
import { errorMessage } from "../../core/errors.js";
import type { DedupeRow, SqlDialect, SqlFailure, StepOutcome, StepPlan } from "./sql-dialect.js";
import { toRow } from "./sql-json.js";
import type { ResolvedSqlTarget, SqlResult } from "./sql-options.js";

/**
 * SQLSTATE classes where running again may succeed (the transaction was rolled back): connection
 * exception, transaction rollback (serialization failure, deadlock), insufficient resources,
 * object not in prerequisite state (lock not available), operator intervention (statement timeout,
 * shutdown), system error. Every other class (syntax, integrity, data) is permanent.
 */
const TRANSIENT_CLASSES = new Set(["08", "40", "53", "55", "57", "58"]);
/**
 * What a session creating the dedupe table sees when another session created it in between:
 * duplicate table, duplicate object (the table's row type) or a unique violation on the catalog.
 */
const DUPLICATE_TABLE = new Set(["42P07", "42710", "23505"]);

function sqlStateOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** An extended-protocol query: one statement, never split on `;`. */
function extended(text: string, values: unknown[]): PgQuery {
  const q: PgQuery & { queryMode: "extended" } = { text, values, queryMode: "extended" };
  return q;
}

type DedupeDbRow = { connector: string; operation: string; external_ref: string | null; result: string | null };

/** BEGIN, then from the claim to the recorded result (COMMIT or ROLLBACK is the caller's). */
async function transaction(conn: PgPooledConnection, table: string, plan: StepPlan): Promise<StepOutcome> {
  const ms = Math.max(1, Math.min(Math.ceil(plan.budgetMs), 2_147_483_647));
  await conn.query({ text: `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = ${ms}` });
  const claim = extended(`INSERT INTO ${table} (step_key, connector, operation, at) VALUES ($1, $2, $3, $4) ON CONFLICT (step_key) DO NOTHING`, [plan.stepKey, plan.connector, plan.op.name, plan.at]);
  if ((await conn.query(claim)).rowCount !== 1) {
    const r = await conn.query<DedupeDbRow>(extended(`SELECT connector, operation, external_ref, result FROM ${table} WHERE step_key = $1`, [plan.stepKey]));
    const row: DedupeRow | undefined = r.rows[0] && { connector: r.rows[0].connector, operation: r.rows[0].operation, externalRef: r.rows[0].external_ref, result: r.rows[0].result };
    return { kind: "recorded", row };
  }
  if (!Array.isArray(plan.params)) throw new TypeError("postgres takes positional parameters ($1, $2, …): params must return an array");
  const res = await conn.query(extended(plan.op.sql, plan.params));
  const rows = res.rows.map((row) => toRow(row));
  const result: SqlResult = { rows, rowCount: res.rowCount ?? rows.length };
  const externalRef = plan.settle(result);
  await conn.query(extended(`UPDATE ${table} SET external_ref = $2, result = $3 WHERE step_key = $1`, [plan.stepKey, externalRef, JSON.stringify(result)]));
  plan.beforeCommit();
  return { kind: "committed", externalRef, result };
}

/** The PostgreSQL dialect on `target`. */
export function postgresDialect(target: Extract<ResolvedSqlTarget, { kind: "postgres" }>, table: string): SqlDialect {
  const secrets = "url" in target ? passwordOf(target.url) : [];
  let owned: OwnedPgPool | undefined;
  const pool = (): PgPool => {
    if ("pool" in target) return target.pool;
    owned ??= createPool(asGiven(target.url), { ...POSTGRES_DEFAULTS, max: target.max, applicationName: "writ-sql-connector" });
    return owned;
  };
  const ddl = `CREATE TABLE IF NOT EXISTS ${table} (step_key text PRIMARY KEY, connector text NOT NULL, operation text NOT NULL, external_ref text, result text, at bigint NOT NULL)`;
  return {
    name: "postgres",
    async ensureTable() {
      const conn = await connectGuarded(pool());
      let broken = false;
      try {
        try {
          await conn.query({ text: ddl });
        } catch (e) {
          // Two sessions creating the table at once: one of them trips over the other's catalog
          // rows. The other has committed by then, so running again sees the table and does nothing
          // (and fails for real if it still does not exist).
          if (!DUPLICATE_TABLE.has(sqlStateOf(e) ?? "")) throw e;
          await conn.query({ text: ddl });
        }
      } catch (e) {
        broken = sqlStateOf(e) === undefined;
        throw e;
      } finally {
        conn.release(broken ? true : undefined);
      }
    },
    async runStep(plan) {
      let conn: PgPooledConnection;
      try {
        conn = await connectGuarded(pool());
      } catch (error) {
        return { kind: "not_started", error };
      }
      let broken = false;
      let committing = false;
      try {
        const done = await transaction(conn, table, plan);
        if (done.kind !== "committed") {
          await conn.query({ text: "ROLLBACK" });
          return done;
        }
        committing = true;
        // COMMIT of a transaction that had failed answers ROLLBACK instead of an error.
        const c = await conn.query({ text: "COMMIT" });
        return c.command === "ROLLBACK" ? { kind: "rolled_back", error: new Error("COMMIT answered ROLLBACK"), during: "commit" } : done;
      } catch (error) {
        // A server error answering COMMIT (deferred constraint, serialization failure) means it
        // rolled back; no answer at all (connection lost) means it may have committed.
        if (committing && sqlStateOf(error) === undefined) {
          broken = true;
          return { kind: "commit_unknown", error };
        }
        try {
          await conn.query({ text: "ROLLBACK" });
        } catch {
          broken = true; // the server rolls back a transaction whose connection is gone
        }
        return { kind: "rolled_back", error, during: committing ? "commit" : "transaction" };
      } finally {
        conn.release(broken ? true : undefined);
      }
    },
    classify(e: unknown): SqlFailure {
      const state = sqlStateOf(e);
      const text = redact(errorMessage(e), secrets);
      if (state !== undefined) return { kind: TRANSIENT_CLASSES.has(state.slice(0, 2)) ? "transient" : "permanent", text: `postgres ${state}: ${text}` };
      // No SQLSTATE: a client-side mistake (bad parameters) or a lost connection (the server then
      // rolls the transaction back).
      return { kind: e instanceof TypeError || e instanceof RangeError ? "permanent" : "transient", text: `postgres: ${text}` };
    },
    async close() {
      const p = owned;
      owned = undefined;
      if (p !== undefined) await p.end();
    },
  };
}
