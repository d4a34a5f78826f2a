/**
 * Flag parsing on node:util parseArgs: global flags, one command's flags, and the checks that turn
 * every mistake into a usage error naming it (exit 2).
 */
import { parseArgs } from "node:util";
import { ACTOR_TYPES, type Actor } from "../core/types.js";
import { usageError } from "./exit-codes.js";

export interface OptionSpec {
  type: "string" | "boolean";
  short?: string;
  multiple?: boolean;
  /** One line for `--help`. */
  description: string;
  /** Shown in help after the flag, e.g. `<file>`. */
  value?: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

/** Flags every command takes. Defaults come from the environment (see docs/cli.md). */
export const GLOBAL_OPTIONS = {
  config: { type: "string", value: "<file>", description: "config file (default: $WRIT_CONFIG, else writ.config.ts in the current directory, else package.json's writ.config)" },
  tenant: { type: "string", value: "<id>", description: "tenant of the scope (default: $WRIT_TENANT, else the config's demo tenant, else \"default\")" },
  space: { type: "string", value: "<id>", description: "space of the scope (default: $WRIT_SPACE, else the tenant's only space, else the config's demo space, else \"default\")" },
  json: { type: "boolean", description: "print machine-readable JSON on stdout instead of tables" },
  help: { type: "boolean", short: "h", description: "show help" },
} satisfies OptionSpecs;

export type Values = Record<string, string | boolean | string[] | boolean[] | undefined>;

export interface Parsed {
  values: Values;
  positionals: string[];
}

interface NodeParseError {
  code?: string;
  message: string;
}

/** Parses `args` against the global flags plus `specs`; unknown flags and missing values are usage errors. */
export function parseFlags(args: readonly string[], specs: OptionSpecs, where: string): Parsed {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const [name, s] of Object.entries({ ...GLOBAL_OPTIONS, ...specs } as OptionSpecs)) {
    options[name] = { type: s.type, ...(s.short ? { short: s.short } : {}), ...(s.multiple ? { multiple: true } : {}) };
  }
  try {
    const { values, positionals } = parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
    return { values: values as Values, positionals };
  } catch (e) {
    const err = e as NodeParseError;
    const flag = /'(-{1,2}[^' ]+)/.exec(err.message)?.[1];
    switch (err.code) {
      case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
        throw usageError(`unknown option ${flag ?? ""} for \`${where}\` (see \`${where} --help\`)`);
      case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
        throw usageError(`${flag ?? "an option"}: ${/argument missing/.test(err.message) ? "needs a value" : "does not take a value"} (see \`${where} --help\`)`);
      default:
        throw usageError(`${err.message} (see \`${where} --help\`)`);
    }
  }
}

/** The value-taking flags among `specs`, so a first pass can skip their values when it looks for the command. */
export function valueFlags(specs: OptionSpecs): Set<string> {
  const out = new Set<string>();
  for (const [name, s] of Object.entries(specs)) {
    if (s.type !== "string") continue;
    out.add(`--${name}`);
    if (s.short) out.add(`-${s.short}`);
  }
  return out;
}

/** The words before the first flag-free tail: `writ --json approvals ls --status x` -> ["approvals", "ls"]. */
export function leadingWords(args: readonly string[], takesValue: Set<string>): string[] {
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === "--") break;
    if (a.startsWith("-")) {
      if (!a.includes("=") && takesValue.has(a)) i++;
      continue;
    }
    words.push(a);
  }
  return words;
}

export function str(v: Values, name: string): string | undefined {
  const x = v[name];
  return typeof x === "string" ? x : undefined;
}

export function list(v: Values, name: string): string[] {
  const x = v[name];
  return Array.isArray(x) ? (x as string[]) : typeof x === "string" ? [x] : [];
}

export function flag(v: Values, name: string): boolean {
  return v[name] === true;
}

export function required(v: Values, name: string, where: string): string {
  const x = str(v, name);
  if (x === undefined || x.length === 0) throw usageError(`\`${where}\` needs --${name}`);
  return x;
}

/** `user:alice` -> { type: "user", id: "alice" }. */
export function parseActor(text: string, flagName: string): Actor {
  const i = text.indexOf(":");
  const type = i < 0 ? "" : text.slice(0, i);
  const id = i < 0 ? "" : text.slice(i + 1);
  if (!(ACTOR_TYPES as readonly string[]).includes(type) || id.length === 0) {
    throw usageError(`--${flagName} must be <type>:<id> with type one of ${ACTOR_TYPES.join(", ")} (e.g. user:alice), not ${JSON.stringify(text)}`);
  }
  return { type: type as Actor["type"], id };
}

/** A positive integer flag, or a usage error. */
export function intFlag(v: Values, name: string, min = 1): number | undefined {
  const x = str(v, name);
  if (x === undefined) return undefined;
  if (!/^\d+$/.test(x) || Number(x) < min || !Number.isSafeInteger(Number(x))) throw usageError(`--${name} must be an integer >= ${min}, not ${JSON.stringify(x)}`);
  return Number(x);
}

/** A flag whose value must be one of `allowed`. */
export function oneOf<T extends string>(v: Values, name: string, allowed: readonly T[]): T | undefined {
  const x = str(v, name);
  if (x === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(x)) throw usageError(`--${name} must be one of ${allowed.join(", ")}, not ${JSON.stringify(x)}`);
  return x as T;
}
