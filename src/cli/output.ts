/**
 * What the CLI prints: tables and `key: value` blocks for people, one JSON document for scripts
 * (`--json`). Results go to stdout, messages and progress to stderr. Everything printed is escaped
 * for the terminal (control, bidi and zero-width characters shown as `\u{XXXX}`, in JSON as
 * `\uXXXX`): text from outside (an idempotency key, a reason, a note) never repaints a screen.
 */
import { escapeForTerminal, escapeJsonForTerminal } from "../core/text.js";

/** Where the CLI writes; `main` passes the process streams, tests may pass buffers. */
export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  /** Whether stdout is a terminal (progress bars stay off when the data itself goes there). */
  stdoutIsTTY: boolean;
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
}

export class Printer {
  readonly json: boolean;
  readonly io: CliIo;
  constructor(io: CliIo, json: boolean) {
    this.io = io;
    this.json = json;
  }

  /** Prints `data` as JSON with `--json`, else runs `human`. */
  result(data: unknown, human: () => void): void {
    if (this.json) this.io.stdout.write(escapeJsonForTerminal(JSON.stringify(data, null, 2)) + "\n");
    else human();
  }

  line(text = ""): void {
    this.io.stdout.write(escapeForTerminal(text, { keepNewlines: true }) + "\n");
  }

  /** A note for people on stderr (kept off stdout so `--json` output stays one document). */
  note(text: string): void {
    this.io.stderr.write(escapeForTerminal(text, { keepNewlines: true }) + "\n");
  }

  table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = "(none)"): void {
    if (rows.length === 0) {
      this.line(empty);
      return;
    }
    const cells = rows.map((r) => columns.map((c) => oneLine(c.value(r))));
    const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
    const fmt = (row: readonly string[]): string =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd();
    this.line(fmt(columns.map((c) => c.header.toUpperCase())));
    for (const row of cells) this.line(fmt(row));
  }

  /** `key: value` lines, keys aligned; undefined values are left out. */
  record(fields: ReadonlyArray<readonly [string, string | undefined]>): void {
    const shown = fields.filter((f): f is readonly [string, string] => f[1] !== undefined);
    const w = Math.max(0, ...shown.map(([k]) => k.length));
    for (const [k, v] of shown) this.line(`${(k + ":").padEnd(w + 1)} ${v}`);
  }
}

function oneLine(s: string): string {
  return escapeForTerminal(s.replace(/\s*\n\s*/g, " "));
}

/** Epoch ms as an ISO time, or "-" when absent. */
export function time(ms: number | undefined): string {
  return ms === undefined ? "-" : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Compact JSON for a table cell, cut at `max` characters. */
export function brief(v: unknown, max = 60): string {
  const s = v === undefined ? "-" : typeof v === "string" ? v : JSON.stringify(v);
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}
