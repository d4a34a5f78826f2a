/**
 * Live updates over server-sent events. Each stream polls the journal heads of the viewer's
 * spaces (one cheap read per space per tick); when one moved, it counts what is pending and sends
 * a `change` event. Polling the store (not in-process events) also sees work done by other
 * worker processes. A stream ends when the client goes, the session ends, or the server closes.
 */
import type { Context } from "hono";
import type { Clock } from "../core/ports.js";
import type { AppEnv } from "../server/registry.js";
import type { ConsoleData } from "./data.js";
import type { ResolvedConsoleOptions } from "./options.js";
import type { Viewer } from "./viewer.js";

export interface LiveStreams {
  add(sessionId: string, end: () => void): () => void;
  endSession(sessionId: string): void;
  closeAll(): void;
  size(): number;
}

export function createLiveStreams(): LiveStreams {
  const open = new Map<() => void, string>();
  return {
    add(sessionId, end) {
      open.set(end, sessionId);
      return () => open.delete(end);
    },
    endSession(sessionId) {
      for (const [end, sid] of [...open]) if (sid === sessionId) end();
    },
    closeAll() {
      for (const end of [...open.keys()]) end();
    },
    size: () => open.size,
  };
}

const MAX_STREAMS = 1000;

/**
 * What the live stream compares between ticks: each space's sealed journal head and how much waits
 * to be sealed. A page carries the value sampled before it read its data, so the stream's first
 * event refreshes a page that a change overtook while it loaded.
 */
export async function liveSig(data: ConsoleData, v: Viewer): Promise<string> {
  const heads: Record<string, string> = {};
  for (const s of v.spaces) heads[s] = `${(await data.journalHead(v.scope(s)))?.seq ?? 0}+${await data.unsealedCount(v.scope(s), 1000)}`;
  return JSON.stringify(heads);
}
const HEARTBEAT_MS = 15_000;

export function liveStream(c: Context<AppEnv>, v: Viewer, data: ConsoleData, streams: LiveStreams, o: ResolvedConsoleOptions, clock: Clock, recheck: () => Promise<Viewer | null>): Response {
  if (streams.size() >= MAX_STREAMS) return c.text("too many live streams", 503, { "retry-after": "5" });
  const enc = new TextEncoder();
  let stop: (() => void) | null = null;
  const body = new ReadableStream<Uint8Array>({
    start(ctrl) {
      let closed = false;
      let last = "";
      let timer: (() => void) | null = null;
      let sinceBeat = 0;
      const write = (s: string): void => {
        if (!closed) ctrl.enqueue(enc.encode(s));
      };
      const end = (): void => {
        if (closed) return;
        closed = true;
        timer?.();
        unregister();
        try {
          ctrl.close();
        } catch {
          /* already closed by the client */
        }
      };
      stop = end;
      const unregister = streams.add(v.sessionId, end);
      c.req.raw.signal.addEventListener("abort", end);
      const tick = async (): Promise<void> => {
        if (closed) return;
        try {
          if (!(await recheck())) {
            write("event: signed-out\ndata: {}\n\n");
            return end();
          }
          // The sealed head and what waits to be sealed: a change shows at once, not only once sealed.
          const sig = await liveSig(data, v);
          if (sig !== last) {
            last = sig;
            let approvals = 0;
            let reconciliations = 0;
            for (const s of v.spacesWith("approve")) approvals += (await data.approvals(v.scope(s), "pending", 1000)).length;
            for (const s of v.spacesWith("operate")) reconciliations += (await data.reconciliations(v.scope(s), { status: "open", limit: 1000 })).length;
            write(`event: change\ndata: ${JSON.stringify({ sig, approvals, reconciliations, pending: approvals + reconciliations })}\n\n`);
            sinceBeat = 0;
          } else if ((sinceBeat += o.livePollMs) >= HEARTBEAT_MS) {
            write(": keep-alive\n\n");
            sinceBeat = 0;
          }
        } catch {
          // A store hiccup: say nothing this tick, try again on the next.
        }
        if (!closed) timer = clock.setTimer(o.livePollMs, () => void tick());
      };
      write(`retry: 2000\n\n`);
      void tick();
    },
    cancel() {
      stop?.();
    },
  });
  return c.body(body, 200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", "x-accel-buffering": "no" });
}
