/**
 * RFC 8785 (JCS) canonical JSON, the strict parser, and request digests (SPEC 2).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WritError, canonicalize, parseJsonStrict, requestDigest } from "../src/index.js";
import {
  APPENDIX_B_FINITE,
  APPENDIX_B_NON_FINITE,
  MAIN_EXAMPLE_INPUT,
  MAIN_EXAMPLE_OUTPUT,
  MAIN_EXAMPLE_UTF8_HEX,
  SORTING_EXAMPLE_INPUT,
  SORTING_EXAMPLE_ORDER,
  doubleFromHex,
} from "./helpers/rfc8785-vectors.js";
import { fcRun as fcRunFor, prng } from "./helpers/seed.js";
import { canonicalizeData, canonicalizeFields } from "../src/core/canonical.js";

const fcRun = (name: string, numRuns: number): { seed: number; numRuns: number } => fcRunFor("canonical.test", name, numRuns);

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** Asserts `fn` throws a CANONICAL_JSON WritError; with `path`, that the error names that path. */
function expectCanonicalError(fn: () => unknown, path?: string): WritError {
  const e = thrown(fn);
  expect(e).toBeInstanceOf(WritError);
  const err = e as WritError;
  expect(err.code).toBe("CANONICAL_JSON");
  if (path !== undefined) {
    expect(err.details).toEqual({ path });
    expect(err.message).toContain(path);
  }
  return err;
}

function hexOf(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ");
}


/** Rebuilds a JSON value with every object's keys inserted in a shuffled order (prototype kept). */
function reshuffle(v: unknown, next: () => number): unknown {
  if (Array.isArray(v)) return v.map((x) => reshuffle(x, next));
  if (typeof v !== "object" || v === null) return v;
  const keys = Object.keys(v);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const out = Object.create(Object.getPrototypeOf(v) as object | null) as Record<string, unknown>;
  for (const k of keys) out[k] = reshuffle((v as Record<string, unknown>)[k], next);
  return out;
}

function hasProtoKey(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return false;
  if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, "__proto__")) return true;
  return Object.values(v).some(hasProtoKey);
}

/** -0 becomes 0 (JSON has no negative zero; RFC 8785 serialises -0 as 0). */
function withoutNegativeZero(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(withoutNegativeZero);
  if (typeof v !== "object" || v === null) return v;
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withoutNegativeZero(x)]));
}

// fc.jsonValue can emit a "__proto__" key, which canonicalize rightly refuses: keep it out of the
// properties over valid data (the refusal has its own tests). "binary" strings bring astral and
// lone-surrogate code units, which exercise UTF-16 key ordering and escaping.
const jsonData = fc.jsonValue({ stringUnit: "binary", maxDepth: 5 }).filter((v) => !hasProtoKey(v));
const wideObject = fc
  .dictionary(fc.string({ unit: "binary", maxLength: 6 }), jsonData, { maxKeys: 24 })
  .filter((v) => !hasProtoKey(v));

describe("RFC 8785 published examples", () => {
  // Invariant: every finite number of Appendix B serialises exactly as the RFC prints it, alone and nested.
  it.each(APPENDIX_B_FINITE)("Appendix B: %s serialises as %s", (hex, expected) => {
    const n = doubleFromHex(hex);
    expect(canonicalize(n)).toBe(expected);
    expect(canonicalize([n])).toBe(`[${expected}]`);
    expect(canonicalize({ n })).toBe(`{"n":${expected}}`);
    // and the text reads back as the same double (-0 reads back as 0)
    expect(Object.is(parseJsonStrict(expected), Object.is(n, -0) ? 0 : n)).toBe(true);
  });

  // Invariant: NaN and the infinities of Appendix B are refused with CANONICAL_JSON, naming where they sit.
  it.each(APPENDIX_B_NON_FINITE)("Appendix B: %s (%s) is rejected", (hex) => {
    const n = doubleFromHex(hex);
    expect(Number.isFinite(n)).toBe(false);
    expectCanonicalError(() => canonicalize(n), "$");
    expectCanonicalError(() => canonicalize({ a: [1, n] }), "$.a[1]");
  });

  // Invariant: the main example of 3.2.2 canonicalises to the exact text and UTF-8 bytes of 3.2.4.
  it("section 3.2.2 / 3.2.4: the main example matches the published canonical output", () => {
    const out = canonicalize(parseJsonStrict(MAIN_EXAMPLE_INPUT));
    expect(out).toBe(MAIN_EXAMPLE_OUTPUT);
    expect(hexOf(new TextEncoder().encode(out))).toBe(MAIN_EXAMPLE_UTF8_HEX.trim().split(/\s+/).join(" "));
    // JSON.parse reads the same data, so the platform parser agrees with the strict one here
    expect(canonicalize(JSON.parse(MAIN_EXAMPLE_INPUT))).toBe(MAIN_EXAMPLE_OUTPUT);
  });

  // Invariant: properties are sorted by UTF-16 code units (3.2.3), so U+1F600 (D83D DE00) sorts before U+FB33.
  it("section 3.2.3: non-ASCII keys sort by UTF-16 code units", () => {
    const out = canonicalize(parseJsonStrict(SORTING_EXAMPLE_INPUT));
    const values = [...out.matchAll(/:"([^"]*)"/g)].map((m) => m[1]);
    expect(values).toEqual([...SORTING_EXAMPLE_ORDER]);
    expect(out).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  // Invariant: string escaping follows 3.2.2.2: \b \t \n \f \r, lowercase \u00hh for other controls, nothing else escaped but " and \.
  it("section 3.2.2.2: control characters and specials are escaped exactly", () => {
    const short: Record<number, string> = { 8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r" };
    for (let c = 0; c < 0x20; c++) {
      const expected = short[c] ?? `\\u00${c.toString(16).padStart(2, "0")}`;
      expect(canonicalize(String.fromCharCode(c))).toBe(`"${expected}"`);
    }
    expect(canonicalize('"\\/\u007f\u2028é😀')).toBe('"\\"\\\\/\u007f\u2028é😀"');
  });
});

describe("canonicalize rejects what is not plain JSON data", () => {
  class Point {
    x = 1;
  }
  class MyArray extends Array<number> {}
  const holes: unknown[] = new Array<unknown>(3);
  holes[0] = 1;
  holes[2] = 3;
  const cyclic: Record<string, unknown> = { a: 1 };
  cyclic.self = cyclic;
  let deep: unknown = 1;
  for (let i = 0; i < 1000; i++) deep = [deep];

  const cases: Array<[name: string, make: () => unknown, path: string]> = [
    ["NaN", () => ({ n: [Number.NaN] }), "$.n[0]"],
    ["Infinity", () => ({ x: { y: Number.POSITIVE_INFINITY } }), "$.x.y"],
    ["-Infinity", () => Number.NEGATIVE_INFINITY, "$"],
    ["undefined at the top", () => undefined, "$"],
    ["undefined property", () => ({ a: 1, b: undefined }), "$.b"],
    ["undefined array item", () => ({ list: [1, undefined] }), "$.list[1]"],
    ["bigint", () => ({ amount: 10n }), "$.amount"],
    ["function", () => ({ f: () => 1 }), "$.f"],
    ["symbol value", () => ({ s: Symbol("s") }), "$.s"],
    ["symbol key", () => ({ a: { [Symbol("k")]: 1 } }), "$.a"],
    ["Date", () => ({ when: new Date(0) }), "$.when"],
    ["Map", () => ({ m: new Map([["a", 1]]) }), "$.m"],
    ["Set", () => [new Set([1])], "$[0]"],
    ["class instance", () => ({ p: new Point() }), "$.p"],
    ["boxed number", () => ({ n: new Number(1) }), "$.n"],
    ["Uint8Array", () => ({ b: new Uint8Array(2) }), "$.b"],
    ["RegExp", () => ({ r: /x/ }), "$.r"],
    ["Error", () => ({ e: new Error("x") }), "$.e"],
    ["Array subclass", () => ({ a: MyArray.from([1]) }), "$.a"],
    ["sparse array", () => ({ a: holes }), "$.a[1]"],
    ["getter in a literal", () => ({ o: { get g() { return 1; } } }), "$.o.g"],
    ["accessor by defineProperty", () => Object.defineProperty({}, "a", { get: () => 1, enumerable: true }), "$.a"],
    ["non-enumerable property", () => ({ o: Object.defineProperty({ a: 1 }, "hidden", { value: 2 }) }), "$.o.hidden"],
    ["array with a named property", () => ({ a: Object.assign([1, 2], { extra: 3 }) }), "$.a"],
    ["__proto__ key from JSON.parse", () => JSON.parse('{"a":{"__proto__":1}}'), "$.a"],
    ["__proto__ key by defineProperty (enumerable)", () => Object.defineProperty({}, "__proto__", { value: 1, enumerable: true }), "$"],
    ["__proto__ key by defineProperty (non-enumerable)", () => Object.defineProperty({}, "__proto__", { value: 1 }), "$"],
  ];

  // Invariant: each non-JSON value is refused with CANONICAL_JSON, and the error names the offending path.
  it.each(cases)("%s", (_name, make, path) => {
    const value = make();
    expectCanonicalError(() => canonicalize(value), path);
    // the digest goes through the same gate
    expectCanonicalError(() => requestDigest(value), path);
  });

  // Invariant: an accessor is refused without being called (canonicalisation has no side effects).
  it("does not invoke getters", () => {
    let calls = 0;
    const o = Object.defineProperty({}, "a", { get: () => ++calls, enumerable: true });
    expectCanonicalError(() => canonicalize(o), "$.a");
    expect(calls).toBe(0);
  });

  // Invariant: cycles and absurd nesting end in a CANONICAL_JSON error, not a stack overflow.
  it("rejects cycles and excessive depth with CANONICAL_JSON", () => {
    expectCanonicalError(() => canonicalize(cyclic));
    expectCanonicalError(() => canonicalize(deep));
  });

  // Invariant: null-prototype objects are plain data and canonicalise like ordinary ones.
  it("accepts null-prototype objects", () => {
    const o = Object.assign(Object.create(null) as Record<string, unknown>, { b: 2, a: [true, null] });
    expect(canonicalize(o)).toBe('{"a":[true,null],"b":2}');
    expect(canonicalize(o)).toBe(canonicalize({ a: [true, null], b: 2 }));
  });
});

describe("parseJsonStrict", () => {
  // Invariant: a duplicate key is refused (JSON.parse would silently keep the last), also when spelled with escapes.
  it("rejects duplicate keys, naming the object", () => {
    expectCanonicalError(() => parseJsonStrict('{"a":1,"a":2}'));
    expectCanonicalError(() => parseJsonStrict('{"a":1,"\\u0061":1}'));
    const nested = expectCanonicalError(() => parseJsonStrict('{"x":{"y":[{"k":1,"k":2}]}}'));
    expect(nested.message).toContain("$.x.y[0]");
    // the same text without the duplicate is fine
    expect(parseJsonStrict('{"x":{"y":[{"k":1,"j":2}]}}')).toEqual({ x: { y: [{ k: 1, j: 2 }] } });
  });

  // Invariant: a "__proto__" key is refused however it is spelled, at any depth.
  it("rejects __proto__ keys", () => {
    expectCanonicalError(() => parseJsonStrict('{"__proto__":1}'));
    expectCanonicalError(() => parseJsonStrict('{"\\u005f_proto__":{}}'));
    const nested = expectCanonicalError(() => parseJsonStrict('{"a":[{"__proto__":{"polluted":true}}]}'));
    expect(nested.message).toContain("$.a[0]");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  // Invariant: text that is not strict RFC 8259 JSON is refused with CANONICAL_JSON.
  it.each([
    ["empty", ""],
    ["trailing comma in object", '{"a":1,}'],
    ["trailing comma in array", "[1,]"],
    ["NaN literal", "[NaN]"],
    ["Infinity literal", "[Infinity]"],
    ["leading zero", "[01]"],
    ["bare minus", "[-]"],
    ["number out of range", "[1e400]"],
    ["single quotes", "{'a':1}"],
    ["unquoted key", "{a:1}"],
    ["comment", '{"a":1 /* c */}'],
    ["trailing garbage", '{"a":1} x'],
    ["two values", "1 2"],
    ["unterminated string", '"abc'],
    ["raw control character in a string", '"a\u0001b"'],
    ["bad escape", '"\\x41"'],
    ["truncated unicode escape", '"\\u12"'],
    ["capitalised literal", "True"],
    ["undefined literal", "undefined"],
  ])("rejects %s", (_name, text) => {
    expectCanonicalError(() => parseJsonStrict(text));
  });

  // Invariant: nesting is bounded, so hostile input cannot exhaust the stack.
  it("rejects nesting beyond its depth limit", () => {
    expectCanonicalError(() => parseJsonStrict("[".repeat(10_000) + "]".repeat(10_000)));
    expect(parseJsonStrict("[".repeat(10) + "]".repeat(10))).toEqual([[[[[[[[[[]]]]]]]]]]);
    expectCanonicalError(() => parseJsonStrict("[[[[1]]]]", 2));
  });

  // Invariant: on valid, duplicate-free JSON (any whitespace) the strict parser reads what JSON.parse reads.
  it("agrees with JSON.parse on valid JSON", () => {
    fc.assert(
      fc.property(jsonData, fc.constantFrom(undefined, 2, "\t"), (x, indent) => {
        const text = JSON.stringify(x, null, indent);
        expect(parseJsonStrict(text)).toEqual(JSON.parse(text));
      }),
      fcRun("parseJsonStrict agrees with JSON.parse", 300),
    );
  });
});

describe("canonical form properties", () => {
  // Invariant: the canonical form and the request digest do not depend on key insertion order, at any depth.
  it("is invariant under key reordering (canonical form and requestDigest)", () => {
    fc.assert(
      fc.property(fc.oneof(jsonData, wideObject), fc.integer(), (x, shuffleSeed) => {
        const y = reshuffle(x, prng(shuffleSeed));
        expect(canonicalize(y)).toBe(canonicalize(x));
        expect(requestDigest(y)).toBe(requestDigest(x));
        expect(requestDigest(x)).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
      }),
      fcRun("key reordering invariance", 400),
    );
  });

  /** The keys of `{"k":null,...}` in the order the text holds them. */
  const topLevelKeys = (text: string): string[] => {
    const keys: string[] = [];
    let i = 1;
    while (text[i] === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      keys.push(JSON.parse(text.slice(i, j + 1)) as string);
      expect(text.slice(j + 1, j + 6)).toBe(":null");
      i = j + 6;
      if (text[i] === ",") i++;
    }
    expect(text.slice(i)).toBe("}");
    return keys;
  };

  // Invariant: keys come out sorted by UTF-16 code units, whatever the input order.
  it("emits keys in UTF-16 code-unit order", () => {
    fc.assert(
      fc.property(wideObject, (x) => {
        const keys = Object.keys(JSON.parse(`[${canonicalize(x)}]`)[0] as object);
        // JSON.parse re-orders integer-like keys, so compare the sets, then the order in the text
        expect([...keys].sort()).toEqual(Object.keys(x).sort());
        // The order of the top-level keys in the text, read off the same keys with null values
        // (a nested object may hold the same key text, so positions in canonicalize(x) mislead).
        expect(topLevelKeys(canonicalize(Object.fromEntries(Object.keys(x).map((k) => [k, null]))))).toEqual(Object.keys(x).sort());
      }),
      fcRun("UTF-16 key order", 300),
    );
  });

  // Invariant: canonicalisation is a fixed point through the strict parser.
  it("canonicalize(parseJsonStrict(canonicalize(x))) === canonicalize(x)", () => {
    fc.assert(
      fc.property(fc.oneof(jsonData, wideObject), (x) => {
        const c = canonicalize(x);
        expect(canonicalize(parseJsonStrict(c))).toBe(c);
      }),
      fcRun("fixed point through parseJsonStrict", 400),
    );
  });

  // Invariant: the canonical form is JSON that reads back as the same data (with -0 read as 0).
  it("JSON.parse(canonicalize(x)) deep-equals x for plain data", () => {
    fc.assert(
      fc.property(fc.oneof(jsonData, wideObject), (x) => {
        expect(JSON.parse(canonicalize(x))).toEqual(withoutNegativeZero(x));
      }),
      fcRun("JSON round trip", 400),
    );
  });

  // Invariant: -0 and 0 canonicalise alike, so they digest alike.
  it("serialises -0 as 0", () => {
    expect(canonicalize(-0)).toBe("0");
    expect(requestDigest({ a: -0 })).toBe(requestDigest({ a: 0 }));
  });

  // Invariant: different data gives different digests (spot checks of near-collisions).
  it("distinguishes values that differ only slightly", () => {
    const base = { a: "1", b: [1, 2] };
    const variants = [{ a: 1, b: [1, 2] }, { a: "1", b: [2, 1] }, { a: "1", b: [1, 2], c: null }, { a: "1 ", b: [1, 2] }, { A: "1", b: [1, 2] }];
    for (const v of variants) expect(requestDigest(v)).not.toBe(requestDigest(base));
  });
});

describe("canonical form of known fields (the hot paths' shortcut)", () => {
  // Invariant: canonicalizeFields(sorted keys, values) writes exactly the text canonicalizeData
  // (and canonicalize) writes for the object made of those keys and values, and refuses an
  // undefined value as they do; entry hashes and request digests rely on it.
  it("equals canonicalizeData of the same object", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 6 }).filter((k) => k !== "__proto__"), jsonData, { maxKeys: 8 }), (o) => {
        const keys = Object.keys(o).sort();
        const text = canonicalizeFields(keys, keys.map((k) => o[k]));
        expect(text).toBe(canonicalizeData(o));
        expect(text).toBe(canonicalize(o));
      }),
      fcRun("canonicalizeFields equals canonicalizeData", 300),
    );
    expectCanonicalError(() => canonicalizeFields(["a", "b"], [1, undefined]), "$.b");
  });
});
