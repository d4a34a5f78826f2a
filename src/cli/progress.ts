/**
 * A small progress bar on stderr for long work (journal export and verify). It shows only when
 * stderr is a terminal, only once the work has run for `delayMs` (short work prints nothing), and
 * redraws at most every `intervalMs`. `done()` erases it.
 */

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface Progress {
  /** Sets how much is done (absolute). */
  update(done: number): void;
  /** Erases the bar (if drawn). */
  done(): void;
}

export interface ProgressOptions {
  label: string;
  /** Units of work in all; 0 or unknown shows a counter without a bar. */
  total: number;
  /** @defaultValue 250 */
  delayMs?: number;
  /** @defaultValue 100 */
  intervalMs?: number;
  /** @defaultValue Date.now */
  now?: () => number;
}

/** A bar that draws nothing. */
export const NO_PROGRESS: Progress = { update() {}, done() {} };

/** A progress bar on `stream`, or a no-op when `stream` is not a terminal. */
export function createProgress(stream: ProgressStream, options: ProgressOptions): Progress {
  if (stream.isTTY !== true) return NO_PROGRESS;
  const now = options.now ?? Date.now;
  const started = now();
  const delayMs = options.delayMs ?? 250;
  const intervalMs = options.intervalMs ?? 100;
  let drawnAt = -Infinity;
  let drawn = false;
  return {
    update(done) {
      const t = now();
      if (t - started < delayMs || t - drawnAt < intervalMs) return;
      drawnAt = t;
      drawn = true;
      stream.write(`\r\x1b[K${renderProgress(options.label, done, options.total, t - started, stream.columns ?? 80)}`);
    },
    done() {
      if (drawn) stream.write("\r\x1b[K");
    },
  };
}

/** One line: `label [#######-------]  52%  5200/10000  3.1s`, fitted to `columns`. */
export function renderProgress(label: string, done: number, total: number, elapsedMs: number, columns: number): string {
  const secs = `${(elapsedMs / 1000).toFixed(1)}s`;
  if (!(total > 0)) return `${label} ${done} ${secs}`;
  const ratio = Math.min(1, Math.max(0, done / total));
  const pct = `${Math.floor(ratio * 100)}%`.padStart(4);
  const tail = ` ${pct}  ${done}/${total}  ${secs}`;
  const width = Math.max(10, Math.min(40, columns - label.length - tail.length - 4));
  const fill = Math.round(ratio * width);
  return `${label} [${"#".repeat(fill)}${"-".repeat(width - fill)}]${tail}`;
}
