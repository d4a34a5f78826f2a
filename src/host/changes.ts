/**
 * Waiting for an invocation to change, woken by the host's own events (`onEvent`, one per
 * transition this process makes) instead of a tight poll: a tool call that waits answers as soon
 * as a worker in this process moves its invocation (docs/mcp.md, Plain calls; the HTTP long poll,
 * docs/http-api.md). A change made by
 * another process (`writ mcp --no-worker` beside `writ serve`) raises no event here; the caller's
 * poll interval catches it.
 */
import type { Host } from "./host.js";
import type { HostEvent } from "./events.js";

/** A watch on one invocation: events that came since the last `next` are not lost. */
export interface InvocationWatch {
  /**
   * Resolves at once when an event of the invocation came since the last call (or since the watch
   * began: the caller reads the invocation first), else on its next event, after `ms`, or when
   * `signal` aborts, whichever is first.
   */
  next(ms: number, signal: AbortSignal): Promise<void>;
  close(): void;
}

export interface InvocationChanges {
  watch(invocationId: string): InvocationWatch;
}

interface Watcher {
  changed: boolean;
  wake: (() => void) | null;
}

const byHost = new WeakMap<Host, InvocationChanges>();

/**
 * The invocation changes of a host, made once per host. The hook is chained onto the host's
 * `onEvent` (a hook already there keeps running, first), as the server's metrics do.
 */
export function invocationChanges(host: Host): InvocationChanges {
  const known = byHost.get(host);
  if (known) return known;
  const watchers = new Map<string, Set<Watcher>>();
  const o = host.context.o;
  const previous = o.onEvent;
  const notify = (e: HostEvent): void => {
    for (const w of watchers.get(e.invocationId) ?? []) {
      w.changed = true;
      w.wake?.();
    }
  };
  o.onEvent = previous
    ? (e) => {
        try {
          previous(e);
        } finally {
          notify(e);
        }
      }
    : notify;
  const changes: InvocationChanges = {
    watch(invocationId) {
      const w: Watcher = { changed: true, wake: null };
      const set = watchers.get(invocationId) ?? new Set<Watcher>();
      watchers.set(invocationId, set);
      set.add(w);
      return {
        next(ms, signal) {
          return new Promise((resolve) => {
            if (w.changed || signal.aborted) {
              w.changed = false;
              return resolve();
            }
            const timer = setTimeout(done, ms);
            function done(): void {
              clearTimeout(timer);
              signal.removeEventListener("abort", done);
              w.wake = null;
              w.changed = false;
              resolve();
            }
            w.wake = done;
            signal.addEventListener("abort", done, { once: true });
          });
        },
        close() {
          w.wake?.();
          set.delete(w);
          if (set.size === 0 && watchers.get(invocationId) === set) watchers.delete(invocationId);
        },
      };
    },
  };
  byHost.set(host, changes);
  return changes;
}
