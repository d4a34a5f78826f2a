/**
 * Boundary throughput (memory store, no-op connector) next to the machine's raw Ed25519 verify
 * rate of decisions the same rig minted (same key, size and node:crypto call), measured in
 * interleaved rounds in one run. Goal (issue 10): boundary / raw synchronous verify
 * >= 0.9. The raw asynchronous verify rate (threadpool, same concurrency) is printed beside it: the
 * boundary verifies asynchronously, so that is what it competes with.
 */
import nodeCrypto from "node:crypto";
import { z } from "zod";
import { createBoundary, createKeyring, defineAction, defineConnector, generateSigningKey, memoryStore, parseDecision, requestDigest, signDecision, type ActionRequest, type Authority, type CryptoPort, type PublicJwk, type Store } from "../src/index.js";
import { median, rateSync } from "./lib.js";

const scope = { tenantId: "bench", spaceId: "s" };

/** Signed messages to verify: the signing input and signature of each, and the key they verify under. */
export interface VerifyFixture {
  publicKey: nodeCrypto.KeyObject;
  items: Array<{ data: Uint8Array; sig: Uint8Array }>;
}

/** A stand-in of a decision's size (420 bytes) under a fresh key, for benches without a rig. */
function syntheticFixture(): VerifyFixture {
  const { publicKey, privateKey } = nodeCrypto.generateKeyPairSync("ed25519");
  const data = Buffer.from("x".repeat(420));
  return { publicKey, items: [{ data, sig: nodeCrypto.sign(null, data, privateKey) }] };
}

/**
 * The decisions a rig mints, parsed outside any timing: raw verify then checks the very tokens
 * (size, key and signatures) the boundary checks, with the same node:crypto verify and a cached
 * KeyObject, as the boundary's crypto port does.
 */
export function tokenFixture(tokens: readonly string[], publicJwk: PublicJwk): VerifyFixture {
  const publicKey = nodeCrypto.createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: publicJwk.x }, format: "jwk" });
  const items = tokens.map((t) => {
    const p = parseDecision(t);
    if (!p.ok) throw new Error(`bench token does not parse: ${p.message}`);
    return { data: p.value.signingInput, sig: p.value.signature };
  });
  return { publicKey, items };
}

/**
 * Raw synchronous Ed25519 verifies per second, one at a time on the main thread (issue 10's
 * baseline), over `fixture`'s messages in turn (a synthetic 420-byte message when none is given).
 */
export function rawVerifyRate(ms: number, fixture: VerifyFixture = syntheticFixture()): number {
  const { publicKey, items } = fixture;
  let i = 0;
  return rateSync(() => {
    const m = items[i++ % items.length]!;
    if (!nodeCrypto.verify(null, m.data, publicKey, m.sig)) throw new Error("verify failed");
  }, ms);
}

/**
 * Raw asynchronous Ed25519 verifies per second (node:crypto's callback form, libuv's threadpool)
 * with `concurrency` in flight, as the boundary runs them: what the boundary's async verify can
 * reach at most on this machine.
 */
export async function rawAsyncVerifyRate(ms: number, concurrency: number, fixture: VerifyFixture = syntheticFixture()): Promise<number> {
  const { publicKey, items } = fixture;
  let i = 0;
  const once = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const m = items[i++ % items.length]!;
      nodeCrypto.verify(null, m.data, publicKey, m.sig, (err, ok) => (err ? reject(err) : ok ? resolve() : reject(new Error("verify failed"))));
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
  /** `n` decisions minted as `run` mints them (same key, same request shape), for raw verify. */
  verifyFixture(n: number): VerifyFixture;
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
    verifyFixture: (n) => tokenFixture(Array.from({ length: n }, () => mint()[1]), key.publicJwk),
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
  // Raw verify checks decisions the rig minted: the same key, size and verify call as the boundary's.
  const tokens = rig.verifyFixture(1000);
  await rawAsyncVerifyRate(200, concurrency, tokens);
  const out: { verify: number; asyncVerify: number; boundary: number }[] = [];
  for (let i = 0; i < rounds; i++) {
    const verify = rawVerifyRate(700, tokens);
    const asyncVerify = await rawAsyncVerifyRate(700, concurrency, tokens);
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
