/**
 * JSON → Cedar values, failing closed. Cedar has no floating point, no null, and reads objects with
 * `__entity` / `__extn` keys as entity references and extension values. So:
 *
 * - integers in the safe range (±(2^53 − 1)) become `Long`; other numbers are refused (send amounts
 *   in minor units, or decimals as strings);
 * - `null` as an object property means "absent" (the attribute is left out, so `has` is false);
 *   `null` inside an array is refused;
 * - arrays become Sets (unordered, duplicates collapse);
 * - keys starting with `__` are refused, so request data can never forge an entity reference;
 * - anything that is not plain JSON is refused.
 *
 * A refusal is a {@link CedarValueError} naming the path; the engine turns it into a DENY.
 */
import type { CedarValueJson } from "./cedar-wasm.js";

const MAX_DEPTH = 64;

/** A value that cannot be given to Cedar; `path` names it (e.g. `context.params.amount`). */
export class CedarValueError extends Error {
  readonly path: string;
  constructor(path: string, problem: string) {
    super(`${path}: ${problem}`);
    this.name = "CedarValueError";
    this.path = path;
  }
}

/** Converts a JSON object to a Cedar record (see the module notes). Throws {@link CedarValueError}. */
export function toCedarRecord(value: unknown, path: string): Record<string, CedarValueJson> {
  if (!isPlainObject(value)) throw new CedarValueError(path, "expected an object");
  return record(value, path, 0);
}

/** Converts one JSON value to a Cedar value (see the module notes). Throws {@link CedarValueError}. */
export function toCedarValue(value: unknown, path: string): CedarValueJson {
  return conv(value, path, 0);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function record(o: Record<string, unknown>, path: string, depth: number): Record<string, CedarValueJson> {
  const out: Record<string, CedarValueJson> = {};
  for (const k of Object.keys(o)) {
    const p = `${path}.${k}`;
    if (k.startsWith("__")) throw new CedarValueError(p, "keys starting with __ are reserved by Cedar's JSON format (__entity, __extn)");
    const item = o[k];
    if (item === null) continue;
    out[k] = conv(item, p, depth + 1);
  }
  return out;
}

function conv(v: unknown, path: string, depth: number): CedarValueJson {
  if (depth > MAX_DEPTH) throw new CedarValueError(path, `nesting deeper than ${MAX_DEPTH}`);
  switch (typeof v) {
    case "string":
    case "boolean":
      return v;
    case "number":
      if (!Number.isInteger(v)) throw new CedarValueError(path, "not an integer: Cedar has no floating point (send integers, e.g. minor units, or decimal strings)");
      if (!Number.isSafeInteger(v)) throw new CedarValueError(path, "integer outside ±(2^53 - 1)");
      return v === 0 ? 0 : v;
    case "object": {
      if (v === null) throw new CedarValueError(path, "null inside an array (Cedar has no null)");
      if (Array.isArray(v)) {
        const out: CedarValueJson[] = new Array<CedarValueJson>(v.length);
        for (let i = 0; i < v.length; i++) out[i] = conv(v[i], `${path}[${i}]`, depth + 1);
        return out;
      }
      if (!isPlainObject(v)) throw new CedarValueError(path, "not plain JSON");
      return record(v, path, depth);
    }
    default:
      throw new CedarValueError(path, `${typeof v} is not JSON`);
  }
}
