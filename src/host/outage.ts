/**
 * One log line per outage instead of one per poll: a loop that keeps failing against an unreachable
 * store (the database restarting, failing over, cut off) logs its first failure, counts the rest,
 * and logs once more when the store answers again, with how long it was gone (docs/host.md,
 * "When the store goes away").
 */
import { errorMessage } from "../core/errors.js";
import type { Logger } from "./options.js";

/** Tracks the failures of one recurring store operation. */
export interface OutageLog {
  /** Records a failure: logged (at `level`) when it is the first since the last success. */
  failed(e: unknown): void;
  /** Records a success: after failures, logs that the operation works again. */
  ok(): void;
}

/** An outage log for `what` (for example "claim"), with `fields` on every line. */
export function outageLog(log: Logger, what: string, fields: object, now: () => number, level: "warn" | "error" = "warn"): OutageLog {
  let since: number | null = null;
  let failures = 0;
  return {
    failed(e) {
      failures += 1;
      if (since !== null) return;
      since = now();
      log[level]({ ...fields, err: errorMessage(e) }, `${what} failed; retrying each poll interval (further failures are counted, not logged, until it works again)`);
    },
    ok() {
      if (since === null) return;
      log.info({ ...fields, failures, downMs: Math.max(0, now() - since) }, `${what} works again`);
      since = null;
      failures = 0;
    },
  };
}
