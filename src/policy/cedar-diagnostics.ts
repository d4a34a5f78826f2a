/** Cedar's errors as Writ reasons and construction problems. */
import { WritError } from "../core/errors.js";
import type { DetailedError } from "./cedar-wasm.js";

/** Reasons carry Cedar's texts cut at this length (a decision is signed and stored). */
export const MAX_REASON = 300;

/** One Cedar error as text: message and help, cut at {@link MAX_REASON}. */
export function fmtError(e: DetailedError): string {
  const text = e.help ? `${e.message} (${e.help})` : e.message;
  return text.length > MAX_REASON ? text.slice(0, MAX_REASON - 1) + "…" : text;
}

/** A parse error with its line and column in `text`, when Cedar gives a location. */
export function fmtParseError(e: DetailedError, text: string): string {
  const at = e.sourceLocations?.[0]?.start;
  if (at === undefined || at < 0 || at > text.length) return fmtError(e);
  const before = text.slice(0, at).split("\n");
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}: ${fmtError(e)}`;
}

/** Throws INVALID_OPTION listing every problem; `details.problems` holds them. */
export function invalid(what: string, problems: string[]): never {
  throw new WritError("INVALID_OPTION", `cedar policy: ${what}:\n  - ${problems.join("\n  - ")}`, { details: { problems } });
}
