/**
 * Boundary throughput (memory store, no-op connector) next to the machine's raw Ed25519 verify
 * rate, measured in interleaved rounds in one run. Goal (issue 2): ratio >= 0.9.
 */
import nodeCrypto from "node:crypto";
import { z } from "zod";
import { createBoundary, createKeyring, defineAction, defineConnector, generateSigningKey, memoryStore, requestDigest, signDecision, type ActionRequest, type Authority, type Store } from "../src/index.js";
import { median, rateSync } from "./lib.js";

const scope = { tenantId: "bench", spaceId: "s" };

export function rawVerifyRate(ms: number): number {
  const { publicKey, privateKey } = nodeCrypto.generateKeyPairSync("ed25519");
  const data = Buffer.from("x".repeat(420));
  const sig = nodeCrypto.sign(null, data, privateKey);
  return rateSync(() => {
    if (!nodeCrypto.verify(null, data, publicKey, sig)) throw new Error("verify failed");
  }, ms);
}

export interface BoundaryRig {
  store: Store;
  /**
   * Executes `n` fresh requests with `concurrency` in flight; returns executions per second.
   * `beforeTiming` runs after minting, right before the timed region (scripts/prof-boundary.ts
   * starts its profiler there).
   */
  run(n: number, concurrency: number, beforeTiming?: () => Promise<void>): Promise<number>;
  close(): Promise<void>;
}

/**
 * A boundary on `store` with a no-op connector. Requests go round-robin over `scopes` scopes (one
 * hash chain each): one scope shows the per-scope serial section, several show a multi-tenant load.
 */
export async function boundaryRig(store: Store, scopes = 1): Promise<BoundaryRig> {
  await store.migrate();
  const key = generateSigningKey({ kid: "bench" });
  const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
  const authority: Authority = { ...scope, authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "u" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };
  const noop = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
  const action = defineAction({ id: "bench.noop", version: "1", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
  const boundary = createBoundary({ store, keyring, actions: [action], connectors: [noop], authority: (s) => ({ ...authority, ...s }), acceptedPolicyRefs: ["p1"] });
  let counter = 0;
  const mint = (): [ActionRequest, string] => {
    const scope = { tenantId: scopes === 1 ? "bench" : `bench-${counter % scopes}`, spaceId: "s" };
    const req: ActionRequest = { ...scope, action: "bench.noop", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "a1", params: { n: counter }, idempotencyKey: `k${counter++}` };
    return [req, signDecision(key, { result: "ALLOW", requestDigest: requestDigest(req), ...scope, authorityRef: "a1", policyRef: "p1" })];
  };
  return {
    store,
    async run(n, concurrency, beforeTiming) {
      const work = Array.from({ length: n }, mint); // minting (signing) is outside the timed region
      if (beforeTiming) await beforeTiming();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < work.length) {
            const [req, token] = work[next++]!;
            const a = await boundary.execute(req, token);
            if (a.state !== "SUCCEEDED") throw new Error(`bench execution ${a.state} ${a.reasonCode ?? ""} ${a.reason ?? ""}`);
          }
        }),
      );
      return (n * 1000) / (performance.now() - t0);
    },
    close: () => store.close(),
  };
}

export async function benchBoundaryMemory(rounds: number): Promise<{ verifyPerSec: number; boundaryPerSec: number; ratio: number; rounds: { verify: number; boundary: number }[] }> {
  const rig = await boundaryRig(memoryStore());
  await rig.run(2000, 8); // warm-up (JIT)
  const out: { verify: number; boundary: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const verify = rawVerifyRate(700);
    const boundary = await rig.run(5000, 8);
    out.push({ verify, boundary });
  }
  await rig.close();
  const verifyPerSec = median(out.map((r) => r.verify));
  const boundaryPerSec = median(out.map((r) => r.boundary));
  return { verifyPerSec, boundaryPerSec, ratio: median(out.map((r) => r.boundary / r.verify)), rounds: out };
}
