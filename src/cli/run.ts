/**
 * The `writ` command line: finds the command, parses its flags, runs it, and turns every outcome
 * into an exit code (see {@link EXIT}). User mistakes get a message naming the problem, never a
 * stack; an unexpected error prints its stack only with WRIT_DEBUG=1.
 */
import { escapeForTerminal, escapeJsonForTerminal } from "../core/text.js";
import { readFileSync } from "node:fs";
import { errorMessage } from "../core/errors.js";
import { GLOBAL_OPTIONS, flag, leadingWords, parseFlags, valueFlags, type OptionSpecs } from "./args.js";
import type { Command, CommandBody } from "./command.js";
import { CliContext, type CliEnvironment } from "./context.js";
import { EXIT, errorCodeOf, exitCodeFor, isExpectedError, usageError } from "./exit-codes.js";
import { COMMANDS } from "./table.js";

export { COMMANDS };

const GROUPS = new Set(COMMANDS.filter((c) => c.name.includes(" ")).map((c) => c.name.split(" ")[0]!));

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

function optionLines(specs: OptionSpecs): string[] {
  const rows = Object.entries(specs).map(([name, s]) => [`${s.short ? `-${s.short}, ` : "    "}--${name}${s.value ? ` ${s.value}` : ""}`, s.description + (s.multiple ? "" : "")] as const);
  const w = Math.max(...rows.map(([l]) => l.length));
  return rows.map(([l, d]) => `  ${l.padEnd(w)}  ${d}`);
}

/** The overview: every command with its summary, the global flags and the exit codes. */
export function mainHelp(): string {
  const w = Math.max(...COMMANDS.map((c) => c.name.length + (c.args ? c.args.length + 1 : 0)));
  return [
    "writ — governed action execution host",
    "",
    "Usage: writ <command> [flags]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${`${c.name}${c.args ? ` ${c.args}` : ""}`.padEnd(w)}  ${c.summary}`),
    "",
    "Global flags:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    "Exit codes: 0 ok, 1 operation failed or invariant broken, 2 usage error, 3 config error, 4 store unreachable.",
    "`writ <command> --help` shows a command's flags; docs/cli.md has the details.",
  ].join("\n");
}

/** Help of one command: its table row and its module's flags and details. */
export function commandHelp(c: Command, body: CommandBody): string {
  return [
    `Usage: writ ${c.name}${c.args ? ` ${c.args}` : ""} [flags]`,
    "",
    c.summary,
    ...(body.details ? ["", body.details] : []),
    ...(Object.keys(body.options).length > 0 ? ["", "Flags:", ...optionLines(body.options)] : []),
    "",
    "Global flags:",
    ...optionLines(GLOBAL_OPTIONS),
  ].join("\n");
}

/** Help of a command group (`writ approvals --help`): its subcommands with their summaries. */
export function groupHelp(group: string): string {
  const subs = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  const w = Math.max(...subs.map((c) => c.name.length + (c.args ? c.args.length + 1 : 0)));
  return [
    `Usage: writ ${group} <subcommand> [flags]`,
    "",
    "Subcommands:",
    ...subs.map((c) => `  ${`${c.name}${c.args ? ` ${c.args}` : ""}`.padEnd(w)}  ${c.summary}`),
    "",
    `\`writ ${group} <subcommand> --help\` shows its flags.`,
  ].join("\n");
}

/** True when `words` name a group without one of its subcommands. */
function isBareGroup(words: readonly string[]): boolean {
  const [first, second] = words;
  return first !== undefined && GROUPS.has(first) && (second === undefined || !COMMANDS.some((c) => c.name === `${first} ${second}`));
}

/** Finds the command named by the leading words; unknown ones are usage errors. */
function findCommand(words: readonly string[]): { command: Command; consumed: number } | null {
  const [first, second] = words;
  if (first === undefined) return null;
  if (GROUPS.has(first)) {
    const subs = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
    const names = subs.map((c) => c.name.split(" ")[1]).join(", ");
    if (second === undefined) throw usageError(`\`writ ${first}\` needs a subcommand: ${names}`);
    const command = subs.find((c) => c.name === `${first} ${second}`);
    if (!command) throw usageError(`unknown command \`writ ${first} ${second}\`; \`writ ${first}\` has: ${names}`);
    return { command, consumed: 2 };
  }
  const command = COMMANDS.find((c) => c.name === first);
  if (!command) {
    const near = COMMANDS.map((c) => c.name.split(" ")[0]!).find((n) => n.startsWith(first.slice(0, 3)));
    throw usageError(`unknown command \`writ ${first}\`${near ? ` (did you mean \`writ ${near}\`?)` : ""}; \`writ --help\` lists the commands`);
  }
  return { command, consumed: 1 };
}

/** Removes the first `n` command words from `args` (flags and their values stay). */
function withoutWords(args: readonly string[], words: readonly string[], n: number, takesValue: Set<string>): string[] {
  const out: string[] = [];
  let dropped = 0;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") {
      out.push(...args.slice(i));
      break;
    }
    if (a.startsWith("-")) {
      out.push(a);
      if (!a.includes("=") && takesValue.has(a) && i + 1 < args.length) out.push(args[++i]!);
      continue;
    }
    if (dropped < n && a === words[dropped]) {
      dropped++;
      continue;
    }
    out.push(a);
  }
  return out;
}

/** Exactly the positional arguments the command declares (`args`), else a usage error naming them. */
function checkArity(c: Command, positionals: readonly string[], where: string): void {
  const want = c.args ? c.args.split(" ").length : 0;
  if (positionals.length < want) throw usageError(`\`${where}\` needs ${c.args!.split(" ").slice(positionals.length).join(" ")}`);
  if (positionals.length > want) throw usageError(`unexpected argument ${JSON.stringify(positionals[want])} for \`${where}\``);
  if (positionals.some((x) => x.length === 0)) throw usageError(`\`${where}\`: an argument is empty`);
}

/** The flags that take a value among the global ones and those of `bodies`. */
function valueFlagsOf(bodies: readonly CommandBody[]): Set<string> {
  return valueFlags(Object.assign({}, GLOBAL_OPTIONS, ...bodies.map((b) => b.options)) as OptionSpecs);
}

/**
 * The command `args` name, loaded. Command words are found knowing only the global flags' values;
 * when that names no command and there are flags (`writ --as user:x ls`: a command's flag whose
 * value was taken for a word), every command's flags are loaded and the words found again.
 */
async function dispatch(args: readonly string[], words: readonly string[]): Promise<{ command: Command; consumed: number; body: CommandBody; words: string[] }> {
  let found: ReturnType<typeof findCommand>;
  try {
    found = findCommand(words);
  } catch (e) {
    if (!args.some((a) => a.startsWith("-"))) throw e;
    const all = valueFlagsOf(await Promise.all(COMMANDS.map((c) => c.load())));
    const again = leadingWords(args, all);
    const retry = findCommand(again)!;
    return { ...retry, body: await retry.command.load(), words: again };
  }
  const body = await found!.command.load();
  return { ...found!, body, words: leadingWords(args, valueFlagsOf([body])) };
}

/** Runs `writ` with `args` (argv without node and the script); resolves to the exit code. */
export async function runCli(args: readonly string[], environment: CliEnvironment): Promise<number> {
  let ctx: CliContext | null = null;
  let json = args.includes("--json");
  try {
    const words = leadingWords(args, valueFlagsOf([]));
    const wantsHelp = args.includes("--help") || args.includes("-h");
    if (words[0] === "help" && isBareGroup(words.slice(1)) && words.length === 2) {
      environment.io.stdout.write(groupHelp(words[1]!) + "\n");
      return EXIT.OK;
    }
    if (wantsHelp && isBareGroup(words) && words.length === 1) {
      environment.io.stdout.write(groupHelp(words[0]!) + "\n");
      return EXIT.OK;
    }
    if (words[0] === "help") {
      const target = words.length > 1 ? findCommand(words.slice(1)) : null;
      environment.io.stdout.write((target ? commandHelp(target.command, await target.command.load()) : mainHelp()) + "\n");
      return EXIT.OK;
    }
    if (words.length === 0) {
      if (args.includes("--version")) {
        environment.io.stdout.write(`writ ${version()}\n`);
        return EXIT.OK;
      }
      if (wantsHelp) {
        environment.io.stdout.write(mainHelp() + "\n");
        return EXIT.OK;
      }
      throw usageError("no command given; `writ --help` lists the commands");
    }
    const found = await dispatch(args, words);
    const where = `writ ${found.command.name}`;
    const rest = withoutWords(args, found.words, found.consumed, valueFlagsOf([found.body]));
    const parsed = parseFlags(rest, found.body.options, where);
    json = flag(parsed.values, "json");
    if (flag(parsed.values, "help")) {
      environment.io.stdout.write(commandHelp(found.command, found.body) + "\n");
      return EXIT.OK;
    }
    checkArity(found.command, parsed.positionals, where);
    ctx = new CliContext(environment, parsed.values);
    const code = await found.body.run(ctx, parsed.positionals);
    return code ?? EXIT.OK;
  } catch (e) {
    reportError(environment, e, json);
    return exitCodeFor(e);
  } finally {
    if (ctx) {
      try {
        await ctx.close();
      } catch (e) {
        environment.io.stderr.write(`writ: closing the store failed: ${escapeForTerminal(errorMessage(e))}\n`);
      }
    }
  }
}

function reportError(environment: CliEnvironment, e: unknown, json: boolean): void {
  const { stderr } = environment.io;
  const message = errorMessage(e);
  if (json) {
    stderr.write(escapeJsonForTerminal(JSON.stringify({ error: { code: errorCodeOf(e), message, exitCode: exitCodeFor(e) } })) + "\n");
  } else {
    // An error message can quote outside input (an id, a key): escaped for the terminal.
    stderr.write(`writ: ${escapeForTerminal(message, { keepNewlines: true })}\n`);
  }
  if (!isExpectedError(e)) {
    if (environment.env.WRIT_DEBUG === "1" && e instanceof Error && e.stack) stderr.write(e.stack + "\n");
    else if (!json) stderr.write("writ: this looks like a bug; run again with WRIT_DEBUG=1 for the stack trace\n");
  }
}
