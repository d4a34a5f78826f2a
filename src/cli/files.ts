/** Reading input files (bad ones are usage errors naming the file and the problem). */
import { readFileSync } from "node:fs";
import { parseJsonStrict } from "../core/canonical.js";
import { errorMessage } from "../core/errors.js";
import { usageError } from "./exit-codes.js";

/** Reads a file (or stdin for "-") as text; a missing or unreadable file is a usage error. */
export function readInput(path: string, flagName: string): string {
  try {
    return readFileSync(path === "-" ? 0 : path, "utf8");
  } catch (e) {
    const code = (e as { code?: string }).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a directory" : code === "EACCES" ? "permission denied" : errorMessage(e);
    throw usageError(`cannot read --${flagName} ${path}: ${why}`);
  }
}

/** Parses JSON strictly (duplicate keys, `__proto__` and the like refused), naming where it came from. */
export function parseJsonInput(text: string, what: string): unknown {
  try {
    return parseJsonStrict(text);
  } catch (e) {
    throw usageError(`${what} is not valid JSON: ${errorMessage(e)}`);
  }
}

/** A JSON object from a flag value or file, or a usage error. */
export function jsonObject(text: string, what: string): Record<string, unknown> {
  const v = parseJsonInput(text, what);
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw usageError(`${what} must be a JSON object`);
  return v as Record<string, unknown>;
}
