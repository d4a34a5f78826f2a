/**
 * Boundary throughput (memory store, no-op connector) next to the machine's raw Ed25519 verify
 * rate, measured in interleaved rounds in one run. Goal (issue 10): boundary / raw synchronous verify
 * >= 0.9. The raw asynchronous verify rate (threadpool, same concurrency) is printed beside it: the
 * boundary verifies asynchronously, so that is what it competes with.
 */
import nodeCrypto from "node:crypto";
import { z } from "zod";
import { createBoundary, createKeyring, defineAction, defineConnector, generateSigningKey, memoryStore, requestDigest, signDecision, type ActionRequest, type Authority, type CryptoPort, type Store } from "../src/index.js";
import { median, rateSync } from "./lib.js";

const scope = { tenantId: "bench", spaceId: "s" };

function verifyFixture(): { data: Buffer; publicKey: nodeCrypto.KeyObject; sig: Buffer } {
  const { publicKey, privateKey } = nodeCrypto.generateKeyPairSync("ed25519");
  const data = Buffer.from("x".repeat(420));
  return { data, publicKey, sig: nodeCrypto.sign(null, data, privateKey) };
}

/** Raw synchronous Ed25519 verifies per second, one at a time on the main thread (issue 10's baseline). */
export function rawVerifyRate(ms: number): number {
  const { data, publicKey, sig } = verifyFixture();
  return rateSync(() => {
    if (!nodeCrypto.verify(null, data, publicKey, sig)) throw new Error("verify failed");
  }, ms);
}

/**
 * Raw asynchronous Ed25519 verifies per second (node:crypto's callback form, libuv's threadpool)
 * with `concurrency` in flight, as the boundary runs them: what the boundary's async verify can
 * reach at most on this machine.
 */
export async function rawAsyncVerifyRate(ms: number, concurrency: number): Promise<number> {
  const { data, publicKey, sig } = verifyFixture();
  const once = (): Promise<void> =>
    new Promise((resolve, reject) => {
      nodeCrypto.verify(null, data, publicKey, sig, (err, ok) => (err ? reject(err) : ok ? resolve() : reject(new Error("verify failed"))));
    });
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (t - t0 < ms) {
        await once();
        n++;
        t = performance.now();
      }
    }),
  );
  return (n * 1000) / (t - t0);
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
 * `ports.crypto` replaces the default crypto port (scripts/cpu-boundary.ts runs one without the
 * asynchronous verify beside the default).
 */
export async function boundaryRig(store: Store, scopes = 1, ports: { crypto?: CryptoPort } = {}): Promise<BoundaryRig> {
  await store.migrate();
  const key = generateSigningKey({ kid: "bench" });
  const keyring = createKeyring([{ kid: key.kid, publicJwk: key.publicJwk }]);
  const authority: Authority = { ...scope, authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "u" }, actions: ["*"], constraints: {}, status: "active", createdAt: 0, updatedAt: 0 };
  const noop = defineConnector({ id: "noop", operations: { run: () => ({ outcome: "success", externalRef: "ok" }) } });
  const action = defineAction({ id: "bench.noop", version: "1", params: z.object({ n: z.number() }), idempotent: true, steps: [{ name: "run", connector: "noop", operation: "run" }] });
  const boundary = createBoundary({ store, keyring, actions: [action], connectors: [noop], authority: (s) => ({ ...authority, ...s }), acceptedPolicyRefs: ["p1"], ...ports });
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

export interface BoundaryMemoryResult {
  verifyPerSec: number;
  asyncVerifyPerSec: number;
  boundaryPerSec: number;
  /** boundary / raw synchronous verify (issue 10's definition; the goal). */
  ratio: number;
  /** boundary / raw asynchronous verify with the same concurrency (what an async verify can reach). */
  ratioAsync: number;
  concurrency: number;
  rounds: { verify: number; asyncVerify: number; boundary: number }[];
}

export async function benchBoundaryMemory(rounds: number): Promise<BoundaryMemoryResult> {
  const concurrency = 8;
  const rig = await boundaryRig(memoryStore());
  await rig.run(2000, concurrency); // warm-up (JIT)
  await rawAsyncVerifyRate(200, concurrency);
  const out: { verify: number; asyncVerify: number; boundary: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const verify = rawVerifyRate(700);
    const asyncVerify = await rawAsyncVerifyRate(700, concurrency);
    const boundary = await rig.run(5000, concurrency);
    out.push({ verify, asyncVerify, boundary });
  }
  await rig.close();
  return {
    verifyPerSec: median(out.map((r) => r.verify)),
    asyncVerifyPerSec: median(out.map((r) => r.asyncVerify)),
    boundaryPerSec: median(out.map((r) => r.boundary)),
    ratio: median(out.map((r) => r.boundary / r.verify)),
    ratioAsync: median(out.map((r) => r.boundary / r.asyncVerify)),
    concurrency,
    rounds: out,
  };
}
