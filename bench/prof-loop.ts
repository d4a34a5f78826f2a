/**
 * The closed host loop the profiling scripts share (bench/prof-host-pg.ts,
 * bench/prof-pg-functions.ts): bench/host.ts's action host on `store`, one started worker
 * (concurrency 8), `inFlight` submitters each waiting for its invocation to succeed before the
 * next. `done()` counts succeeded invocations; `stop()` lets the submitters finish and stops the
 * worker (the store stays open).
 */
import { generateSigningKey, type Store } from "../src/index.js";
import { benchActionHost } from "./host.js";

export async function startHostLoop(store: Store & { listening?: () => Promise<void> }, inFlight = 16): Promise<{ done(): number; stop(): Promise<void> }> {
  let done = 0;
  const waiters = new Map<string, () => void>();
  // An invocation may succeed before its submit's answer is read: remembered here.
  const early = new Set<string>();
  const host = benchActionHost(store, generateSigningKey({ kid: "prof" }), {
    succeeded(id) {
      done++;
      const w = waiters.get(id);
      if (w !== undefined) w();
      else early.add(id);
    },
    ended(id, why) {
      throw new Error(`${id} ended: ${why}`);
    },
  });
  const scope = { tenantId: "bench", spaceId: "s" };
  await host.authorities.create(scope, { authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: ["bench.noop"] });
  // WRIT_AB_HANDOFF=0: every invocation reaches the worker through its wake-up and claim, as a
  // worker in a process of its own takes it (with the hand-off, a lone one is claimed at admission).
  const worker = host.worker({ concurrency: 8, ...(process.env.WRIT_AB_HANDOFF === "0" ? { handoff: false } : {}) });
  worker.start();
  await store.listening?.();
  let n = 0;
  let stopped = false;
  async function loop(): Promise<void> {
    while (!stopped) {
      const i = n++;
      const r = await host.submit({ ...scope, action: "bench.noop", actionVersion: "1", params: { n: i }, actor: { type: "agent", id: "bot" }, authorityRef: "a1", idempotencyKey: `k${i}` });
      const id = r.invocation.invocationId;
      if (early.delete(id)) continue;
      await new Promise<void>((res) => waiters.set(id, res));
      waiters.delete(id);
    }
  }
  const loops = Array.from({ length: inFlight }, () => loop());
  return {
    done: () => done,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      await worker.stop();
    },
  };
}
