/**
 * LISTEN on a dedicated connection while anyone subscribes, for two channels:
 * - the wake-up hint (docs/host.md, Workers, leases, fencing). A hint only: workers keep polling.
 * - API key changes (docs/security.md, "API key verification cache"): every write of a key record
 *   notifies its key id at commit, and each process forgets that key's cached verifications. The
 *   cache's time bound stays the fallback.
 * Each time LISTEN takes effect (the first connect, and a reconnect after the connection dropped),
 * it wakes every wake subscriber once and tells every key subscriber to forget all keys, since
 * notifications sent before it took effect are lost.
 */
import { WAKE_CHANNEL } from "./postgres-migrations.js";
import type { PgConnection } from "./postgres-driver.js";

/** The channel an API key write notifies at commit; the payload is the key id. */
export const API_KEY_CHANNEL = "writ_api_key";

/** A connection for listening and how to give it back. */
export interface ListenConnection {
  conn: PgConnection;
  /** Closes (or discards) the connection. Must not throw. */
  done(): Promise<void>;
}

/** Options of {@link WakeListener}. */
export interface WakeListenerOptions {
  connect(): Promise<ListenConnection>;
  reconnectMs: number;
}

/** Runs subscribers when PostgreSQL notifies the wake channel or an API key change. */
export class WakeListener {
  readonly #opts: WakeListenerOptions;
  readonly #subscribers = new Set<() => void>();
  /** Told a key id when that key's record changed; `null` when changes may have been missed. */
  readonly #keySubscribers = new Set<(keyId: string | null) => void>();
  #current: ListenConnection | undefined;
  #starting: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #ready: { promise: Promise<void>; resolve: () => void };

  constructor(opts: WakeListenerOptions) {
    this.#opts = opts;
    this.#ready = deferred();
  }

  /** Adds a subscriber (starting the listener if needed); returns its unsubscribe function. */
  subscribe(cb: () => void): () => void {
    if (this.#stopped) return () => undefined;
    const entry = (): void => cb();
    this.#subscribers.add(entry);
    this.#ensureStarted();
    return () => {
      this.#subscribers.delete(entry);
      if (this.#idle()) void this.#disconnect();
    };
  }

  /** Adds an API key change subscriber (starting the listener if needed); returns its unsubscribe function. */
  subscribeKeys(cb: (keyId: string | null) => void): () => void {
    if (this.#stopped) return () => undefined;
    const entry = (keyId: string | null): void => cb(keyId);
    this.#keySubscribers.add(entry);
    this.#ensureStarted();
    return () => {
      this.#keySubscribers.delete(entry);
      if (this.#idle()) void this.#disconnect();
    };
  }

  #idle(): boolean {
    return this.#subscribers.size === 0 && this.#keySubscribers.size === 0;
  }

  /** Resolves once LISTEN is in effect (the next notification will be seen). */
  listening(): Promise<void> {
    return this.#ready.promise;
  }

  /** Ends the listener for good. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscribers.clear();
    this.#keySubscribers.clear();
    await this.#disconnect();
  }

  #ensureStarted(): void {
    if (this.#current !== undefined || this.#starting !== undefined || this.#timer !== undefined) return;
    this.#starting = this.#start().finally(() => (this.#starting = undefined));
  }

  async #start(): Promise<void> {
    let lc: ListenConnection | undefined;
    try {
      lc = await this.#opts.connect();
      const { conn } = lc;
      conn.on("notification", (n) => {
        if (n.channel === WAKE_CHANNEL) this.#wake();
        else if (n.channel === API_KEY_CHANNEL && typeof n.payload === "string" && n.payload.length > 0) this.#keyChanged(n.payload);
      });
      conn.on("error", () => this.#lost(lc));
      conn.on("end", () => this.#lost(lc));
      await conn.query({ text: `LISTEN ${WAKE_CHANNEL}` });
      await conn.query({ text: `LISTEN ${API_KEY_CHANNEL}` });
    } catch {
      if (lc !== undefined) await lc.done();
      this.#retry();
      return;
    }
    if (this.#stopped || this.#idle()) {
      await lc.done();
      return;
    }
    this.#current = lc;
    this.#ready.resolve();
    // Notifications sent before LISTEN took effect are lost: after a reconnect, those sent while
    // the connection was down; after the first connect, those sent since a subscriber subscribed
    // (a worker that claimed before LISTEN took effect, and found nothing, would wait for its poll
    // for an admission committed in between). Wake everyone once, and have every key cache forget
    // everything (a revocation may be among the lost).
    this.#wake();
    this.#keyChanged(null);
  }

  #lost(lc: ListenConnection | undefined): void {
    if (lc === undefined || this.#current !== lc) return;
    this.#current = undefined;
    this.#ready = deferred();
    void lc.done();
    this.#retry();
  }

  #retry(): void {
    if (this.#stopped || this.#idle() || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#ensureStarted();
    }, this.#opts.reconnectMs);
    this.#timer.unref?.();
  }

  async #disconnect(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#starting;
    // Someone subscribed again while the listener was starting: keep it.
    if (!this.#stopped && !this.#idle()) return;
    const lc = this.#current;
    this.#current = undefined;
    this.#ready = deferred();
    if (lc !== undefined) await lc.done();
  }

  #wake(): void {
    tellEach(this.#subscribers);
  }

  #keyChanged(keyId: string | null): void {
    tellEach(this.#keySubscribers, keyId);
  }
}

/** Calls every subscriber; a failing one must not stop the others, nor the listener. */
function tellEach<A extends unknown[]>(subscribers: Iterable<(...args: A) => void>, ...args: A): void {
  for (const cb of [...subscribers]) {
    try {
      cb(...args);
    } catch {
      // ignored: see above
    }
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
