/**
 * The simulator's kernel (docs/simulation.md): one process, a virtual clock, seeded randomness,
 * and a run queue of pending operations from which the seed picks what happens next.
 *
 * Everything the host waits on is an operation of a simulated node: a store transaction, a
 * policy evaluation, a connector reply, a timer. Nothing uses real time or real I/O (memory and
 * SQLite stores are synchronous under their promises), so once the microtask queue is empty the
 * whole system is waiting on the kernel, and the kernel's choice (from the seed) decides the next
 * event. A node that crashes simply stops: its queued operations are dropped, its timers never
 * fire, and results of operations it started are never delivered to it.
 */
import { createHash } from "node:crypto";
import type { Clock, Random } from "../../src/core/ports.js";
import { prng } from "../helpers/seed.js";

/** A seeded PRNG with the helpers the simulator needs. */
export class Rng {
  readonly #next: () => number;
  constructor(seed: number) {
    this.#next = prng(seed);
  }
  float(): number {
    return this.#next();
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.#next() * (hi - lo + 1));
  }
  chance(p: number): boolean {
    return this.#next() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.#next() * xs.length)]!;
  }
  /** Picks a key of `weights` with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.#next() * total;
    for (const [k, w] of entries) {
      if ((r -= w) < 0) return k;
    }
    return entries[entries.length - 1]![0];
  }
  /** An independent stream (for one node), derived from this one. */
  fork(): Rng {
    return new Rng(Math.floor(this.#next() * 2 ** 32) >>> 0);
  }
  /** The Random port over this stream: the host's ids and lease tokens replay with the seed. */
  random(): Random {
    return {
      bytes: (n) => {
        const b = new Uint8Array(n);
        for (let i = 0; i < n; i++) b[i] = Math.floor(this.#next() * 256);
        return b;
      },
    };
  }
}

interface Timer {
  at: number;
  seq: number;
  node: SimNode;
  fn: () => void;
  cancelled: boolean;
}

interface Op {
  seq: number;
  node: SimNode;
  label: string;
  run: () => void;
}

/** The scheduler: virtual time, timers, the run queue and the trace. */
export class Sim {
  now: number;
  readonly rng: Rng;
  #timers: Timer[] = [];
  #ready: Op[] = [];
  #seq = 0;
  /** Operations started and not finished (non-zero only while a real I/O store answers). */
  inflight = 0;
  readonly #hash = createHash("sha256");
  #events = 0;
  /** Every trace line, when kept (WRIT_SIM_TRACE=1 prints them for a failing seed). */
  readonly lines: string[] | null;

  constructor(seed: number, start = 1_800_000_000_000, keepLines = false) {
    this.rng = new Rng(seed);
    this.now = start;
    this.lines = keepLines ? [] : null;
  }

  /** Appends one event to the trace (hashed; two runs of a seed must produce the same hash). */
  trace(line: string): void {
    const l = `${this.now} ${line}`;
    this.#hash.update(l);
    this.#hash.update("\n");
    this.#events++;
    this.lines?.push(l);
  }

  traceHash(): { hash: string; events: number } {
    return { hash: this.#hash.copy().digest("hex"), events: this.#events };
  }

  setTimer(node: SimNode, ms: number, fn: () => void): () => void {
    const t: Timer = { at: this.now + Math.max(0, ms), seq: this.#seq++, node, fn, cancelled: false };
    this.#timers.push(t);
    return () => {
      t.cancelled = true;
    };
  }

  enqueue(node: SimNode, label: string, run: () => void): void {
    this.#ready.push({ seq: this.#seq++, node, label, run });
  }

  readyCount(): number {
    return this.#ready.length;
  }

  /** Runs one queued operation chosen by the seed. */
  runRandomOp(): void {
    const i = Math.floor(this.rng.float() * this.#ready.length);
    const op = this.#ready[i]!;
    this.#ready.splice(i, 1);
    this.trace(`op ${op.node.name} ${op.label}`);
    op.run();
  }

  /** The earliest live timer, pruning dead ones. */
  #nextTimer(): Timer | undefined {
    let best: Timer | undefined;
    let w = 0;
    for (const t of this.#timers) {
      if (t.cancelled || !t.node.alive) continue;
      this.#timers[w++] = t;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    this.#timers.length = w;
    return best;
  }

  nextTimerAt(): number | null {
    return this.#nextTimer()?.at ?? null;
  }

  /** Moves time to the earliest timer (never backwards) and fires it. False when none is left. */
  fireNextTimer(): boolean {
    const t = this.#nextTimer();
    if (!t) return false;
    t.cancelled = true;
    if (t.at > this.now) this.now = t.at;
    this.trace(`timer ${t.node.name}`);
    t.fn();
    return true;
  }

  /** Drops everything a node had queued (it crashed). */
  dropNode(node: SimNode): void {
    this.#ready = this.#ready.filter((o) => o.node !== node);
  }

  /**
   * Waits until nothing but the kernel can make progress: the microtask queue is empty (one turn
   * of the event loop) and no started operation is still waiting on real I/O (PostgreSQL).
   */
  async quiesce(): Promise<void> {
    do {
      await new Promise<void>((resolve) => setImmediate(resolve));
    } while (this.inflight > 0);
  }
}

/** A simulated process: its clock view, its operations, its life. */
export class SimNode {
  alive = true;
  readonly clock: Clock;
  readonly sim: Sim;
  readonly name: string;
  constructor(sim: Sim, name: string) {
    this.sim = sim;
    this.name = name;
    this.clock = { now: () => sim.now, setTimer: (ms, fn) => sim.setTimer(this, ms, fn) };
  }

  /**
   * An operation of this node: `start` runs when the kernel picks it, and its result reaches the
   * caller only if the node is still alive then. A dead node's operations never settle.
   */
  op<T>(label: string, start: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (!this.alive) return;
      this.sim.enqueue(this, label, () => {
        this.sim.inflight++;
        let p: Promise<T>;
        try {
          p = start();
        } catch (e) {
          p = Promise.reject(e instanceof Error ? e : new Error(String(e)));
        }
        p.then(
          (v) => {
            this.sim.inflight--;
            if (this.alive) resolve(v);
          },
          (e: unknown) => {
            this.sim.inflight--;
            if (this.alive) reject(e instanceof Error ? e : new Error(String(e)));
          },
        );
      });
    });
  }

  crash(): void {
    this.alive = false;
    this.sim.dropNode(this);
    this.sim.trace(`crash ${this.name}`);
  }
}
