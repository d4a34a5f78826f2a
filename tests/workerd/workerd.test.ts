/**
 * The portable core on workerd (docs/portable-core.md). Invariants:
 * (a) the boundary vectors (every refusal code, each reply shape, two steps, duplicates and
 *     replays, the journal) run under the workerd binary with no compatibility flags, and every
 *     attempt record (state, reason code, ids, everything), the journal's content digest and
 *     checkpoint, and the Cedar results equal those of the same vectors run here on Node's ports;
 * (b) the web CryptoPort gives the Node port's answers (the same vectors with it, run here);
 * (c) the production entry's dependency closure (src/web/index.ts, bundled) has no Node built-in,
 *     no native module and only the pinned allowed packages; the worker's adds only test-only ones;
 * (d) the closure check itself catches a built-in, a bare builtin name and an unlisted package.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultCrypto } from "../../src/node/defaults.js";
import { cedarPolicy } from "../../src/policy/index.js";
import { webCryptoPort } from "../../src/web/crypto.js";
import { BREAKERS } from "../boundary/checks.js";
import { ALLOWED_PACKAGES, CEDAR_WASM, DENY_WORKER, REPO, TEST_ONLY_PACKAGES, bundle, checkClosure, freePort, lockedVersion, startWorkerd, workerdConfig, workerdRuns, type Bundle, type Workerd } from "./harness.js";
import { runVectors, type VectorReport } from "./vectors.js";

const runs = await workerdRuns();
if (!runs.ok) {
  console.error(`\n!!!!!!!!\n!!! tests/workerd SKIPPED: the workerd binary cannot run on this platform (${process.platform}/${process.arch}): ${runs.detail}\n!!!!!!!!\n`);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "writ-workerd-"));
let worker: Bundle;
let core: Bundle;
let workerd: Workerd | undefined;
const timings: Record<string, number> = {};

beforeAll(async () => {
  let t = performance.now();
  [worker, core] = await Promise.all([bundle(path.join(REPO, "tests/workerd/worker.ts"), path.join(dir, "worker.js"), ["./cedar.wasm"]), bundle(path.join(REPO, "src/web/index.ts"), path.join(dir, "core.js"))]);
  timings.bundleMs = performance.now() - t;
  fs.copyFileSync(CEDAR_WASM, path.join(dir, "cedar.wasm"));
  fs.writeFileSync(path.join(dir, "deny.js"), DENY_WORKER);
  if (runs.ok) {
    t = performance.now();
    const port = await freePort();
    fs.writeFileSync(path.join(dir, "config.capnp"), workerdConfig(port));
    workerd = await startWorkerd(dir, port);
    timings.startMs = performance.now() - t;
  }
}, 60_000);

/** Processes whose command line names this file's directory (Linux: /proc; elsewhere none are seen). */
function processesUsing(d: string): number[] {
  if (!fs.existsSync("/proc/self/cmdline")) return [];
  return fs.readdirSync("/proc").flatMap((p) => {
    if (!/^\d+$/.test(p)) return [];
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, "latin1").includes(d) ? [Number(p)] : [];
    } catch {
      return []; // ended meanwhile
    }
  });
}

afterAll(async () => {
  await workerd?.stop();
  // Stopping workerd stops every process it ran (a launcher's child once outlived it, one per run).
  const left = processesUsing(dir);
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  expect(left, "processes left running on the workerd config").toEqual([]);
  console.log(`tests/workerd: ${JSON.stringify({ ...Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, Math.round(v)])), workerBundleBytes: worker?.bytes, coreBundleBytes: core?.bytes })}`);
});

/** Everything a report holds but the runtime's name. */
const comparable = (r: VectorReport): Omit<VectorReport, "runtime"> => ({ attempts: r.attempts, journal: r.journal, cedar: r.cedar });

describe("the dependency closure", () => {
  it("the production entry (core, memory store, web ports, Cedar web build) holds no Node built-in, no native module, only the pinned allowed packages", () => {
    const c = checkClosure(core.metafile, { allowed: ALLOWED_PACKAGES, sourceRoots: ["src/"], externals: [] });
    expect(c.problems).toEqual([]);
    expect(c.packages).toEqual(ALLOWED_PACKAGES);
    for (const [name, version] of Object.entries(ALLOWED_PACKAGES)) expect(lockedVersion(name), `${name} in package-lock`).toBe(version);
    expect(Object.keys(core.metafile.inputs).some((i) => i.startsWith("src/node/") || i.startsWith("src/stores/sqlite") || i.startsWith("src/stores/postgres"))).toBe(false);
  });

  it("the vector worker adds only test sources and the test-only packages", () => {
    const c = checkClosure(worker.metafile, { allowed: { ...ALLOWED_PACKAGES, ...TEST_ONLY_PACKAGES }, sourceRoots: ["src/", "tests/boundary/", "tests/workerd/"], externals: ["./cedar.wasm"] });
    expect(c.problems).toEqual([]);
    expect(Object.keys(c.packages).sort()).toEqual(Object.keys({ ...ALLOWED_PACKAGES, ...TEST_ONLY_PACKAGES }).sort());
  });

  it("the check fails on a node: import, a bare builtin name, an unlisted package and a native module", () => {
    const meta = {
      inputs: {
        "src/a.ts": { bytes: 1, imports: [{ path: "node:crypto", kind: "import-statement" as const, external: true }, { path: "fs", kind: "import-statement" as const, external: true }, { path: "./x.wasm", kind: "import-statement" as const, external: true }] },
        "node_modules/pino/index.js": { bytes: 1, imports: [] },
        "node_modules/better-sqlite3/build/Release/better_sqlite3.node": { bytes: 1, imports: [] },
      },
      outputs: {},
    };
    const c = checkClosure(meta, { allowed: ALLOWED_PACKAGES, sourceRoots: ["src/"], externals: [] });
    expect(c.problems).toEqual([
      "Node built-in node:crypto imported by src/a.ts",
      "Node built-in fs imported by src/a.ts",
      "external import ./x.wasm from src/a.ts",
      `package not on the allowed list: pino@${lockedVersion("pino")} (node_modules/pino/index.js)`,
      "native module node_modules/better-sqlite3/build/Release/better_sqlite3.node",
      `package not on the allowed list: better-sqlite3@${lockedVersion("better-sqlite3")} (node_modules/better-sqlite3/build/Release/better_sqlite3.node)`,
    ]);
    expect(checkClosure(meta, { allowed: { ...ALLOWED_PACKAGES, pino: "0.0.1" }, sourceRoots: ["src/"], externals: [] }).problems).toContain(`package pino is locked at ${lockedVersion("pino")}, the allowed list pins 0.0.1`);
  });
});

describe("the boundary vectors", () => {
  let node: VectorReport;
  beforeAll(async () => {
    const t = performance.now();
    node = await runVectors({ name: "node", crypto: defaultCrypto(), cedarPolicy });
    timings.nodeVectorsMs = performance.now() - t;
  });

  it("on Node: every refusal code where its breaker says, executions recorded, a verified journal, Cedar allowed and executed", () => {
    const byName = new Map(node.attempts.map((a) => [a.vector, a]));
    for (const br of BREAKERS) {
      const a = byName.get(`check ${br.check}: ${br.code}`)!;
      expect(a.attempt.state).toBe("REFUSED");
      expect(a.attempt.reasonCode).toBe(br.code);
    }
    expect(byName.get("reply: success")!.attempt.state).toBe("SUCCEEDED");
    expect(byName.get("two steps")!.connectorCalls).toBe(2);
    for (const v of ["replay: the same decision again", "replay: a new decision, same idempotency key", "retry: once more after success"]) {
      expect(byName.get(v)!.attempt.state, v).toBe("DUPLICATE");
      expect(byName.get(v)!.connectorCalls, v).toBe(0);
    }
    expect(byName.get("replay: same key, other params")!.attempt.reasonCode).toBe("IDEMPOTENCY_CONFLICT");
    expect(byName.get("retry: new decision after the transient failure")!.attempt.state).toBe("SUCCEEDED");
    expect(node.journal.entries).toBeGreaterThan(20);
    expect(node.journal).toMatchObject({ verified: true, problems: 0 });
    expect(node.cedar).not.toBeNull();
    expect(node.cedar!.at(-1)).toMatchObject({ state: "SUCCEEDED" });
  });

  it("the web CryptoPort, run here, gives the same report as node:crypto", async () => {
    const web = await runVectors({ name: "node+web-port", crypto: webCryptoPort(), cedarPolicy });
    expect(comparable(web)).toEqual(comparable(node));
  });

  it.skipIf(!runs.ok)("under workerd with no compatibility flags: every attempt, the journal digest and Cedar equal the Node run", async () => {
    const t = performance.now();
    const res = await fetch(workerd!.url);
    const body = (await res.json()) as { ok: boolean; report?: VectorReport; error?: string; stack?: string; nodeGlobals?: Record<string, string> };
    timings.workerdVectorsMs = performance.now() - t;
    expect(body.error ?? null, `${body.stack}\n${workerd!.output()}`).toBeNull();
    expect(res.status).toBe(200);
    // No Node compatibility: the runtime has neither `process` nor `Buffer`.
    expect(body.nodeGlobals).toEqual({ process: "undefined", Buffer: "undefined" });
    const w = body.report!;
    expect(w.runtime).toBe("workerd");
    expect(w.attempts.map((a) => a.vector)).toEqual(node.attempts.map((a) => a.vector));
    for (let i = 0; i < node.attempts.length; i++) expect(w.attempts[i], node.attempts[i]!.vector).toEqual(node.attempts[i]);
    expect(w.journal).toEqual(node.journal);
    expect(w.cedar).toEqual(node.cedar);
  });
});
