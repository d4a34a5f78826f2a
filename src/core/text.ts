/**
 * Text that can lie (docs/security.md): lone surrogates make a string invalid I-JSON (RFC 7493);
 * control characters (C0, C1, DEL), bidirectional overrides and isolates, and zero-width
 * characters let an id look like another or repaint a terminal. Ids, idempotency keys, actor and
 * authority ids and action names refuse them; free text keeps them but is escaped when shown.
 */

/** Index of the first lone surrogate in `s`, or -1. */
export function loneSurrogateAt(s: string): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (n >= 0xdc00 && n <= 0xdfff) {
        i++;
        continue;
      }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** NUL, and a surrogate that is not half of a pair. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Whether every store keeps `s` faithfully: it holds neither NUL nor a lone surrogate (a PostgreSQL
 * text value refuses both, and its JSON operators refuse both escaped; docs/stores.md, "Documents
 * that hold NUL").
 */
export function storable(s: string): boolean {
  UNSTORABLE.lastIndex = 0;
  return !UNSTORABLE.test(s);
}

/**
 * `s` with NUL and every lone surrogate replaced by U+FFFD: for diagnostic text Writ keeps from
 * outside (a webhook receiver's answer, cut at a length that may split a pair).
 */
export function storableText(s: string): string {
  return storable(s) ? s : s.replace(UNSTORABLE, "\ufffd");
}

/** C0, DEL, C1 controls. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
/** Bidirectional embeddings, overrides, isolates and marks (U+061C, U+200E/F, U+202A-E, U+2066-9). */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
/** Zero-width and invisible joiners/separators (U+200B-D, U+2060-4, U+FEFF, U+180E, U+00AD). */
const ZERO_WIDTH = /[\u200b-\u200d\u2060-\u2064\ufeff\u180e\u00ad]/;

export const ID_CHARACTER_CLASSES = ["control", "bidi", "zero-width", "lone-surrogate"] as const;
export type IdCharacterClass = (typeof ID_CHARACTER_CLASSES)[number];

/** Which refused class of character `s` holds, if any (ids, keys, actor ids, action names). */
export function unsafeIdClass(s: string): IdCharacterClass | null {
  if (loneSurrogateAt(s) >= 0) return "lone-surrogate";
  if (CONTROL.test(s)) return "control";
  if (BIDI.test(s)) return "bidi";
  if (ZERO_WIDTH.test(s)) return "zero-width";
  return null;
}

const CLASS_TEXT: Record<IdCharacterClass, string> = {
  control: "a control character (C0, C1 or DEL)",
  bidi: "a bidirectional override or mark",
  "zero-width": "a zero-width or invisible character",
  "lone-surrogate": "a lone surrogate (not valid I-JSON)",
};

/** A problem message for an id field, or null when the text is acceptable. */
export function idTextProblem(s: string, field: string): string | null {
  const c = unsafeIdClass(s);
  return c === null ? null : `${field} contains ${CLASS_TEXT[c]}`;
}

/** Characters JSON.stringify leaves raw that a terminal may act on (DEL, C1, bidi, zero-width). */
const JSON_UNSAFE = /[\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u180e\u00ad]/g;

/** JSON text with those characters written as `\uXXXX` escapes (the same JSON value). */
export function escapeJsonForTerminal(json: string): string {
  return json.replace(JSON_UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * Text from outside made safe to print on a terminal: controls, bidi and zero-width characters and
 * lone surrogates are shown as `\u{XXXX}` escapes; everything else is kept.
 */
export function escapeForTerminal(s: string, o: { keepNewlines?: boolean } = {}): string {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i]!;
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const n = s.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) {
        out += ch + s[i + 1]!;
        i++;
        continue;
      }
    }
    if (c === 0x0a && o.keepNewlines) out += ch;
    else if ((c >= 0xd800 && c <= 0xdfff) || CONTROL.test(ch) || BIDI.test(ch) || ZERO_WIDTH.test(ch)) out += `\\u{${c.toString(16).toUpperCase().padStart(4, "0")}}`;
    else out += ch;
  }
  return out;
}
