/**
 * Row ids that sort by creation time (docs/stores.md, "Ids that follow time").
 *
 * An id is `prefix` + 8 characters of the creation time (milliseconds since the epoch, 48 bits) +
 * 14 characters of 80 random bits: 22 characters after the prefix, all from the base64url
 * character set, as the purely random ids before them. The time part uses those 64 characters in
 * their byte order (`-`, digits, upper case, `_`, lower case), so ids made later sort after ids
 * made earlier under a byte-order collation (PostgreSQL's `COLLATE "C"`, SQLite's BINARY).
 *
 * Why: every table is keyed by these ids, and a B-tree takes an insert where the key sorts. With
 * random keys each insert lands on a random leaf of an index as large as the history, so the
 * pages a busy store writes span the whole index: they fall out of the database's cache, and after
 * every checkpoint PostgreSQL logs a full image of each one it touches again. Keys that follow time
 * land on the rightmost leaves, a handful of pages whatever the history.
 *
 * The 80 random bits keep ids unguessable and distinct (within one millisecond, two ids collide
 * with probability about 2^-80). An id reveals when it was made, to the millisecond; nothing
 * secret is derived from it. A clock that steps back only costs locality, never uniqueness.
 */
import { base64url } from "./encoding.js";

/** The base64url characters in byte order. */
const SORTED = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
/** 48 bits of milliseconds: until the year 10889. */
const MAX_MS = 2 ** 48 - 1;
/** Random bytes per id. */
export const ID_RANDOM_BYTES = 10;

/** The 8-character time part of an id made at `ms` (clamped to 0 .. 2^48 - 1, whole milliseconds). */
export function timePart(ms: number): string {
  let t = Number.isFinite(ms) ? Math.min(MAX_MS, Math.max(0, Math.floor(ms))) : 0;
  let out = "";
  for (let i = 0; i < 8; i++) {
    out = SORTED[t % 64]! + out;
    t = Math.floor(t / 64);
  }
  return out;
}

/**
 * An id made at `ms` from `random` (at least {@link ID_RANDOM_BYTES} bytes; the first 10 are used).
 * @example timeOrderedId("inv_", clock.now(), random.bytes(ID_RANDOM_BYTES))
 */
export function timeOrderedId(prefix: string, ms: number, random: Uint8Array): string {
  if (random.length < ID_RANDOM_BYTES) throw new RangeError(`timeOrderedId needs ${ID_RANDOM_BYTES} random bytes, got ${random.length}`);
  return prefix + timePart(ms) + base64url(random.subarray(0, ID_RANDOM_BYTES));
}

/** The creation time an id of this form carries (ms), or null when `rest` (the id without its prefix) is not of this form. */
export function idTime(rest: string): number | null {
  if (rest.length !== 22) return null;
  let t = 0;
  for (let i = 0; i < 8; i++) {
    const v = SORTED.indexOf(rest[i]!);
    if (v < 0) return null;
    t = t * 64 + v;
  }
  return t;
}
