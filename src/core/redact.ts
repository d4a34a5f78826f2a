/** Redaction of sensitive values (docs/host.md, Redaction and telemetry): JSON pointers replaced by "[REDACTED]" in copies. */
import type { Json } from "./types.js";

export const REDACTED = "[REDACTED]";

function unescape(token: string): string {
  return token.replace(/~1/g, "/").replace(/~0/g, "~");
}

/** Returns a deep copy of `root` with every pointer's value replaced; missing paths are ignored. */
export function redact(root: Json, pointers: readonly string[]): Json {
  return mapAtPointers(root, pointers, () => REDACTED);
}

/**
 * A deep copy of `root` where the value at each pointer is replaced by `fn(value, pointer)`;
 * missing paths are ignored. (Redaction and sealing at rest both use it.)
 */
export function mapAtPointers(root: Json, pointers: readonly string[], fn: (value: Json, pointer: string) => Json): Json {
  if (pointers.length === 0) return root;
  const copy = structuredCloneJson(root);
  for (const ptr of pointers) {
    const tokens = ptr.split("/").slice(1).map(unescape);
    if (tokens.length === 0) return fn(copy, ptr);
    let cur: Json = copy;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (cur === null || typeof cur !== "object") break;
      const container = cur;
      const has = Array.isArray(container) ? /^\d+$/.test(t) && Number(t) < container.length : Object.prototype.hasOwnProperty.call(container, t);
      if (!has) break;
      if (i === tokens.length - 1) {
        const obj = container as { [k: string]: Json };
        obj[t] = fn(obj[t]!, ptr);
      } else {
        cur = (container as { [k: string]: Json })[t]!;
      }
    }
  }
  return copy;
}

function structuredCloneJson(v: Json): Json {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(structuredCloneJson);
  const out: { [k: string]: Json } = {};
  for (const k of Object.keys(v)) out[k] = structuredCloneJson(v[k]!);
  return out;
}

/** Where an error text comes from, given to `redactErrorText` beside the text. */
export interface ErrorTextContext {
  /** `connector`: a connector's failure reason; `completion`: an outside operation's error; `reconciliation`: why an invocation needs reconciling. */
  source: "connector" | "completion" | "reconciliation";
  action: string;
  invocationId?: string;
  stepName?: string;
  connector?: string;
  operation?: string;
}

/** What a `redact` hook is told about the value it receives. */
export interface RedactContext {
  /** The action id. */
  action: string;
  /** `params`: the request params; `outputs`: step outputs by step name. */
  kind: "params" | "outputs";
}

/** A function redaction hook (beside `sensitive` pointers): returns what may be shown and journaled. */
export type RedactHook = (value: Json, context: RedactContext) => Json;

/**
 * The action's redaction: its `sensitive` pointers, then its `redact` hook on the result (a copy).
 * A hook that throws or returns a non-JSON value withholds the whole value (fail closed).
 */
export function redactFor(action: { id: string; sensitive?: readonly string[]; redact?: RedactHook } | undefined, root: { [k: string]: Json }, kind: "params" | "outputs"): Json {
  const pointed = redact(root, action?.sensitive ?? []) as { [k: string]: Json };
  if (action?.redact === undefined) return pointed;
  let out: Json;
  try {
    out = action.redact(structuredCloneJson(pointed[kind] ?? null), { action: action.id, kind });
    JSON.stringify(out);
    if (out === undefined) out = REDACTED;
  } catch {
    out = REDACTED;
  }
  return { ...pointed, [kind]: out };
}
