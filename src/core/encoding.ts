/** Web-standard byte helpers (no Buffer: core runs unchanged outside Node). */

const ENC = new TextEncoder();
const DEC = new TextDecoder("utf-8", { fatal: true });
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const LOOKUP = new Int16Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) LOOKUP[ALPHABET.charCodeAt(i)] = i;

export function utf8(s: string): Uint8Array {
  return ENC.encode(s);
}

/** Decodes UTF-8, throwing on invalid sequences. */
export function fromUtf8(b: Uint8Array): string {
  return DEC.decode(b);
}

export function base64url(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]!;
  }
  return out;
}

const sextet = (s: string, i: number): number => {
  const c = s.charCodeAt(i);
  return c < 128 ? LOOKUP[c]! : -1;
};

/** Strict base64url decoding (no padding, no foreign characters, canonical trailing bits). */
export function fromBase64url(s: string): Uint8Array | null {
  const rem = s.length % 4;
  if (rem === 1) return null;
  const full = s.length - rem;
  const out = new Uint8Array((full / 4) * 3 + (rem === 0 ? 0 : rem - 1));
  let o = 0;
  // Four characters (24 bits) at a time; any foreign character makes the OR negative.
  for (let i = 0; i < full; i += 4) {
    const a = sextet(s, i);
    const b = sextet(s, i + 1);
    const c = sextet(s, i + 2);
    const d = sextet(s, i + 3);
    if ((a | b | c | d) < 0) return null;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o++] = n >> 16;
    out[o++] = (n >> 8) & 0xff;
    out[o++] = n & 0xff;
  }
  // Non-zero leftover bits mean a non-canonical encoding (two strings would decode alike).
  if (rem === 2) {
    const a = sextet(s, full);
    const b = sextet(s, full + 1);
    if ((a | b) < 0 || (b & 0x0f) !== 0) return null;
    out[o] = (a << 2) | (b >> 4);
  } else if (rem === 3) {
    const a = sextet(s, full);
    const b = sextet(s, full + 1);
    const c = sextet(s, full + 2);
    if ((a | b | c) < 0 || (c & 0x03) !== 0) return null;
    const n = (a << 10) | (b << 4) | (c >> 2);
    out[o] = n >> 8;
    out[o + 1] = n & 0xff;
  }
  return out;
}

export function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Standard base64 (with padding). */
export function base64(bytes: Uint8Array): string {
  const u = base64url(bytes).replace(/-/g, "+").replace(/_/g, "/");
  return u + "=".repeat((4 - (u.length % 4)) % 4);
}

/** Strict standard base64 decoding (padding optional); null when malformed. */
export function fromBase64(s: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s)) return null;
  return fromBase64url(s.replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_"));
}
