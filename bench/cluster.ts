/**
 * What the network namespaces of the cluster tests cost (`npm run bench -- cluster`): the same
 * healthy cluster twice, side by side: a private PostgreSQL, the provider (tests/cluster/fixtures/
 * provider.ts, its fsynced ledger) and 3 `writ worker` processes on the cluster's config
 * (tests/cluster/fixtures/config.ts, 6 slots each), once each on its own machine (a network
 * namespace, a veth pair to one bridge: tests/cluster/fixtures/netns.ts) and once all on
 * loopback. The bench process submits a one-step idempotent action (no scripted faults, no delay)
 * through the host on each store and keeps 16 invocations in flight; a round measures one setup
 * for `WRIT_BENCH_CLUSTER_S` seconds (default 10, after 2 s of warm-up) as invocations ended per
 * second. Rounds alternate between the setups (the order flips each round), `WRIT_BENCH_ROUNDS`
 * (default 5) of each; the result is the median rates and namespaces / loopback.
 * Needs root, iproute2 and nftables (as the cluster tests). Written to bench/results/cluster.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { openRuntime, type Runtime } from "../src/runtime/runtime.js";
import { freePort } from "../tests/helpers/pg.js";
import { startPgInstance, type PgInstance } from "../tests/helpers/pg-instance.js";
import { ACTIONS, clusterConfig, type ClusterSettings } from "../tests/cluster/fixtures/config.js";
import { clusterUnavailable, createNetwork, sweepLeftovers, type Machine, type Network } from "../tests/cluster/fixtures/netns.js";
import { ACTOR, AUTHORITY_REF, grantAuthorities, SCOPES } from "../tests/cluster/fixtures/workload.js";
import { median } from "./lib.js";

const REPO = fileURLToPath(new URL("../", import.meta.url));
const PROVIDER = join(REPO, "tests/cluster/fixtures/provider.ts");
const WORKERS = 3;
const IN_FLIGHT = 16;
const WARMUP_MS = 2_000;

export interface ClusterBenchResult {
  workers: number;
  inFlight: number;
  roundSeconds: number;
  rounds: number;
  loadavg: number[];
  /** Invocations ended per second, per round. */
  namespaces: number[];
  loopback: number[];
  medians: { namespaces: number; loopback: number };
  /** Median rate with namespaces over median rate on loopback (1: they cost nothing). */
  ratio: number;
}

interface Setup {
  readonly name: "namespaces" | "loopback";
  readonly rt: Runtime;
  /** A client of its database, for counting ended invocations. */
  readonly db: pg.Client;
  close(): Promise<void>;
}

/** Spawns `argv` in machine `m`'s namespace (or here, on loopback); resolves once its output has `ready`. */
async function startProcess(name: string, m: Machine | null, argv: readonly string[], cwd: string, env: Record<string, string>, ready: string): Promise<ChildProcess> {
  const [file, args] = m === null ? [argv[0]!, argv.slice(1)] : ["ip", ["netns", "exec", m.ns, ...argv]];
  const child = spawn(file, args, { cwd, env: { ...process.env, NO_COLOR: "1", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not print ${ready} within 60 s: ${out.slice(-1_000)}`)), 60_000);
    const onData = (d: Buffer): void => {
      out = (out + d.toString("utf8")).slice(-4_000);
      if (out.includes(ready)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code}) before printing ${ready}: ${out.slice(-1_000)}`));
    });
  });
  // Keep draining its output so it never blocks on a full pipe.
  child.stdout.resume();
  child.stderr.resume();
  return child;
}

async function startSetup(name: Setup["name"]): Promise<Setup> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const close = async (): Promise<void> => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    const dir = mkdtempSync(join(tmpdir(), `writ-bench-cluster-${name}-`));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    let net: Network | null = null;
    if (name === "namespaces") {
      net = await createNetwork();
      cleanups.push(() => net!.close());
    }
    const machine = async (role: string): Promise<Machine | null> => (net === null ? null : net.addMachine(role));
    const pgM = await machine("pg");
    const provM = await machine("prov");
    const workerMs: Array<Machine | null> = [];
    for (let i = 0; i < WORKERS; i++) workerMs.push(await machine(`w${i}`));

    const inst: PgInstance = await startPgInstance(pgM === null ? {} : { netns: { name: pgM.ns, listen: pgM.ip } });
    cleanups.push(() => inst.close());
    await inst.createDatabase("writ");

    const provHost = provM?.ip ?? "127.0.0.1";
    const provPort = provM === null ? await freePort() : 8080;
    const provider = await startProcess("provider", provM, [process.execPath, "--import", "tsx", PROVIDER], REPO, { PROVIDER_HOST: provHost, PROVIDER_PORT: String(provPort), PROVIDER_LEDGER: join(dir, "ledger.jsonl") }, '"ready"');
    cleanups.push(async () => provider.kill("SIGKILL"));

    const settings: ClusterSettings = { pgUrl: inst.url("writ"), providerUrl: `http://${provHost}:${provPort}`, keysDir: join(dir, "keys"), concurrency: 6 };
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"), "dir");
    writeFileSync(join(dir, "writ.config.ts"), `import { clusterConfig } from ${JSON.stringify(join(REPO, "tests/cluster/fixtures/config.ts"))};\nexport default clusterConfig(${JSON.stringify(settings)});\n`);
    // Keys and migrations first, from this process, as in the cluster tests.
    const rt = await openRuntime(clusterConfig(settings), { cwd: dir });
    cleanups.push(() => rt.close());
    await grantAuthorities(rt.store);
    const workers = await Promise.all(workerMs.map((m, i) => startProcess(`w${i}`, m, [process.execPath, join(REPO, "bin", "writ.js"), "worker", "--config", "writ.config.ts", "--json", "--quiet"], dir, {}, '"worker"')));
    cleanups.push(async () => {
      for (const w of workers) w.kill("SIGKILL");
    });
    const db = new pg.Client({ connectionString: inst.url("writ") });
    db.on("error", () => undefined);
    await db.connect();
    cleanups.push(() => db.end());
    return { name, rt, db, close };
  } catch (e) {
    await close();
    throw e;
  }
}

let requestNo = 0;

/** Keeps IN_FLIGHT invocations in flight on `s` for warm-up plus `ms`; returns invocations ended per second after the warm-up. */
async function measure(s: Setup, ms: number): Promise<number> {
  /** Invocations that ended, and all of them (the difference is in flight, left over from an earlier round included). */
  const counts = async (): Promise<{ ended: number; total: number }> => {
    const row = (await s.db.query<{ ended: string; total: string }>("SELECT count(*) FILTER (WHERE status IN ('succeeded', 'failed', 'reconciliation_required')) AS ended, count(*) AS total FROM writ_invocations")).rows[0]!;
    return { ended: Number(row.ended), total: Number(row.total) };
  };
  const t0 = performance.now();
  let base: { t: number; n: number } | null = null;
  for (;;) {
    const { ended, total } = await counts();
    const now = performance.now();
    if (base === null && now - t0 >= WARMUP_MS) base = { t: now, n: ended };
    if (base !== null && now - base.t >= ms) return ((ended - base.n) * 1_000) / (now - base.t);
    const room = IN_FLIGHT - (total - ended);
    if (room > 0) {
      await Promise.all(
        Array.from({ length: room }, () => {
          const n = ++requestNo;
          return s.rt.host.submit({ ...SCOPES[n % SCOPES.length]!, actor: { ...ACTOR }, authorityRef: AUTHORITY_REF, action: ACTIONS.idem1.id, actionVersion: "1", params: { n }, idempotencyKey: `bench-${process.pid}-${n}` });
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

export async function benchCluster(rounds = Number(process.env.WRIT_BENCH_ROUNDS ?? 5), seconds = Number(process.env.WRIT_BENCH_CLUSTER_S ?? 10)): Promise<ClusterBenchResult | { skipped: string }> {
  const why = clusterUnavailable();
  if (why !== null) return { skipped: why };
  await sweepLeftovers();
  const setups: Setup[] = [];
  try {
    setups.push(await startSetup("namespaces"), await startSetup("loopback"));
    const rates: Record<Setup["name"], number[]> = { namespaces: [], loopback: [] };
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? setups : [...setups].reverse()) rates[s.name].push(await measure(s, seconds * 1_000));
    }
    const medians = { namespaces: median(rates.namespaces), loopback: median(rates.loopback) };
    return { workers: WORKERS, inFlight: IN_FLIGHT, roundSeconds: seconds, rounds, loadavg: loadavg(), namespaces: rates.namespaces, loopback: rates.loopback, medians, ratio: medians.namespaces / medians.loopback };
  } finally {
    for (const s of setups) await s.close();
  }
}
