/**
 * Keeps PostgreSQL's statistics of the store's busiest tables current (docs/stores.md, "Hot
 * statements and history"). Without statistics (a table never analyzed: a fresh database, or a
 * server with autovacuum off) the planner cannot tell the primary key from a two-column prefix of
 * another index, and the plans the store's functions cache on each connection read a whole scope's
 * history on every call. Every `everyMs` the keeper asks `pg_stat_user_tables` which of these tables
 * changed by more than 10% (and at least 500 rows) since their last ANALYZE, and analyzes those,
 * skipping a table another session is analyzing or vacuuming. ANALYZE invalidates cached plans, so
 * every connection replans on its next call. A hint: failures are ignored and retried next time.
 */
import { statement, type Exec } from "./postgres-exec.js";

/** The tables every invocation writes. */
export const HOT_TABLES = ["writ_invocations", "writ_journal", "writ_attempts", "writ_steps", "writ_idempotency", "writ_consumed_decisions"] as const;

const STALE = statement(
  "stale_statistics",
  "SELECT relname FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = ANY($1::text[]) " +
    "AND n_mod_since_analyze > greatest(500, 0.1 * n_live_tup) ORDER BY relname",
);

/** Analyzes the hot tables whose statistics are stale; returns their names. */
export async function analyzeStale(x: Exec, command: (text: string) => Promise<unknown>): Promise<string[]> {
  const rows = await x.rows<{ relname: string }>(STALE, [[...HOT_TABLES]]);
  // Only names from HOT_TABLES reach the statement text.
  const stale = rows.map((r) => r.relname).filter((n): n is (typeof HOT_TABLES)[number] => (HOT_TABLES as readonly string[]).includes(n));
  if (stale.length > 0) await command(`ANALYZE (SKIP_LOCKED) ${stale.join(", ")}`);
  return stale;
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
