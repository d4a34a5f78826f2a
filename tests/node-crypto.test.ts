/**
 * Where the Node crypto port checks a signature (docs/boundary.md, "Signature checks off the main
 * thread"). Invariants: (a) every placement gives the same answer for valid, tampered, short and
 * foreign-key signatures and for malformed keys, and never rejects; (b) "inline" answers within
 * the same turn (its promise is already resolved), "threadpool" only after a round through the
 * event loop; (c) "auto" checks inline on an idle thread and on the threadpool after the thread was
 * kept busy for a whole window, and on the threadpool always where the runtime has no event-loop
 * gauge (`performance.eventLoopUtilization` missing); (d) a bad option is refused with a clear error.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { nodeCryptoPort, type VerifyPlacement } from "../src/index.js";

const PLACEMENTS: VerifyPlacement[] = ["auto", "threadpool", "inline"];

function fixture() {
  const port = nodeCryptoPort();
  const a = port.generateEd25519();
  const b = port.generateEd25519();
  const data = new TextEncoder().encode("x".repeat(420));
  const sig = port.signEd25519(a.privateJwk, data);
  const tampered = Uint8Array.from(sig);
  tampered[10] = (tampered[10] ?? 0) ^ 1;
  return { a, b, data, sig, tampered };
}

/** Whether the promise has settled after a few microtask turns (no macrotask ran in between). */
async function settledWithinTurn(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 3; i++) await Promise.resolve();
  return done;
}

function busyFor(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // keeps the JavaScript thread busy
  }
}

describe("nodeCryptoPort verify placement", () => {
  const f = fixture();

  it.each(PLACEMENTS)("%s gives the synchronous check's answer for every kind of input", async (verify) => {
    const port = nodeCryptoPort({ verify });
    const cases: Array<[Parameters<typeof port.verifyEd25519>, boolean]> = [
      [[f.a.publicJwk, f.data, f.sig], true],
      [[f.a.publicJwk, f.data, f.tampered], false],
      [[f.b.publicJwk, f.data, f.sig], false],
      [[f.a.publicJwk, f.data, f.sig.subarray(0, 63)], false],
      [[{ kty: "OKP", crv: "Ed25519", x: "not-a-key" }, f.data, f.sig], false],
      [[f.a.publicJwk, new TextEncoder().encode("other"), f.sig], false],
    ];
    for (const [args, want] of cases) {
      expect(port.verifyEd25519(...args)).toBe(want);
      await expect(port.verifyEd25519Async!(...args)).resolves.toBe(want);
    }
  });

  it("inline answers within the turn, the threadpool after a round through the event loop", async () => {
    const inline = nodeCryptoPort({ verify: "inline" });
    const pool = nodeCryptoPort({ verify: "threadpool" });
    expect(await settledWithinTurn(inline.verifyEd25519Async!(f.a.publicJwk, f.data, f.sig))).toBe(true);
    const p = pool.verifyEd25519Async!(f.a.publicJwk, f.data, f.sig);
    expect(await settledWithinTurn(p)).toBe(false);
    await expect(p).resolves.toBe(true);
  });

  it("auto checks inline on an idle thread and on the threadpool while the thread is busy", async () => {
    const port = nodeCryptoPort({ verify: "auto" });
    const check = () => port.verifyEd25519Async!(f.a.publicJwk, f.data, f.sig);
    // A fresh port has seen no load: inline.
    expect(await settledWithinTurn(check())).toBe(true);
    // A window (100 ms) spent busy: the next check goes to the threadpool.
    busyFor(150);
    const busy = check();
    expect(await settledWithinTurn(busy)).toBe(false);
    await expect(busy).resolves.toBe(true);
    // A window spent idle: inline again.
    await new Promise((r) => setTimeout(r, 150));
    expect(await settledWithinTurn(check())).toBe(true);
  });

  it("auto without an event-loop gauge checks on the threadpool, as before the gauge", async () => {
    // Shadows the prototype's method on the instance for the port's creation only.
    Object.defineProperty(performance, "eventLoopUtilization", { value: undefined, configurable: true, writable: true });
    let port;
    try {
      port = nodeCryptoPort({ verify: "auto" });
    } finally {
      delete (performance as unknown as Record<string, unknown>).eventLoopUtilization;
    }
    expect(typeof performance.eventLoopUtilization).toBe("function");
    const p = port.verifyEd25519Async!(f.a.publicJwk, f.data, f.sig);
    expect(await settledWithinTurn(p)).toBe(false);
    await expect(p).resolves.toBe(true);
    await expect(port.verifyEd25519Async!(f.a.publicJwk, f.data, f.tampered)).resolves.toBe(false);
  });

  it("refuses a placement it does not know, naming the option", () => {
    expect(() => nodeCryptoPort({ verify: "sometimes" as VerifyPlacement })).toThrow(/verify must be "auto", "threadpool" or "inline" \(got "sometimes"\)/);
    expect(() => nodeCryptoPort({ verify: 3 as unknown as VerifyPlacement })).toThrow(/got number/);
    expect(() => nodeCryptoPort(null as unknown as object)).toThrow(/options must be an object/);
    expect(() => nodeCryptoPort({ verify: null as unknown as VerifyPlacement })).toThrow(/got object/);
    expect(() => nodeCryptoPort({ verfy: "inline" } as unknown as object)).toThrow(/unknown option "verfy"/);
  });
});

describe("nodeCryptoPort key generation", () => {
  // Invariant: generating Ed25519 keys never hangs the process. Node 20 deadlocks when a fresh
  // KeyObject is exported as JWK while a garbage collection runs its generation job's destructor
  // (both take the key's mutex); with a young generation of 1 MiB a generate-then-export loop hung
  // before its first thousand keys here. The child generates 3,000 pairs under that pressure and
  // must exit on its own, each pair well formed and distinct.
  it("3,000 key pairs under garbage-collection pressure, none hangs", () => {
    const root = fileURLToPath(new URL("..", import.meta.url));
    const code = [
      'import { nodeCryptoPort } from "./src/index.ts";',
      "const port = nodeCryptoPort(); const seen = new Set();",
      "for (let i = 0; i < 3000; i++) { const k = port.generateEd25519();",
      '  if (k.publicJwk.x.length !== 43 || k.privateJwk.d.length !== 43 || k.privateJwk.x !== k.publicJwk.x) throw new Error("bad key " + i);',
      "  seen.add(k.publicJwk.x); }",
      "console.log(seen.size);",
    ].join("\n");
    const r = spawnSync(process.execPath, ["--max-semi-space-size=1", "--import", "tsx", "--input-type=module", "-e", code], { cwd: root, encoding: "utf8", timeout: 60_000, env: { ...process.env, NODE_NO_WARNINGS: "1" } });
    expect({ signal: r.signal, status: r.status, stderr: r.stderr.slice(0, 500) }).toEqual({ signal: null, status: 0, stderr: "" });
    expect(r.stdout.trim()).toBe("3000");
  }, 90_000);
});
