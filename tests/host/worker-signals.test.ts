/**
 * A worker with more than ten invocations in flight (docs/host.md, Workers, leases, fencing).
 * Invariants: no "possible EventTarget memory leak" warning (each invocation has an abort signal
 * of its own, with the boundary's one listener; a signal shared by the worker carried one listener
 * per invocation in flight); `stop({ drain: false })` still aborts every one of them.
 */
import { expect, it } from "vitest";
import { z } from "zod";
import { createHost, defineAction, defineConnector, functionPolicy, generateSigningKey, memoryStore } from "../../src/index.js";

const scope = { tenantId: "t", spaceId: "s" };

async function sixteen(run: (ctx: { signal: AbortSignal }) => Promise<void>) {
  const action = defineAction({ id: "a.b", version: "1", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "run", connector: "c", operation: "run" }] });
  const connector = defineConnector({
    id: "c",
    operations: {
      run: async (ctx) => {
        await run(ctx);
        return { outcome: "success", externalRef: "x" };
      },
    },
  });
  const host = createHost({ store: memoryStore(), actions: [action], connectors: [connector], policy: functionPolicy("p", () => "ALLOW"), signingKey: generateSigningKey({ kid: "k" }) });
  await host.authorities.create(scope, { authorityRef: "a", principal: { type: "agent", id: "x" }, grantor: { type: "user", id: "u" }, actions: ["a.b"] });
  for (let i = 0; i < 16; i++) await host.submit({ ...scope, action: "a.b", actionVersion: "1", actor: { type: "agent", id: "x" }, authorityRef: "a", params: { n: i }, idempotencyKey: `k${i}` });
  return host;
}

it("sixteen invocations in flight raise no listener-leak warning", async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
  process.on("warning", onWarning);
  try {
    const host = await sixteen(() => new Promise((r) => setTimeout(r, 30)));
    const results = await host.worker({ concurrency: 16 }).runOnce();
    expect(results).toEqual(Array.from({ length: 16 }, () => "succeeded"));
    await new Promise((r) => setTimeout(r, 50)); // warnings are emitted on the next tick
    expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
  } finally {
    process.off("warning", onWarning);
  }
});

it("stop({ drain: false }) aborts every invocation in flight", async () => {
  let started = 0;
  let sawAbort = 0;
  const host = await sixteen(
    (ctx) =>
      new Promise<void>((resolve) => {
        started++;
        ctx.signal.addEventListener("abort", () => {
          sawAbort++;
          resolve();
        });
      }),
  );
  const w = host.worker({ concurrency: 16, pollMs: 10 });
  w.start();
  while (started < 16) await new Promise((r) => setTimeout(r, 5));
  await w.stop({ drain: false });
  expect(sawAbort).toBe(16);
});
