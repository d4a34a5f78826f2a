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

/** Strict base64url decoding (no padding, no foreign characters, canonical trailing bits). */
export function fromBase64url(s: string): Uint8Array | null {
  if (s.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let o = 0;
  let buf = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const v = c < 128 ? LOOKUP[c]! : -1;
    if (v < 0) return null;
    buf = (buf << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (buf >> bits) & 0xff;
    }
  }
  // Non-zero leftover bits mean a non-canonical encoding (two strings would decode alike).
  if (bits > 0 && (buf & ((1 << bits) - 1)) !== 0) return null;
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
