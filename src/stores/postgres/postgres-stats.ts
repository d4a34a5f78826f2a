/**
 * Keeps PostgreSQL's statistics of the store's busiest tables current (docs/stores.md, "Hot
 * statements and history"). Without statistics (a table never analyzed: a fresh database, or a
 * server with autovacuum off) the planner cannot tell the primary key from a two-column prefix of
 * another index, and the plans the store's functions cache on each connection read a whole scope's
 * history on every call. Every `everyMs` the keeper asks `pg_stat_user_tables` which of these tables
 * changed by more than 10% (and at least 500 rows) since their last ANALYZE, and analyzes those,
 * skipping a table another session is analyzing or vacuuming. A table never analyzed (a fresh
 * database) is analyzed once it has 50 changes: until then a probe by primary key may walk the
 * scope's rows, and a few hundred rows' statistics already show the planner which index is
 * unique. ANALYZE invalidates cached plans, so every connection replans on its next call. Where autovacuum does not run (a CI image, a server
 * configured without it), the keeper also vacuums the tables whose dead rows passed 10%: each
 * invocation leaves several dead row versions behind, and the hot index scans walk them until a
 * vacuum removes them. Where autovacuum runs, vacuuming stays its job (migration 8 tunes it for
 * these tables), except for the queue tables: their live rows are few (the journal's pending
 * queue holds only what the sequencer has not sealed yet) while every entry leaves a dead one, and
 * the sequencer's read of the queue walks the dead ones until a vacuum removes them. Autovacuum
 * visits a database at most once a minute (`autovacuum_naptime`), by when a busy host has left
 * about 90,000 there; the keeper vacuums a queue table whenever it holds more than 1,000 dead rows,
 * which costs the few pages the table spans. A hint: failures are ignored and retried next time.
 */
import { statement, type Exec } from "./postgres-exec.js";

/** The tables every invocation writes. */
export const HOT_TABLES = ["writ_invocations", "writ_journal", "writ_journal_pending", "writ_journal_chain", "writ_attempts", "writ_steps", "writ_idempotency", "writ_consumed_decisions"] as const;
/** Of the hot tables, the queues: few live rows, a dead one per row that passed through; vacuumed by the keeper whether or not autovacuum runs. */
export const QUEUE_TABLES: ReadonlyArray<(typeof HOT_TABLES)[number]> = ["writ_journal_pending"];

/** A table never analyzed gets its first statistics after this many changes (then every 10%, at least 500). */
export const FIRST_ANALYZE_ROWS = 50;

const STALE = statement(
  "stale_statistics_4",
  `SELECT s.relname,
          s.n_mod_since_analyze > CASE WHEN s.last_analyze IS NULL AND s.last_autoanalyze IS NULL THEN ${FIRST_ANALYZE_ROWS}
                                       ELSE greatest(500, 0.1 * s.n_live_tup) END AS analyze,
          (s.relname = ANY($2::text[]) AND s.n_dead_tup > 1000)
          OR (s.n_dead_tup > greatest(1000, 0.1 * s.n_live_tup)
            AND (current_setting('autovacuum') = 'off' OR coalesce(c.reloptions @> ARRAY['autovacuum_enabled=false'], false))) AS vacuum
     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND s.relname = ANY($1::text[])
    ORDER BY s.relname`,
);

/** What one check did: the tables it analyzed, and those it vacuumed (with an analyze). */
export interface Maintained {
  analyzed: string[];
  vacuumed: string[];
}

/**
 * Analyzes the hot tables whose statistics are stale and, where autovacuum does not run (off for
 * the server, or for the table), vacuums those whose dead rows passed 10% (and 1,000): the hot
 * statements' index scans would otherwise walk every dead entry of every ended invocation. Queue
 * tables are vacuumed past 1,000 dead rows wherever autovacuum runs or not.
 */
export async function analyzeStale(x: Exec, command: (text: string) => Promise<unknown>, o: { vacuum?: boolean } = {}): Promise<Maintained> {
  const rows = await x.rows<{ relname: string; analyze: boolean; vacuum: boolean }>(STALE, [[...HOT_TABLES], [...QUEUE_TABLES]]);
  // Only names from HOT_TABLES reach the statement text.
  const hot = rows.filter((r) => (HOT_TABLES as readonly string[]).includes(r.relname)).map((r) => ({ ...r, vacuum: r.vacuum && o.vacuum !== false }));
  const vacuumed = hot.filter((r) => r.vacuum).map((r) => r.relname);
  const analyzed = hot.filter((r) => r.analyze && !r.vacuum).map((r) => r.relname);
  // A queue is vacuumed without truncating its file: truncation takes an exclusive lock that would
  // stall the writers of a table this busy, and the space is reused at once anyway.
  const queues = vacuumed.filter((t) => QUEUE_TABLES.includes(t as (typeof QUEUE_TABLES)[number]));
  const tables = vacuumed.filter((t) => !queues.includes(t));
  if (queues.length > 0) await command(`VACUUM (SKIP_LOCKED, ANALYZE, TRUNCATE false) ${queues.join(", ")}`);
  if (tables.length > 0) await command(`VACUUM (SKIP_LOCKED, ANALYZE) ${tables.join(", ")}`);
  if (analyzed.length > 0) await command(`ANALYZE (SKIP_LOCKED) ${analyzed.join(", ")}`);
  return { analyzed, vacuumed };
}

/**
 * Counts the journal entries this store sealed and, once `rows` have been sealed since the last
 * time, runs `vacuum` (the pending queue's) in the background; never two at once. A failure is a
 * missed hint: counted again from zero. `rows` 0 never vacuums.
 */
export function queueVacuumer(rows: number, vacuum: () => Promise<unknown>): { sealed(n: number): void; stop(): Promise<void> } {
  let since = 0;
  let running: Promise<unknown> | undefined;
  let stopped = false;
  return {
    sealed(n) {
      if (rows <= 0 || stopped) return;
      since += n;
      if (since < rows || running !== undefined) return;
      since = 0;
      running = vacuum()
        .catch(() => undefined)
        .finally(() => {
          running = undefined;
        });
    },
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Runs `check` every `everyMs` once started, one run at a time, until stopped. */
export function statsKeeper(everyMs: number, check: () => Promise<unknown>): { start(): void; stop(): Promise<void> } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<unknown> | undefined;
  let started = false;
  let stopped = false;
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = check()
        .catch(() => undefined)
        .finally(() => {
          running = undefined;
          schedule();
        });
    }, everyMs);
    timer.unref?.();
  };
  return {
    start() {
      if (started || stopped || everyMs <= 0) return;
      started = true;
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
    },
  };
}
