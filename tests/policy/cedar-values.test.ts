/** JSON → Cedar value conversion and action globs, checked against reference models with fast-check. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CedarValueError, toCedarRecord, toCedarValue } from "../../src/policy/cedar-values.js";
import { globMatch, globsCover } from "../../src/policy/index.js";
import { fcRun } from "../helpers/seed.js";

const key = fc.string({ maxLength: 6 }).filter((k) => !k.startsWith("__") && k !== "__proto__");
const cedarJson = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small" }, fc.string({ maxLength: 8 }), fc.boolean(), fc.maxSafeInteger(), fc.array(tie("value"), { maxLength: 4 }), fc.dictionary(key, tie("value"), { maxKeys: 4 })),
})).value;

/** Reference: what Cedar should see — the same data with null properties dropped. */
function dropNullProps(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNullProps);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, dropNullProps(x)]));
  return v;
}

describe("toCedarValue", () => {
  // Property: integers, strings, booleans, arrays and records pass through unchanged.
  it("keeps Cedar-representable JSON as is", () => {
    fc.assert(
      fc.property(cedarJson, (v) => {
        expect(toCedarValue(v, "$")).toEqual(v);
      }),
      fcRun("cedar-values", "representable JSON unchanged", 300),
    );
  });

  // Property: null object properties become absent attributes, recursively.
  it("drops null properties", () => {
    const withNulls = fc.dictionary(key, fc.oneof(fc.constant(null), cedarJson), { maxKeys: 5 });
    fc.assert(
      fc.property(withNulls, (o) => {
        expect(toCedarRecord(o, "p")).toEqual(dropNullProps(o));
      }),
      fcRun("cedar-values", "null properties dropped", 200),
    );
  });

  // Property: a non-integer number anywhere is refused, and the error names its path.
  it("refuses any non-integer number, naming where it is", () => {
    const frac = fc.double({ noNaN: true }).filter((d) => !Number.isInteger(d));
    fc.assert(
      fc.property(fc.array(key, { minLength: 1, maxLength: 4 }), frac, (path, d) => {
        let v: unknown = d;
        for (let i = path.length - 1; i >= 0; i--) v = { [path[i]!]: v };
        const err = (() => {
          try {
            toCedarValue(v, "$");
          } catch (e) {
            return e;
          }
          return null;
        })();
        expect(err).toBeInstanceOf(CedarValueError);
        expect((err as CedarValueError).path).toBe("$." + path.join("."));
      }),
      fcRun("cedar-values", "floats refused with their path", 200),
    );
  });

  it("refuses values that are not plain JSON", () => {
    for (const v of [undefined, () => 1, 10n, new Date(0), new Map(), Symbol("s"), Infinity, NaN]) {
      expect(() => toCedarValue({ x: v }, "$")).toThrow(CedarValueError);
    }
    expect(toCedarValue(-0, "$")).toBe(0);
    expect(Object.is(toCedarValue(-0, "$"), 0)).toBe(true);
  });
});

/** Reference: a glob as a regular expression. */
function globRegex(p: string): RegExp {
  return new RegExp("^" + p.split("*").map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$", "s");
}

describe("globMatch", () => {
  // Property: agrees with the regular-expression model on a small alphabet (dense in matches).
  it("agrees with a regex model", () => {
    const alpha = fc.constantFrom("a", "b", ".", "*");
    const str = fc.constantFrom("a", "b", ".");
    fc.assert(
      fc.property(fc.array(alpha, { maxLength: 7 }).map((x) => x.join("")), fc.array(str, { maxLength: 8 }).map((x) => x.join("")), (p, s) => {
        expect(globMatch(p, s)).toBe(globRegex(p).test(s));
      }),
      fcRun("cedar-values", "glob vs regex", 1000),
    );
  });

  it("examples", () => {
    expect(globMatch("payments.*", "payments.refund")).toBe(true);
    expect(globMatch("payments.*", "payments.refund.partial")).toBe(true);
    expect(globMatch("payments.*", "payments")).toBe(false);
    expect(globMatch("*", "anything")).toBe(true);
    expect(globMatch("repo.delete", "repo.delete")).toBe(true);
    expect(globMatch("repo.delete", "repo.deleted")).toBe(false);
    expect(globsCover(["reports.*", "repo.*"], "repo.delete")).toBe(true);
    expect(globsCover([], "repo.delete")).toBe(false);
  });
});
