/**
 * Console sessions: an API key, presented once at sign-in, is exchanged for a random session id
 * kept in an HttpOnly, SameSite=Strict cookie (Secure behind TLS). The server keeps only the
 * sha256 of the id, with the key id (re-checked on every request, so a revoked key ends its
 * sessions), a CSRF token, and the absolute and idle expiries. Sessions live in this process's
 * memory: a restart signs everyone out (see docs/console.md).
 */
import { base64url } from "../core/encoding.js";
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import type { ResolvedConsoleOptions } from "./options.js";

export interface Session {
  keyId: string;
  csrf: string;
  createdAt: number;
  expiresAt: number;
  lastSeenAt: number;
  /** One-shot message shown on the next page (after a redirect). */
  flash?: { kind: "ok" | "error"; text: string };
}

export interface Sessions {
  /** Creates a session; returns the id (for the cookie) and the session. */
  create(keyId: string): { id: string; session: Session };
  /** The live session for a cookie value, or null (unknown, expired, idle too long). */
  get(id: string | undefined): Session | null;
  end(id: string | undefined): void;
  /** Ends every session of a key (e.g. when it is found revoked). */
  endKey(keyId: string): void;
  size(): number;
}

const ID_RE = /^[A-Za-z0-9_-]{43}$/;

export function createSessions(o: ResolvedConsoleOptions, clock: Clock, random: Random, crypto: CryptoPort): Sessions {
  const byHash = new Map<string, Session>();
  const hashOf = (id: string): string => base64url(crypto.sha256(id));
  const alive = (s: Session, now: number): boolean => now < s.expiresAt && now - s.lastSeenAt < o.idleTtlMs;
  const prune = (now: number): void => {
    for (const [h, s] of byHash) if (!alive(s, now)) byHash.delete(h);
  };
  return {
    create(keyId) {
      const now = clock.now();
      if (byHash.size >= o.maxSessions) prune(now);
      // Still full: the oldest session ends (Map iterates in insertion order).
      while (byHash.size >= o.maxSessions) byHash.delete(byHash.keys().next().value!);
      const id = base64url(random.bytes(32));
      const session: Session = { keyId, csrf: base64url(random.bytes(32)), createdAt: now, expiresAt: now + o.sessionTtlMs, lastSeenAt: now };
      byHash.set(hashOf(id), session);
      return { id, session };
    },
    get(id) {
      if (id === undefined || !ID_RE.test(id)) return null;
      const h = hashOf(id);
      const s = byHash.get(h);
      if (!s) return null;
      const now = clock.now();
      if (!alive(s, now)) {
        byHash.delete(h);
        return null;
      }
      s.lastSeenAt = now;
      return s;
    },
    end(id) {
      if (id !== undefined && ID_RE.test(id)) byHash.delete(hashOf(id));
    },
    endKey(keyId) {
      for (const [h, s] of byHash) if (s.keyId === keyId) byHash.delete(h);
    },
    size: () => byHash.size,
  };
}

/** Constant-time comparison of two tokens. */
export function sameToken(crypto: CryptoPort, a: string, b: string): boolean {
  const x = crypto.sha256(a);
  const y = crypto.sha256(b);
  return crypto.timingSafeEqual(x, y) && a.length === b.length;
}
