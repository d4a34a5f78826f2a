/**
 * `sqlConnector`: one statement per operation on a PostgreSQL or SQLite database, made idempotent
 * by a dedupe row written in the same transaction:
 *
 *   BEGIN; claim the step key (INSERT … ON CONFLICT DO NOTHING)
 *     already there → answer its recorded result; ROLLBACK (the statement is not run again)
 *     claimed      → run the statement; record its reference and result in the row; COMMIT
 *
 * The statement and the row commit together or not at all, so a step key that is in the table
 * names an effect that happened, and one that is not names an effect that did not.
 */
import { defineConnector, type Connector, type ConnectorContext, type ConnectorReply } from "../../core/action.js";
import { errorMessage } from "../../core/errors.js";
import type { Json } from "../../core/types.js";
import { budgetMs } from "../connector-options.js";
import type { DedupeRow, SqlDialect } from "./sql-dialect.js";
import { resolveSqlOptions, type ResolvedSqlOperation, type ResolvedSqlOptions, type SqlConnectorOptions, type SqlParams, type SqlResult } from "./sql-options.js";
import { postgresDialect } from "./sql-postgres.js";
import { sqliteDialect } from "./sql-sqlite.js";

/** A SQL connector: a connector plus `close()`, which releases what it opened (its pool or file). */
export interface SqlConnector extends Connector {
  close(): Promise<void>;
}

/** Longest external reference accepted (the boundary's limit). */
const MAX_REF = 512;

/** A definite answer decided inside the transaction (it is rolled back first). */
class Decided {
  readonly reply: ConnectorReply;
  constructor(reply: ConnectorReply) {
    this.reply = reply;
  }
}

function recordedReply(row: DedupeRow | undefined, connector: string, op: string, where: string): ConnectorReply {
  if (row === undefined) return { outcome: "transient_failure", reason: `${where}: the step key was claimed by a call that rolled back` };
  if (row.connector !== connector || row.operation !== op) {
    return { outcome: "ambiguous", reason: `${where}: the step key is recorded for ${row.connector}/${row.operation}, not this operation` };
  }
  let output: Json | undefined;
  try {
    output = row.result === null ? undefined : (JSON.parse(row.result) as Json);
  } catch {
    output = undefined;
  }
  if (row.externalRef === null || output === undefined) return { outcome: "ambiguous", reason: `${where}: the step key's recorded result is incomplete` };
  return { outcome: "success", externalRef: row.externalRef, output };
}

function paramsOf(op: ResolvedSqlOperation, ctx: ConnectorContext): SqlParams | Decided {
  let params: unknown;
  try {
    params = op.params === undefined ? [] : op.params(ctx.input);
  } catch (e) {
    return new Decided({ outcome: "permanent_failure", reason: `operation ${op.name}: params threw: ${errorMessage(e)}` });
  }
  if (Array.isArray(params)) return params;
  const proto = typeof params === "object" && params !== null ? (Object.getPrototypeOf(params) as unknown) : undefined;
  if (proto === Object.prototype || proto === null) return params as SqlParams;
  return new Decided({ outcome: "permanent_failure", reason: `operation ${op.name}: params must return an array or a plain object` });
}

function externalRefOf(o: ResolvedSqlOptions, op: ResolvedSqlOperation, result: SqlResult, stepKey: string, where: string): string {
  if (op.externalRef === undefined) return `sql:${o.id}:${stepKey}`;
  let ref: unknown;
  try {
    ref = op.externalRef(result, stepKey);
  } catch (e) {
    throw new Decided({ outcome: "permanent_failure", reason: `${where}: externalRef threw (rolled back): ${errorMessage(e)}` });
  }
  if (typeof ref !== "string" || ref.length === 0 || ref.length > MAX_REF) {
    throw new Decided({ outcome: "permanent_failure", reason: `${where}: externalRef returned no string of 1 to ${MAX_REF} characters (rolled back)` });
  }
  return ref;
}

async function runStep(o: ResolvedSqlOptions, d: SqlDialect, ensureTable: () => Promise<void>, op: ResolvedSqlOperation, ctx: ConnectorContext): Promise<ConnectorReply> {
  const where = `${d.name} operation ${op.name}`;
  const params = paramsOf(op, ctx);
  if (params instanceof Decided) return params.reply;
  const budget = budgetMs(o.clock, ctx.deadline, undefined);
  if (ctx.signal.aborted) return { outcome: "transient_failure", reason: `${where}: aborted before the transaction began` };
  if (!(budget > 0)) return { outcome: "transient_failure", reason: `${where}: the step deadline passed before the transaction began` };
  const failed = (e: unknown, what: string): ConnectorReply => {
    const f = d.classify(e);
    return { outcome: f.kind === "transient" ? "transient_failure" : "permanent_failure", reason: `${where}: ${what}: ${f.text}` };
  };
  try {
    await ensureTable();
  } catch (e) {
    return failed(e, "creating the dedupe table failed");
  }
  const stepKey = ctx.idempotencyKey;
  const end = await d.runStep({
    stepKey,
    connector: o.id,
    op,
    params,
    at: o.clock.now(),
    budgetMs: budget,
    settle: (result) => externalRefOf(o, op, result, stepKey, where),
    beforeCommit: () => {
      if (ctx.signal.aborted) throw new Decided({ outcome: "transient_failure", reason: `${where}: aborted before COMMIT (rolled back, nothing applied)` });
    },
  });
  switch (end.kind) {
    case "not_started":
      // Nothing started: whatever went wrong, running again may succeed.
      return { outcome: "transient_failure", reason: `${where}: could not connect: ${d.classify(end.error).text}` };
    case "recorded":
      return recordedReply(end.row, o.id, op.name, where);
    case "committed":
      return { outcome: "success", externalRef: end.externalRef, output: { rows: end.result.rows, rowCount: end.result.rowCount } };
    case "commit_unknown":
      return {
        outcome: "ambiguous",
        reason: `${where}: COMMIT failed without an answer (${d.classify(end.error).text}): it may have committed; the dedupe table says which (a call with the same step key answers from it)`,
      };
    case "rolled_back":
      if (end.error instanceof Decided) return end.error.reply;
      return failed(end.error, end.during === "commit" ? "COMMIT failed (rolled back)" : "the transaction failed (rolled back)");
  }
}

/**
 * A connector whose operations are SQL statements on one database, each run at most once per step
 * idempotency key: a repeated call answers the recorded result without running the statement
 * again. Errors: constraint, syntax and data errors are `permanent_failure`; a failure to connect,
 * a lock or serialization conflict, or a statement timeout is `transient_failure` (nothing was
 * committed); a COMMIT that got no answer is `ambiguous`. See docs/connectors.md.
 *
 * @example
 * const ledger = sqlConnector({
 *   id: "ledger",
 *   target: { kind: "postgres", url: process.env.LEDGER_URL! },
 *   operations: {
 *     credit: {
 *       sql: "INSERT INTO credits (account, amount) VALUES ($1, $2) RETURNING id",
 *       params: (input) => [(input as { account: string }).account, (input as { amount: number }).amount],
 *       externalRef: (result) => `credit:${String(result.rows[0]?.id)}`,
 *     },
 *   },
 * });
 */
export function sqlConnector(options: SqlConnectorOptions): SqlConnector {
  const o = resolveSqlOptions(options);
  const t = o.target;
  const d = t.kind === "postgres" ? postgresDialect(t, o.dedupeTable) : sqliteDialect(t, o.dedupeTable);
  let table: Promise<void> | undefined;
  const ensureTable = (): Promise<void> =>
    (table ??= d.ensureTable().catch((e: unknown) => {
      table = undefined;
      throw e;
    }));
  const operations: Connector["operations"] = {};
  for (const op of o.operations) operations[op.name] = (ctx) => runStep(o, d, ensureTable, op, ctx);
  const connector = defineConnector({ id: o.id, operations });
  return {
    ...connector,
    async close() {
      table = undefined;
      await d.close();
    },
  };
}
