/** Database values to JSON (the step output must be plain JSON). */
import type { Json } from "../../core/types.js";
import type { SqlRow } from "./sql-options.js";

/**
 * A database value as JSON: dates as ISO strings, bytes as base64, big integers beyond 2^53 and
 * non-finite numbers as strings, objects (json columns) and arrays converted deeply.
 */
export function toJson(v: unknown): Json {
  if (v === null || v === undefined) return null;
  if (typeof v === "string" || typeof v === "boolean") return v;
  if (typeof v === "number") return Number.isFinite(v) ? v : String(v);
  if (typeof v === "bigint") return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  if (Array.isArray(v)) return v.map(toJson);
  if (typeof v === "object") return toRow(v as Record<string, unknown>);
  return null; // functions and symbols have no JSON form (no driver returns them)
}

/** A row as a JSON object (defineProperty, so a column named `__proto__` stays a column). */
export function toRow(row: Record<string, unknown>): SqlRow {
  const out: SqlRow = {};
  for (const [k, x] of Object.entries(row)) Object.defineProperty(out, k, { value: toJson(x), enumerable: true, writable: true, configurable: true });
  return out;
}
