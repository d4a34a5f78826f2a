/**
 * The closed loop the growth and lifecycle benches share: one host with one worker (concurrency
 * 8) on a store, one scope, IN_FLIGHT invocations in flight (each completion submits the next), a
 * one-step no-op action under a real allow policy, the rate reported per WINDOW_S-second window.
 */
import { z } from "zod";
import { createHost, defineAction, defineConnector, functionPolicy, generateSigningKey, type CreateHostOptions, type Host } from "../src/index.js";
import type { Store } from "../src/core/store.js";

export const WINDOW_S = 10;
export const IN_FLIGHT = 16;
export const ACTION = defineAction({ id: "bench.noop", version: "1", params: z.object({ n: z.number().int().nonnegative() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
const CONNECTOR = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
const POLICY = functionPolicy("bench:v1", ({ request, authority }) => (authority !== null && authority.status === "active" && authority.actions.includes(request.action) ? "ALLOW" : "DENY"));
export const SCOPE = { tenantId: "bench", spaceId: "s" };

export interface LoopOptions {
  label: string;
  seconds: number;
  /** Host options beside the bench's own (retention, archive, ...). */
  host?: Partial<CreateHostOptions>;
  /** Called with the host before the worker starts (listeners). */
  onHost?: (host: Host) => void;
  /** Called at the end of each window with the invocations settled so far. */
  onWindow?: (settled: number) => void;
  pollMs?: number;
  /** Idempotency keys are this prefix and a counter. @defaultValue "loop-" */
  keyPrefix?: string;
}

/** Runs the loop on `store` (migrated by the caller); stops the worker, not the store. Throws if an invocation did not succeed. */
export async function closedLoop(store: Store, o: LoopOptions): Promise<{ rates: number[]; invocations: number }> {
  const waiting = new Map<string, () => void>();
  const early = new Set<string>();
  let failed = null as string | null;
  const host: Host = createHost({
    store,
    actions: [ACTION],
    connectors: [CONNECTOR],
    policy: POLICY,
    signingKey: generateSigningKey({ kid: "bench-loop" }),
    ...o.host,
    onEvent: (e) => {
      if (e.type === "invocation.succeeded") {
        const w = waiting.get(e.invocationId);
        if (w) {
          waiting.delete(e.invocationId);
          w();
        } else early.add(e.invocationId);
      } else if (e.type === "invocation.failed" || e.type === "invocation.denied" || e.type === "invocation.reconciliation_required") {
        failed ??= `${e.invocationId} ended ${e.status}`;
      }
    },
  });
  o.onHost?.(host);
  // A database that ran the loop before (growth's preload sample) has the authority already.
  if ((await host.authorities.get(SCOPE, "bench-authority")) === null) {
    await host.authorities.create(SCOPE, { authorityRef: "bench-authority", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "ops" }, actions: [ACTION.id] });
  }
  const keyPrefix = o.keyPrefix ?? "loop-";
  const worker = host.worker({ concurrency: 8, ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}) });
  worker.start();
  let n = 0;
  let done = 0;
  let stop = false;
  const lane = async (): Promise<void> => {
    while (!stop && failed === null) {
      const i = n++;
      const r = await host.submit({ ...SCOPE, action: ACTION.id, actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "bench-authority", params: { n: i }, idempotencyKey: `${keyPrefix}${i}` });
      const id = r.invocation.invocationId;
      if (!early.delete(id)) await new Promise<void>((resolve) => waiting.set(id, resolve));
      done += 1;
    }
  };
  const lanes = Array.from({ length: IN_FLIGHT }, lane);
  const rates: number[] = [];
  let last = 0;
  try {
    for (let s = WINDOW_S; s <= o.seconds; s += WINDOW_S) {
      await new Promise((r) => setTimeout(r, WINDOW_S * 1000));
      rates.push((done - last) / WINDOW_S);
      last = done;
      console.log(`  ${o.label}: ${s} s ${rates.at(-1)!.toFixed(1)}/s (${done} settled)`);
      o.onWindow?.(done);
    }
  } finally {
    stop = true;
    // Wake lanes still waiting so they exit (their invocations settle or not; nothing is measured now).
    for (const w of waiting.values()) w();
    await Promise.all(lanes);
    await worker.stop();
  }
  if (failed !== null) throw new Error(`${o.label}: an invocation did not succeed: ${failed}`);
  return { rates, invocations: done };
}
