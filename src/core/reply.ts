/** Interpreting connector replies (docs/connectors.md, The reply contract): copy the fields once, then decide; never trust shape. */
import { canonicalize } from "./canonical.js";
import { storable } from "./text.js";
import type { Json } from "./types.js";

export type Interpreted =
  | { kind: "success"; externalRef: string; output: Json | undefined }
  | { kind: "permanent_failure"; reason: string; thrown?: boolean }
  | { kind: "transient_failure"; reason: string }
  | { kind: "timeout"; reason: string }
  | { kind: "ambiguous"; reason: string }
  | { kind: "accepted"; externalRef: string };

const MAX_REF = 512;
const MAX_REASON = 2000;

function reasonText(v: unknown, fallback: string): string {
  return typeof v === "string" && v.length > 0 ? v.slice(0, MAX_REASON) : fallback;
}

/**
 * What makes `v` no usable externalRef, for the reason (the text after "without"), or null when it
 * is one. An externalRef names the effect wherever it is kept and matched (steps, completions,
 * every store's key columns): NUL and an unpaired surrogate cannot be kept faithfully everywhere (a
 * PostgreSQL text column refuses both), so a ref holding one names nothing.
 */
function refProblem(v: unknown): string | null {
  if (typeof v !== "string" || v.length === 0) return "an externalRef";
  if (v.length > MAX_REF) return `a usable externalRef (${v.length} characters, at most ${MAX_REF})`;
  return storable(v) ? null : "a usable externalRef (it holds NUL or an unpaired surrogate)";
}

/** Interprets any value a connector resolved with. Anything not clearly understood is ambiguous. */
export function interpretReply(reply: unknown): Interpreted {
  if (reply === null) return { kind: "ambiguous", reason: "uninterpretable reply: null" };
  if (typeof reply !== "object") return { kind: "ambiguous", reason: `uninterpretable reply: ${typeof reply}` };
  if (Array.isArray(reply)) return { kind: "ambiguous", reason: "uninterpretable reply: an array" };
  let outcome: unknown, externalRef: unknown, reason: unknown, output: unknown;
  try {
    // Read each field exactly once: a getter could answer differently on a second read.
    const r = reply as Record<string, unknown>;
    outcome = r.outcome;
    externalRef = r.externalRef;
    reason = r.reason;
    output = r.output;
  } catch {
    return { kind: "ambiguous", reason: "uninterpretable reply: reading a field threw" };
  }
  switch (outcome) {
    case "success": {
      const problem = refProblem(externalRef);
      if (problem !== null) return { kind: "ambiguous", reason: `uninterpretable reply: success without ${problem}` };
      const er = externalRef as string;
      let out: Json | undefined;
      if (output !== undefined) {
        try {
          out = JSON.parse(canonicalize(output)) as Json;
        } catch {
          return { kind: "ambiguous", reason: "uninterpretable reply: success with an output that is not plain JSON" };
        }
      }
      return { kind: "success", externalRef: er, output: out };
    }
    case "permanent_failure":
      return { kind: "permanent_failure", reason: reasonText(reason, "permanent failure (no reason given)") };
    case "transient_failure":
      return { kind: "transient_failure", reason: reasonText(reason, "transient failure (no reason given)") };
    case "timeout":
      return { kind: "timeout", reason: reasonText(reason, "the connector reported a timeout") };
    case "ambiguous":
      return { kind: "ambiguous", reason: reasonText(reason, "the connector reported an ambiguous outcome") };
    case "accepted": {
      const problem = refProblem(externalRef);
      if (problem !== null) return { kind: "ambiguous", reason: `uninterpretable reply: accepted without ${problem}` };
      const er = externalRef as string;
      return { kind: "accepted", externalRef: er };
    }
    default:
      return { kind: "ambiguous", reason: `uninterpretable reply: unrecognised outcome ${typeof outcome === "string" ? JSON.stringify(outcome.slice(0, 50)) : typeof outcome}` };
  }
}
