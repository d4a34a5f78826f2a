/** The shape of a CLI command: its name, flags, help text and what it runs. */
import type { OptionSpecs } from "./args.js";
import type { CliContext } from "./context.js";

/** A command in the table (src/cli/table.ts): what help lists, and how to load the rest. */
export interface Command {
  /** The words that select it: "serve", "approvals approve". */
  name: string;
  /** One line for the command list. */
  summary: string;
  /** Its positional arguments, e.g. "<invocation-id>": the dispatcher requires exactly these (none when absent). */
  args?: string;
  /** Imports the command's module (on dispatch or for its own help): its flags and its code. */
  load(): Promise<CommandBody>;
}

/** What a command's module defines: its flags, more help, and what it runs. */
export interface CommandBody {
  options: OptionSpecs;
  /** More help text, shown by `writ <command> --help`. */
  details?: string;
  /**
   * Runs the command. Returns the exit code (0 when nothing is returned). Throws for failures;
   * the caller maps errors to exit codes and closes the context.
   */
  run(ctx: CliContext, positionals: string[]): Promise<number | void>;
}

/** A flag an operator command takes to say who acts. */
export const AS_OPTION = {
  as: { type: "string", value: "<type:id>", description: "who acts, e.g. user:alice (default: $WRIT_ACTOR, else user:<login name>)" },
} satisfies OptionSpecs;

export const LIMIT_OPTION = {
  limit: { type: "string", value: "<n>", description: "at most n rows (default 50)" },
} satisfies OptionSpecs;

export const QUIET_OPTION = {
  quiet: { type: "boolean", short: "q", description: "print only the ids, one per line (for scripts: ID=$(writ ... -q))" },
} satisfies OptionSpecs;

/** Prints a list: JSON with --json, ids with --quiet, else the table `human` draws. */
export function printList<T>(ctx: CliContext, data: unknown, items: readonly T[], idOf: (item: T) => string, human: () => void): void {
  if (!ctx.out.json && ctx.values.quiet === true) {
    for (const item of items) ctx.out.line(idOf(item));
    return;
  }
  ctx.out.result(data, human);
}
