/**
 * The wake-up hint (docs/host.md, Workers, leases, fencing): LISTEN on a dedicated connection while anyone subscribes. It is a
 * hint only: workers keep polling. If the connection drops, it reconnects after a pause and then
 * wakes every subscriber once, since notifications sent meanwhile are lost.
 */
import { WAKE_CHANNEL } from "./postgres-migrations.js";
import type { PgConnection } from "./postgres-driver.js";

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

/** Runs subscribers when PostgreSQL notifies the wake channel. */
export class WakeListener {
  readonly #opts: WakeListenerOptions;
  readonly #subscribers = new Set<() => void>();
  #current: ListenConnection | undefined;
  #starting: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  /** Whether LISTEN was in effect before the connection was lost (then a reconnect wakes everyone). */
  #wasConnected = false;
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
      if (this.#subscribers.size === 0) void this.#disconnect();
    };
  }

  /** Resolves once LISTEN is in effect (the next notification will be seen). */
  listening(): Promise<void> {
    return this.#ready.promise;
  }

  /** Ends the listener for good. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscribers.clear();
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
      });
      conn.on("error", () => this.#lost(lc));
      conn.on("end", () => this.#lost(lc));
      await conn.query({ text: `LISTEN ${WAKE_CHANNEL}` });
    } catch {
      if (lc !== undefined) await lc.done();
      this.#retry();
      return;
    }
    if (this.#stopped || this.#subscribers.size === 0) {
      await lc.done();
      return;
    }
    const reconnected = this.#current === undefined && this.#wasConnected;
    this.#current = lc;
    this.#wasConnected = true;
    this.#ready.resolve();
    // Notifications sent while the connection was down are lost: wake everyone once.
    if (reconnected) this.#wake();
  }

  #lost(lc: ListenConnection | undefined): void {
    if (lc === undefined || this.#current !== lc) return;
    this.#current = undefined;
    this.#ready = deferred();
    void lc.done();
    this.#retry();
  }

  #retry(): void {
    if (this.#stopped || this.#subscribers.size === 0 || this.#timer !== undefined) return;
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
    if (!this.#stopped && this.#subscribers.size > 0) return;
    const lc = this.#current;
    this.#current = undefined;
    this.#wasConnected = false;
    this.#ready = deferred();
    if (lc !== undefined) await lc.done();
  }

  #wake(): void {
    for (const cb of [...this.#subscribers]) {
      try {
        cb();
      } catch {
        // A hint: a failing subscriber must not stop the others, nor the listener.
      }
    }
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
