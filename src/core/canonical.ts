/**
 * RFC 8785 JSON Canonicalization Scheme (JCS).
 *
 * Input must be plain JSON data: null, booleans, finite numbers, strings, arrays, and plain objects
 * (prototype Object.prototype or null). Anything else is rejected with a `CANONICAL_JSON` error that
 * names the offending path. `__proto__` keys are rejected (they change meaning across parsers).
 */
import { WritError } from "./errors.js";

/** Serialises a plain JSON value in RFC 8785 canonical form. */
export function canonicalize(value: unknown): string {
  return ser(value, "$", 0);
}

const MAX_DEPTH = 256;

function fail(path: string, what: string): never {
  throw new WritError("CANONICAL_JSON", `cannot canonicalise ${path}: ${what}`, { details: { path } });
}

function ser(v: unknown, path: string, depth: number): string {
  if (depth > MAX_DEPTH) fail(path, `nesting deeper than ${MAX_DEPTH}`);
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      if (!Number.isFinite(v)) fail(path, `non-finite number ${String(v)}`);
      // ECMAScript Number serialisation is the one RFC 8785 mandates; -0 serialises as 0.
      return JSON.stringify(v);
    case "boolean":
      return v ? "true" : "false";
    case "object": {
      if (v === null) return "null";
      if (Array.isArray(v)) {
        if (Object.getPrototypeOf(v) !== Array.prototype) fail(path, "array with a foreign prototype");
        let out = "[";
        for (let i = 0; i < v.length; i++) {
          if (!(i in v)) fail(`${path}[${i}]`, "sparse array hole");
          if (i > 0) out += ",";
          out += ser(v[i], `${path}[${i}]`, depth + 1);
        }
        // Own properties besides the indices and `length` would escape the canonical form (and the digest).
        if (Object.getOwnPropertyNames(v).length !== v.length + 1) fail(path, "array with non-index properties");
        return out + "]";
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) {
        const name = (v as { constructor?: { name?: string } }).constructor?.name ?? "unknown";
        fail(path, `non-plain value (${name})`);
      }
      if (Object.getOwnPropertySymbols(v).length > 0) fail(path, "symbol-keyed property");
      // Every own property, not only enumerable ones: a hidden property must not escape the digest.
      const keys = Object.getOwnPropertyNames(v);
      // RFC 8785 3.2.3: sort by UTF-16 code units, which is JS's default string comparison.
      sortKeys(keys);
      let out = "{";
      let first = true;
      for (const k of keys) {
        if (k === "__proto__") fail(path, "__proto__ key");
        const desc = Object.getOwnPropertyDescriptor(v, k);
        if (desc === undefined || !("value" in desc)) fail(`${path}.${k}`, "accessor property");
        if (!desc.enumerable) fail(`${path}.${k}`, "non-enumerable property");
        const item: unknown = desc.value;
        if (item === undefined) fail(`${path}.${k}`, "undefined value");
        if (!first) out += ",";
        first = false;
        out += JSON.stringify(k) + ":" + ser(item, `${path}.${k}`, depth + 1);
      }
      return out + "}";
    }
    case "undefined":
      return fail(path, "undefined value");
    case "bigint":
      return fail(path, "bigint value");
    default:
      return fail(path, `${typeof v} value`);
  }
}

/**
 * Parses JSON text strictly: duplicate keys and `__proto__` keys are rejected (JSON.parse keeps the
 * last duplicate silently). Returns plain data suitable for {@link canonicalize}.
 */
export function parseJsonStrict(text: string, maxDepth = 64): unknown {
  const p = new StrictParser(text, maxDepth);
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.err("unexpected trailing characters");
  return v;
}

const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

class StrictParser {
  i = 0;
  readonly s: string;
  readonly maxDepth: number;
  /** The keys and indices from the root to the value being parsed: its path is built only for a message. */
  readonly segs: Array<string | number> = [];
  constructor(s: string, maxDepth: number) {
    this.s = s;
    this.maxDepth = maxDepth;
  }
  err(msg: string): never {
    throw new WritError("CANONICAL_JSON", `invalid JSON at offset ${this.i}: ${msg}`, { details: { offset: this.i } });
  }
  ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) this.i++;
      else break;
    }
  }
  /** The path of the value being parsed (`$`, `$.a`, `$.a[0]`). */
  path(): string {
    let p = "$";
    for (const s of this.segs) p += typeof s === "number" ? `[${s}]` : `.${s}`;
    return p;
  }
  value(depth: number): unknown {
    if (depth > this.maxDepth) this.err(`nesting deeper than ${this.maxDepth}`);
    this.ws();
    const c = this.s[this.i];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === '"') return this.string();
    if (c === "t") return this.lit("true", true);
    if (c === "f") return this.lit("false", false);
    if (c === "n") return this.lit("null", null);
    return this.number();
  }
  lit<T>(word: string, v: T): T {
    if (this.s.startsWith(word, this.i)) {
      this.i += word.length;
      return v;
    }
    return this.err("unexpected token");
  }
  number(): number {
    NUMBER_RE.lastIndex = this.i;
    const m = NUMBER_RE.exec(this.s);
    if (!m || m[0].length > 400) this.err("unexpected token");
    this.i += m[0].length;
    const n = Number(m[0]);
    if (!Number.isFinite(n)) this.err("number out of range");
    return n;
  }
  string(): string {
    const start = this.i;
    this.i++;
    const s = this.s;
    let escaped = false;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 0x22) {
        this.i++;
        if (!escaped) return s.slice(start + 1, this.i - 1);
        try {
          return JSON.parse(s.slice(start, this.i)) as string;
        } catch {
          this.i = start;
          return this.err("invalid string");
        }
      }
      if (c === 0x5c) {
        escaped = true;
        this.i += 2;
      }
      else if (c < 0x20) this.err("control character in string");
      else this.i++;
    }
    return this.err("unterminated string");
  }
  array(depth: number): unknown[] {
    this.i++;
    const out: unknown[] = [];
    this.ws();
    if (this.s[this.i] === "]") {
      this.i++;
      return out;
    }
    for (;;) {
      this.segs.push(out.length);
      out.push(this.value(depth + 1));
      this.segs.pop();
      this.ws();
      const c = this.s[this.i++];
      if (c === "]") return out;
      if (c !== ",") {
        this.i--;
        this.err("expected , or ]");
      }
    }
  }
  object(depth: number): Record<string, unknown> {
    this.i++;
    const out: Record<string, unknown> = {};
    this.ws();
    if (this.s[this.i] === "}") {
      this.i++;
      return out;
    }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.err("expected a string key");
      const k = this.string();
      if (k === "__proto__") this.err(`__proto__ key at ${this.path()}`);
      // Every key read so far is an own property of `out` (`__proto__` never is one).
      if (Object.prototype.hasOwnProperty.call(out, k)) this.err(`duplicate key ${JSON.stringify(k)} at ${this.path()}`);
      this.ws();
      if (this.s[this.i++] !== ":") {
        this.i--;
        this.err("expected :");
      }
      this.segs.push(k);
      out[k] = this.value(depth + 1);
      this.segs.pop();
      this.ws();
      const c = this.s[this.i++];
      if (c === "}") return out;
      if (c !== ",") {
        this.i--;
        this.err("expected , or }");
      }
    }
  }
}

/**
 * Canonical form of data Writ built itself (journal entries, id parts): same output as
 * {@link canonicalize}, but trusts that objects are plain with own data properties (no accessor or
 * prototype checks), which makes it several times cheaper on the hot path. Never use it on input
 * from outside; non-finite numbers and undefined are still rejected.
 */
export function canonicalizeData(value: unknown): string {
  return fast(value, 0);
}

function fast(v: unknown, depth: number): string {
  if (depth > MAX_DEPTH) fail("$", `nesting deeper than ${MAX_DEPTH}`);
  if (typeof v === "string") return JSON.stringify(v);
  if (typeof v === "number") {
    if (!Number.isFinite(v)) fail("$", `non-finite number ${String(v)}`);
    return JSON.stringify(v);
  }
  if (typeof v === "boolean") return v ? "true" : "false";
  if (v === null) return "null";
  if (typeof v !== "object") return fail("$", `${typeof v} value`);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i > 0 ? "," : "") + fast(v[i], depth + 1);
    return out + "]";
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  sortKeys(keys);
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const item = o[k];
    if (item === undefined) fail(`$.${k}`, "undefined value");
    out += (i > 0 ? "," : "") + quoteKey(k) + fast(item, depth + 1);
  }
  return out + "}";
}

/**
 * `canonicalizeData` of a plain object whose keys are `keys` (already in canonical order, each
 * present) and whose values are `values`, in that order: the same text, without building the
 * object or sorting its keys (journal entries hash this way, `journal.ts`). An `undefined` value
 * is refused as `canonicalizeData` refuses it.
 */
export function canonicalizeFields(keys: readonly string[], values: readonly unknown[]): string {
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i]!;
    const item = values[i];
    if (item === undefined) fail(`$.${k}`, "undefined value");
    out += (i > 0 ? "," : "") + quoteKey(k) + fast(item, 1);
  }
  return out + "}";
}

/**
 * Sorts property names in place by UTF-16 code units (what `Array.prototype.sort` does with no
 * comparator, and what `<` compares on strings). The few keys of a record are insertion-sorted:
 * no scratch array is allocated, as the built-in sort does for every call; many keys take the
 * built-in sort. The keys of one object are distinct, so the order is the same either way.
 */
function sortKeys(keys: string[]): void {
  const n = keys.length;
  if (n > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < n; i++) {
    const k = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > k) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = k;
  }
}

// Keys repeat endlessly (tenantId, seq, ...): quote each once.
const QUOTED = new Map<string, string>();
function quoteKey(k: string): string {
  let q = QUOTED.get(k);
  if (q === undefined) {
    q = JSON.stringify(k) + ":";
    if (QUOTED.size < 4096) QUOTED.set(k, q);
  }
  return q;
}
