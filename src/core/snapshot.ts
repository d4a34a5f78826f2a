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

class SnapshotError {
  readonly message: string;
  constructor(message: string) {
    this.message = message;
  }
}

function fail(path: string, what: string): never {
  throw new SnapshotError(`${path}: ${what}`);
}

function checkString(s: string, path: string): void {
  const at = loneSurrogateAt(s);
  if (at >= 0) fail(path, `contains a lone surrogate (U+${s.charCodeAt(at).toString(16).toUpperCase()}) at index ${at}: not valid I-JSON (RFC 7493)`);
}

function copy(v: unknown, path: string, depth: number, seen: Set<object>): Json {
  switch (typeof v) {
    case "string":
      checkString(v, path);
      return v;
    case "number":
      if (!Number.isFinite(v)) fail(path, `non-finite number ${String(v)}`);
      return v;
    case "boolean":
      return v;
    case "object":
      break;
    default:
      fail(path, `a ${typeof v} is not JSON`);
  }
  if (v === null) return null;
  if (depth >= MAX_DEPTH) fail(path, `nested deeper than ${MAX_DEPTH}`);
  if (seen.has(v)) fail(path, "a cycle");
  seen.add(v);
  try {
    const isArray = Array.isArray(v);
    const proto: unknown = Object.getPrototypeOf(v);
    if (isArray ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) fail(path, "not a plain object or array");
    const keys = Reflect.ownKeys(v);
    if (isArray) {
      const arr = v as unknown[];
      const lenDesc = Object.getOwnPropertyDescriptor(arr, "length");
      const length = lenDesc?.value;
      if (typeof length !== "number" || keys.length !== length + 1) fail(path, "an array with holes or extra properties");
      const out: Json[] = [];
      for (let i = 0; i < length; i++) out.push(copy(valueOf(arr, String(i), `${path}[${i}]`), `${path}[${i}]`, depth + 1, seen));
      return Object.freeze(out) as Json;
    }
    const out: { [k: string]: Json } = {};
    for (const k of keys) {
      if (typeof k === "symbol") fail(path, "a symbol-keyed property");
      const p = `${path}.${k}`;
      checkString(k, `${path} key ${JSON.stringify(k.slice(0, 40))}`);
      if (k === "__proto__") fail(p, "a __proto__ key");
      out[k] = copy(valueOf(v, k, p), p, depth + 1, seen);
    }
    return Object.freeze(out);
  } finally {
    seen.delete(v);
  }
}

/** The value of an own data property, read once through its descriptor (getters are refused). */
function valueOf(o: object, k: string, path: string): unknown {
  const d = Object.getOwnPropertyDescriptor(o, k);
  if (d === undefined) fail(path, "a property that vanished while being read");
  if (!("value" in d)) fail(path, "a property defined by a getter (refused: it could answer differently later)");
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
    return { ok: true, value: copy(value, path, 0, new Set()) };
  } catch (e) {
    if (e instanceof SnapshotError) return { ok: false, message: e.message };
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
