/**
 * A deep, frozen snapshot of outside input (docs/security.md, "The boundary binds what it
 * verified"). Every property is read exactly once, through its descriptor: a getter is refused,
 * never called, so a value cannot change between the check and the use; a Proxy whose traps throw,
 * a cycle or a value too deep is refused with a message, never an exception. The copy holds only
 * plain JSON (null, booleans, finite numbers, strings that are valid I-JSON, dense arrays, plain
 * objects); the digest, the connector, the journal and every record then use the copy, so a caller
 * that mutates its own object after handing it over changes nothing.
 */
import type { Check } from "./validate.js";
import type { Json } from "./types.js";
import { loneSurrogateAt } from "./text.js";

const MAX_DEPTH = 128;

/**
 * A refusal on its way out. Paths are built only on failure: `suffix` is the path below the value
 * where it was thrown, and each enclosing level prepends its own segment while it passes through,
 * so the message is the same as if every level had carried its full path (and nothing is built
 * for a value that is accepted).
 */
class SnapshotError {
  suffix: string;
  readonly what: string;
  constructor(suffix: string, what: string) {
    this.suffix = suffix;
    this.what = what;
  }
}

/** The refusal last thrown: recognised by identity, so a hostile thrown value is never inspected on the way out. */
let thrown: SnapshotError | null = null;

/** Fails at the value being copied (`rel` names what below it, "" for the value itself). */
function fail(rel: string, what: string): never {
  thrown = new SnapshotError(rel, what);
  throw thrown;
}

function checkString(s: string, rel: string): void {
  const at = loneSurrogateAt(s);
  if (at >= 0) fail(rel, `contains a lone surrogate (U+${s.charCodeAt(at).toString(16).toUpperCase()}) at index ${at}: not valid I-JSON (RFC 7493)`);
}

/** Prepends the segment of the child that failed, then rethrows (anything else unchanged). */
function under(e: unknown, segment: string): never {
  if (thrown !== null && e === thrown) thrown.suffix = segment + thrown.suffix;
  throw e;
}

function copy(v: unknown, depth: number, seen: Set<object>): Json {
  switch (typeof v) {
    case "string":
      checkString(v, "");
      return v;
    case "number":
      if (!Number.isFinite(v)) fail("", `non-finite number ${String(v)}`);
      return v;
    case "boolean":
      return v;
    case "object":
      break;
    default:
      fail("", `a ${typeof v} is not JSON`);
  }
  if (v === null) return null;
  if (depth >= MAX_DEPTH) fail("", `nested deeper than ${MAX_DEPTH}`);
  if (seen.has(v)) fail("", "a cycle");
  seen.add(v);
  try {
    const isArray = Array.isArray(v);
    const proto: unknown = Object.getPrototypeOf(v);
    if (isArray ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) fail("", "not a plain object or array");
    const keys = Reflect.ownKeys(v);
    if (isArray) {
      const arr = v as unknown[];
      const lenDesc = Object.getOwnPropertyDescriptor(arr, "length");
      const length = lenDesc?.value;
      if (typeof length !== "number" || keys.length !== length + 1) fail("", "an array with holes or extra properties");
      const out: Json[] = [];
      for (let i = 0; i < length; i++) {
        try {
          out.push(copy(valueOf(arr, String(i)), depth + 1, seen));
        } catch (e) {
          under(e, `[${i}]`);
        }
      }
      return Object.freeze(out) as Json;
    }
    const out: { [k: string]: Json } = {};
    for (const k of keys) {
      if (typeof k === "symbol") fail("", "a symbol-keyed property");
      if (loneSurrogateAt(k) >= 0) checkString(k, ` key ${JSON.stringify(k.slice(0, 40))}`);
      try {
        if (k === "__proto__") fail("", "a __proto__ key");
        out[k] = copy(valueOf(v, k), depth + 1, seen);
      } catch (e) {
        under(e, `.${k}`);
      }
    }
    return Object.freeze(out);
  } finally {
    seen.delete(v);
  }
}

/** The value of an own data property, read once through its descriptor (getters are refused). */
function valueOf(o: object, k: string): unknown {
  const d = Object.getOwnPropertyDescriptor(o, k);
  if (d === undefined) fail("", "a property that vanished while being read");
  if (!("value" in d)) fail("", "a property defined by a getter (refused: it could answer differently later)");
  return d.value;
}

/**
 * A deep frozen plain-JSON copy of `value`, or a message naming what is wrong and where. Never
 * throws, whatever the input (getters, Proxies, cycles).
 * @example
 * const s = snapshotJson(request, "request"); if (!s.ok) refuse(s.message);
 */
export function snapshotJson(value: unknown, path = "$"): Check<Json> {
  try {
    return { ok: true, value: copy(value, 0, new Set()) };
  } catch (e) {
    thrown = null;
    if (e instanceof SnapshotError) return { ok: false, message: `${path}${e.suffix}: ${e.what}` };
    // A Proxy trap threw (or a revoked Proxy): the value cannot be read.
    let what = "reading it threw";
    try {
      what = `reading it threw: ${e instanceof Error ? e.message : String(e)}`.slice(0, 200);
    } catch {
      /* the error itself is hostile */
    }
    return { ok: false, message: `${path}: could not be read (${what})` };
  }
}
