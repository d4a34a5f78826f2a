/**
 * Claims on sealing scopes' journals across processes (docs/journal.md, "One sealer per scope"): a
 * claim is a session advisory lock on the scope's sealer key, held on one connection of its own
 * (opened on the first claim, closed when the last claim is given up) until it is released or that
 * connection ends. PostgreSQL releases a session's locks when the session ends, so a process that
 * dies or loses its connection loses its claims with it, and another process's next claim takes
 * them over.
 *
 * The sealer key is a pair of 32-bit integers, a key space apart from the 64-bit keys of the
 * store's logical locks and the journal lock that seals take (`writ_seal_if_head`): a claim never
 * makes a seal or a transaction wait, it only tells the other processes' sequencers to leave the
 * scope to its holder. Whether a scope is held is read from `pg_locks` (taking nothing).
 */
import type { JournalSealers } from "../../core/store.js";
import type { Scope } from "../../core/types.js";
import type { ListenConnection } from "./postgres-listener.js";
import { advisoryKey } from "./postgres-locks.js";

/** The advisory key pair of a scope's sealer claim (signed 32-bit integers). */
export function sealerKey(scope: Scope): [number, number] {
  const k = advisoryKey(scope, "journal-sealer");
  return [Number(BigInt.asIntN(32, k >> 32n)), Number(BigInt.asIntN(32, k))];
}

/**
 * A claim statement unanswered for this long fails (and its connection, with any claims, is
 * dropped); opening the claims' connection has the same deadline.
 */
export const CLAIM_DEADLINE_MS = 500;

const CLAIM = "SELECT pg_try_advisory_lock(a, b) AS ok FROM unnest($1::int[], $2::int[]) WITH ORDINALITY AS u(a, b, n) ORDER BY n";
const RELEASE = "SELECT pg_advisory_unlock(a, b) AS ok FROM unnest($1::int[], $2::int[]) AS u(a, b)";
/** A two-integer advisory lock shows in pg_locks as (classid, objid, objsubid 2), the integers as unsigned oids. */
const PROBE =
  "SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 " +
  "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) " +
  "AND l.classid::bigint = u.a AND l.objid::bigint = u.b) AS held FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS u(a, b, n) ORDER BY n";

export interface PgSealers extends JournalSealers {
  /** Ends the claims' connection (every claim with it). */
  close(): Promise<void>;
}

/**
 * Claims held on a connection from `connect` (the listener's kind: a stand-alone connection when the
 * driver has `Client`, else one taken from the pool); `probe` runs a statement on a pooled connection.
 */
export function pgSealers(connect: () => Promise<ListenConnection>, probe: (text: string, values: unknown[]) => Promise<Array<{ held: boolean }>>): PgSealers {
  /** The held claims, by key text, as this side knows them. */
  const held = new Set<string>();
  let current: ListenConnection | null = null;
  let closed = false;
  /** Calls on the connection run one at a time, so a key is never locked twice by two overlapping claims. */
  let queue: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = queue.then(fn, fn);
    queue = p.then(
      () => undefined,
      () => undefined,
    );
    return p;
  };
  const text = (k: [number, number]): string => `${k[0]}:${k[1]}`;

  /** The ending of the last dropped connection: a new one waits for it, so its claims are gone first. */
  let ending: Promise<void> = Promise.resolve();
  /** Drops the connection (PostgreSQL ends its claims with the session). */
  const drop = (lc: ListenConnection): void => {
    if (current !== lc) return;
    current = null;
    held.clear();
    ending = lc.done().catch(() => undefined);
  };
  /** The claims' connection, opened within the claims' deadline (a late one is closed as it comes). */
  const connection = async (): Promise<ListenConnection> => {
    if (closed) throw new Error("the store is closed");
    if (current !== null) return current;
    await ending;
    const opening = connect();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection for the journal's sealer claims within ${CLAIM_DEADLINE_MS} ms`)), CLAIM_DEADLINE_MS);
    });
    let lc: ListenConnection;
    try {
      lc = await Promise.race([opening, late]);
    } catch (e) {
      void opening.then((c) => c.done(), () => undefined);
      throw e;
    } finally {
      clearTimeout(timer);
    }
    if (closed) {
      await lc.done();
      throw new Error("the store is closed");
    }
    current = lc;
    lc.conn.on("error", () => drop(lc));
    lc.conn.on("end", () => drop(lc));
    return lc;
  };
  /** One statement with the claims' deadline; a failure drops the connection (its state is unknown). */
  const run = async <R extends object>(lc: ListenConnection, q: string, values: unknown[]): Promise<R[]> => {
    try {
      return (await lc.conn.query<R>({ text: q, values, query_timeout: CLAIM_DEADLINE_MS })).rows;
    } catch (e) {
      drop(lc);
      throw e;
    }
  };

  return {
    claim(scopes) {
      return serial(async () => {
        const keys = scopes.map(sealerKey);
        const fresh = [...new Map(keys.filter((k) => !held.has(text(k))).map((k) => [text(k), k])).values()];
        if (fresh.length > 0) {
          const lc = await connection();
          const rows = await run<{ ok: boolean }>(lc, CLAIM, [fresh.map((k) => k[0]), fresh.map((k) => k[1])]);
          // The connection may have been lost meanwhile: its claims went with it.
          if (current === lc) fresh.forEach((k, i) => rows[i]?.ok === true && held.add(text(k)));
        }
        return keys.map((k) => held.has(text(k)));
      });
    },
    async held(scopes) {
      const keys = scopes.map(sealerKey);
      const rows = await probe(PROBE, [keys.map((k) => k[0] >>> 0), keys.map((k) => k[1] >>> 0)]);
      return keys.map((k, i) => held.has(text(k)) || rows[i]?.held === true);
    },
    release(scopes) {
      return serial(async () => {
        const keys = [...new Map(scopes.map(sealerKey).filter((k) => held.has(text(k))).map((k) => [text(k), k])).values()];
        const lc = current;
        if (keys.length === 0 || lc === null) return;
        for (const k of keys) held.delete(text(k));
        // The last claim given up: the connection goes too (on an application's pool it is a pooled one).
        if (held.size === 0) {
          drop(lc);
          return ending;
        }
        await run(lc, RELEASE, [keys.map((k) => k[0]), keys.map((k) => k[1])]);
      });
    },
    holds(scope) {
      return held.has(text(sealerKey(scope)));
    },
    count() {
      return held.size;
    },
    async close() {
      closed = true;
      await queue;
      if (current !== null) drop(current);
      await ending;
    },
  };
}
