/**
 * Deep copies of stored records. The memory store copies every record on the way in and on the
 * way out, so no caller can reach (and mutate) stored state. Records are JSON-shaped; the copy
 * behaves like a JSON round trip (absent optional fields stay absent, `undefined` array slots
 * become `null`) but is several times faster, and refuses what JSON could not hold faithfully.
 */
import { WritError } from "../../core/errors.js";

/** A deep copy of a JSON-shaped value; throws `INVALID_ARGUMENT` for non-JSON values. */
export function copy<T>(value: T): T {
  return copyValue(value) as T;
}

/** A copy of the record, or null when there is none. */
export function copyOrNull<T>(rec: T | undefined): T | null {
  return rec === undefined ? null : copy(rec);
}

function copyValue(v: unknown): unknown {
  if (typeof v !== "object") {
    if (typeof v === "function" || typeof v === "symbol" || typeof v === "bigint") throw notJson(typeof v);
    return v;
  }
  if (v === null) return v;
  if (Array.isArray(v)) {
    const n = v.length;
    const out = new Array<unknown>(n);
    for (let i = 0; i < n; i++) {
      const x: unknown = v[i];
      out[i] = x === undefined ? null : copyValue(x);
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) throw notJson(describe(v));
  const src = v as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const k in src) {
    const x = src[k];
    if (x === undefined) continue;
    if (k === "__proto__") Object.defineProperty(out, k, { value: copyValue(x), enumerable: true, writable: true, configurable: true });
    else out[k] = copyValue(x);
  }
  return out;
}

function describe(v: object): string {
  const name = (v.constructor as { name?: unknown } | undefined)?.name;
  return typeof name === "string" && name !== "" ? `a ${name}` : "a non-plain object";
}

function notJson(what: string): WritError {
  return new WritError("INVALID_ARGUMENT", `stores hold JSON data only, got ${what}`);
}
