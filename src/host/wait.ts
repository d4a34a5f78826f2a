/**
 * Waiting for an invocation to reach a state the caller names, woken by the host's events (a
 * worker in this process moves it: the answer comes at once) and reading again every `pollMs`
 * (a worker in another process raises no event here). Used by the HTTP long poll
 * (`GET …/invocations/{id}?wait=&until=`, docs/http-api.md) and `writ wait` on a local store.
 */
import { INVOCATION_STATUSES, TERMINAL_INVOCATION_STATUSES, type Invocation, type InvocationStatus, type Scope } from "../core/types.js";
import { invocationChanges } from "./changes.js";
import type { Host } from "./host.js";

/** The named groups `until` takes besides single statuses. */
export const WAIT_GROUPS = {
  /** Ended: nothing will change it any more. */
  final: TERMINAL_INVOCATION_STATUSES,
  /** Ended, or waiting for someone outside a worker: a person (an approval, a reconciliation) or an outside operation's callback. */
  settled: [...TERMINAL_INVOCATION_STATUSES, "awaiting_approval", "parked", "reconciliation_required"],
} as const satisfies Record<string, readonly InvocationStatus[]>;

export type WaitGroup = keyof typeof WAIT_GROUPS;

/** What `until` defaults to. */
export const DEFAULT_UNTIL: WaitGroup = "settled";

/**
 * The statuses an `until` text names: `final`, `settled`, or a comma-separated list of statuses
 * and groups (`awaiting_approval,final`). A string is the problem, naming the bad word.
 * @example untilStatuses("awaiting_approval,final") // Set { "awaiting_approval", "succeeded", ... }
 */
export function untilStatuses(text: string): ReadonlySet<InvocationStatus> | string {
  const out = new Set<InvocationStatus>();
  const words = text.split(",").map((w) => w.trim());
  for (const w of words) {
    if (w in WAIT_GROUPS) for (const s of WAIT_GROUPS[w as WaitGroup]) out.add(s);
    else if ((INVOCATION_STATUSES as readonly string[]).includes(w)) out.add(w as InvocationStatus);
    else return `${JSON.stringify(w.slice(0, 40))} is not a status or group; until takes final, settled, or statuses (${INVOCATION_STATUSES.join(", ")}), comma-separated`;
  }
  return out;
}

export interface WaitOptions {
  /** The statuses that end the wait (a final status ends it too: nothing can change after). */
  until: ReadonlySet<InvocationStatus>;
  /** How long to wait at most, in milliseconds (0: read once). */
  ms: number;
  /** Read again this often, for changes another process makes. @defaultValue 1000 */
  pollMs?: number;
  /** Ends the wait early (the caller went away, the server is closing): the last read is answered. */
  signal?: AbortSignal;
}

/** The invocation as the wait left it; `reached` is true when its status is one `until` names. */
export interface WaitResult {
  invocation: Invocation;
  reached: boolean;
}

const TERMINAL = new Set<InvocationStatus>(TERMINAL_INVOCATION_STATUSES);

/** Waits for invocation `invocationId` of `scope`; null when there is none. */
export async function waitForInvocation(host: Host, scope: Scope, invocationId: string, o: WaitOptions): Promise<WaitResult | null> {
  const { clock } = host.context.o;
  const pollMs = o.pollMs ?? 1000;
  const signal = o.signal ?? new AbortController().signal;
  const deadline = clock.now() + o.ms;
  // Watching from before the first read: an event between a read and the wait is not missed.
  const watch = invocationChanges(host).watch(invocationId);
  try {
    let cur = await host.get(scope, invocationId);
    if (!cur) return null;
    for (;;) {
      const reached = o.until.has(cur.status);
      const now = clock.now();
      if (reached || TERMINAL.has(cur.status) || signal.aborted || now >= deadline) return { invocation: cur, reached };
      await watch.next(Math.min(pollMs, deadline - now), signal);
      cur = (await host.get(scope, invocationId)) ?? cur;
    }
  } finally {
    watch.close();
  }
}
