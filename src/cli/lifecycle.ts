/**
 * Long-running commands (`serve`, `worker`): keep the process alive (the host's timers are
 * unref'd), and stop gracefully on SIGINT / SIGTERM: the first signal drains, a second one (at
 * least a second later) aborts what is still in flight. The pause matters under `npm start`: one
 * Ctrl-C reaches the process twice (from the terminal and forwarded by npm).
 */

export interface StopControl {
  /** Resolves once a stop was requested (first signal). */
  requested: Promise<NodeJS.Signals>;
  /** Called on a second signal while stopping. */
  onForce(fn: () => void): void;
  /** Removes the signal handlers and the keep-alive timer. */
  dispose(): void;
}

const FORCE_AFTER_MS = 1000;

export function waitForStop(signals: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM"]): StopControl {
  const keepAlive = setInterval(() => {}, 1 << 30);
  let force: (() => void) | null = null;
  let stopping = false;
  let firstAt = 0;
  let resolve!: (s: NodeJS.Signals) => void;
  const requested = new Promise<NodeJS.Signals>((r) => (resolve = r));
  const handler = (signal: NodeJS.Signals): void => {
    if (!stopping) {
      stopping = true;
      firstAt = Date.now();
      resolve(signal);
    } else if (Date.now() - firstAt >= FORCE_AFTER_MS) {
      force?.();
    }
  };
  for (const s of signals) process.on(s, handler);
  return {
    requested,
    onForce(fn) {
      force = fn;
    },
    dispose() {
      clearInterval(keepAlive);
      for (const s of signals) process.off(s, handler);
    },
  };
}
