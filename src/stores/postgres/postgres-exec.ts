/**
 * The one door through which the store's statements reach a connection: names prepared
 * statements, refuses text PostgreSQL cannot store faithfully, maps errors, and remembers that a
 * transaction failed (PostgreSQL aborts it; it must not then commit).
 */
import { WritError } from "../../core/errors.js";
import { storable } from "../../core/text.js";
import type { PgConnection, PgQuery, PgResult } from "./postgres-driver.js";
import { toWritError } from "./postgres-errors.js";

/** One SQL statement of the store: a stable name and its text with `$n` parameters. */
export interface Statement {
  name: string;
  text: string;
  /**
   * Its callers refuse unstorable text themselves: the exec does not check its values again (the
   * batch statement, whose one value is JSON that `JSON.stringify` wrote from values checked one by
   * one, each member failing alone).
   */
  checked?: true;
}

/** Declares a statement; `name` is prefixed so it never clashes with an application's own. */
export function statement(name: string, text: string): Statement {
  return { name: `writ_${name}`, text };
}

/** Runs statements on one connection. */
export interface Exec {
  rows<R extends object>(stmt: Statement, values: unknown[]): Promise<R[]>;
  /** The number of rows the statement touched. */
  count(stmt: Statement, values: unknown[]): Promise<number>;
}

/**
 * Refuses a string value no `text` column stores faithfully; with `deep`, also a string element of
 * an array value.
 */
export function checkValues(values: readonly unknown[], deep = false): void {
  for (const v of values) {
    if (deep && Array.isArray(v)) {
      for (const e of v as unknown[]) checkValue(e);
    } else checkValue(v);
  }
}

function checkValue(v: unknown): void {
  // NUL is refused by `text` columns; a lone surrogate would be replaced by U+FFFD on the way.
  if (typeof v === "string" && !storable(v)) {
    throw new WritError("INVALID_ARGUMENT", "a key or id contains NUL or an unpaired surrogate, which PostgreSQL text cannot store faithfully");
  }
}

/** An `Exec` over one connection, used for the life of one transaction (or one migration run). */
export class ConnectionExec implements Exec {
  readonly #conn: PgConnection;
  readonly #prepared: boolean;
  readonly #secrets: readonly string[];
  /** The first database error; PostgreSQL has aborted the transaction since. */
  failure: WritError | undefined;

  readonly #deadline: { query_timeout?: number };

  /** `queryTimeoutMs` replaces the connection's statement deadline for this exec's statements (migrations, maintenance). */
  constructor(conn: PgConnection, prepared: boolean, secrets: readonly string[], queryTimeoutMs?: number) {
    this.#conn = conn;
    this.#prepared = prepared;
    this.#secrets = secrets;
    this.#deadline = queryTimeoutMs === undefined ? {} : { query_timeout: queryTimeoutMs };
  }

  /** The end of the last statement called: the next one is sent after it. */
  #tail: Promise<void> = Promise.resolve();
  #ended = false;

  /**
   * Ends the exec before its connection gets a ROLLBACK or goes back to the pool: statements still
   * waiting their turn fail unsent, and the returned promise settles once the one on the wire
   * (if any) has its answer, so nothing of this exec reaches the connection afterwards.
   */
  end(): Promise<void> {
    this.#ended = true;
    return this.#tail;
  }

  /**
   * Sends `q` once every statement called before it has its answer (one at a time, in call order,
   * even when a caller issues several at once: `Promise.all` inside a transaction; node-postgres
   * queues such calls itself today but deprecates it, and pg 9 refuses a query while one runs).
   * A statement's database error becomes the exec's `failure`; after one, `refuseAborted`
   * statements fail unsent (PostgreSQL has aborted the transaction).
   */
  #send<R extends object>(q: PgQuery, refuseAborted: boolean): Promise<PgResult<R>> {
    const p = this.#tail.then(async () => {
      if (this.#ended) throw new WritError("STORE_ERROR", "the transaction had ended before this statement was sent");
      if (refuseAborted && this.failure !== undefined) {
        throw new WritError("STORE_ERROR", "the transaction was aborted by an earlier error and can only roll back", { cause: this.failure });
      }
      try {
        return await this.#conn.query<R>(q);
      } catch (e) {
        const err = toWritError(e, this.#secrets);
        this.failure ??= err;
        throw err;
      }
    });
    this.#tail = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  }

  #run<R extends object>(stmt: Statement, values: unknown[]): Promise<PgResult<R>> {
    if (stmt.checked !== true) checkValues(values);
    return this.#send<R>(this.#prepared ? { name: stmt.name, text: stmt.text, values, ...this.#deadline } : { text: stmt.text, values, ...this.#deadline }, true);
  }

  async rows<R extends object>(stmt: Statement, values: unknown[]): Promise<R[]> {
    return (await this.#run<R>(stmt, values)).rows;
  }

  async count(stmt: Statement, values: unknown[]): Promise<number> {
    return (await this.#run(stmt, values)).rowCount ?? 0;
  }

  /** Runs a utility command (BEGIN, COMMIT, DDL) without preparing it; returns its command tag. */
  async command(text: string): Promise<string> {
    return (await this.#send({ text, ...this.#deadline }, false)).command;
  }
}
