/**
 * `npm run bench`: every benchmark, ratios measured side by side in one run, JSON under bench/results/.
 * Select some with `npm run bench -- boundary` (names: boundary, policy, durable, http, host, cost, commits, latency, cli, growth, plans, cluster, lifecycle).
 *
 * The benchmarks' own dependencies (graphile-worker, postgres.js, autocannon) are in
 * bench/package.json, not in the root install: the first run installs them into bench/node_modules.
 * Bench modules are imported after that, one by one, so a selected bench loads only what it needs.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, writeResult } from "./lib.js";

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const NAMES = ["boundary", "policy", "durable", "http", "host", "cost", "commits", "latency", "cli", "growth", "plans", "cluster", "lifecycle"];
const only = new Set(process.argv.slice(2));
for (const name of only) {
  if (!NAMES.includes(name)) {
    console.error(`unknown bench ${JSON.stringify(name)}; names: ${NAMES.join(", ")}`);
    process.exit(2);
  }
}
const want = (name: string): boolean => only.size === 0 || only.has(name);
const rounds = Number(process.env.WRIT_BENCH_ROUNDS ?? 5);

/** Installs bench/package.json's dependencies when bench/node_modules lacks them (the http and host benches need them). */
function ensureBenchDependencies(): void {
  if (existsSync(join(BENCH_DIR, "node_modules", ".package-lock.json"))) return;
  console.log("installing the benchmarks' dependencies into bench/node_modules (npm --prefix bench ci) ...");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const r = spawnSync(npm, ["--prefix", BENCH_DIR, "ci", "--no-audit", "--no-fund", "--prefer-offline"], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error(`npm --prefix bench ci failed (exit ${r.status ?? r.signal}); run it by hand and retry`);
    process.exit(1);
  }
}
if (want("http") || want("host") || want("cost") || want("commits")) ensureBenchDependencies();

if (want("cli")) {
  const { benchCli } = await import("./cli.js");
  const r = benchCli(Number(process.env.WRIT_BENCH_CLI_RUNS ?? 15));
  const m = r.medians;
  console.log(`cli cold start (compiled dist/, ${r.runs} processes each, interleaved): node -e 0 ${m.nodeMs.toFixed(0)} ms | writ --help ${m.helpMs.toFixed(0)} ms (ratio ${r.ratios.helpOverNode.toFixed(2)}) | writ ls ${m.lsMs.toFixed(0)} ms (ratio ${r.ratios.lsOverNode.toFixed(2)})`);
  console.log("  ->", writeResult("cli", r));
}

if (want("plans")) {
  const { benchPlans } = await import("./plans.js");
  const r = await benchPlans();
  if (r !== null) {
    for (const st of r.statements) {
      console.log(`plans, ${st.name}: buffers ${st.buffers.join(" / ")} for ${r.sizes.join(" / ")} ended invocations (largest/smallest ${st.largestOverSmallest.toFixed(2)}); indexes ${st.indexes.join(", ") || "-"}${st.badNodes.length > 0 ? `; BAD: ${st.badNodes.join(", ")}` : ""}`);
    }
    console.log(`plans, writ_claim: buffers ${r.claimFunction.buffers.join(" / ")}${r.claimFunction.badNodes.length > 0 ? `; BAD: ${r.claimFunction.badNodes.join(", ")}` : ""}`);
    console.log("  ->", writeResult("plans", r));
  }
}

if (want("cluster")) {
  const { benchCluster } = await import("./cluster.js");
  const r = await benchCluster();
  if ("skipped" in r) console.log(`cluster: skipped (${r.skipped})`);
  else {
    console.log(
      `cluster, ${r.workers} writ workers, ${r.inFlight} in flight, ${r.rounds} interleaved rounds of ${r.roundSeconds} s: namespaces ${r.medians.namespaces.toFixed(0)}/s | loopback ${r.medians.loopback.toFixed(0)}/s | namespaces / loopback ${r.ratio.toFixed(3)} (medians); load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}`,
    );
    console.log("  ->", writeResult("cluster", r));
  }
}

if (want("lifecycle")) {
  const { benchLifecycle } = await import("./lifecycle.js");
  const r = await benchLifecycle();
  for (const run of r.runs) {
    console.log(
      `lifecycle, ${run.mode}: median ${run.medianRate.toFixed(0)}/s (${run.rates.map((x) => x.toFixed(0)).join(" ")} per 10 s), ${run.invocations} invocations; database ${(run.databaseBytes / 1048576).toFixed(1)} MiB, rows ${JSON.stringify(run.rows)}` +
        (run.pruned !== null ? `; pruned ${run.pruned} rows, archived through seq ${run.archivedEntries}` : ""),
    );
  }
  console.log(`  lifecycle / plain (median rates): ${r.ratio.toFixed(3)} (goal >= 0.9); database size lifecycle / plain ${r.sizeRatio.toFixed(3)}; load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}`);
  console.log("  ->", writeResult("lifecycle", r));
}

if (want("growth")) {
  const { benchGrowth, perMinute, perMinuteCpu } = await import("./growth.js");
  const r = await benchGrowth();
  for (const run of r.runs) {
    console.log(
      `growth, ${run.server} (autovacuum ${run.autovacuum}), ${run.seconds} s, ${run.invocations} invocations: ${run.rates.map((x) => x.toFixed(0)).join(" ")} /s per 10 s | ` +
        `last/first ${run.lastOverFirst.toFixed(2)}, min/first ${run.minOverFirst.toFixed(2)}, min/median ${run.minOverMedian.toFixed(2)} | dead rows ${JSON.stringify(run.tables)}`,
    );
  }
  for (const run of r.runs) {
    const cpu = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(" ");
    console.log(
      `  per minute, ${run.server}: ${perMinute(run.rates).map((x) => x.toFixed(0)).join(" ")} /s | CPU ms per invocation, bench process ` +
        `${cpu(perMinuteCpu(run.rates, run.benchCpuMsPerInvocation))}, server ${cpu(perMinuteCpu(run.rates, run.serverCpuMsPerInvocation))} | ` +
        `calibration ms ${cpu(perMinute(run.calibrationMs))}`,
    );
  }
  if (r.preloadedOverEmpty !== null) console.log(`  preloaded (${r.preloaded} ended invocations, loaded in ${r.preloadSeconds.toFixed(0)} s) / empty, median rates: ${r.preloadedOverEmpty.toFixed(2)} (goal >= ${r.goals.preloadedOverEmpty})`);
  console.log(`  goals: min/first >= ${r.goals.testServerMinOverFirst} on the test server, >= ${r.goals.defaultsMinOverFirst} with defaults; load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}`);
  console.log("  ->", writeResult("growth", r));
}

if (want("latency")) {
  const { benchLatency } = await import("./latency.js");
  const r = await benchLatency();
  console.log(`latency, one invocation in flight on PostgreSQL (private instance, defaults), ${r.invocations} invocations: submit -> succeeded p50 ${r.totalMedianMs.toFixed(2)} ms, p99 ${r.totalP99Ms.toFixed(2)} ms; load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}`);
  for (const s of r.stages) console.log(`  ${s.medianMs.toFixed(3).padStart(7)} ms  until ${s.stage}${s.serverMs !== undefined ? ` (server execution ${s.serverMs.toFixed(3)} ms)` : ""}`);
  console.log("  server execution inside the functions, per invocation (calls, ms):");
  for (const p of r.serverParts) console.log(`  ${p.callsPerInvocation.toFixed(2).padStart(6)} ${p.msPerInvocation.toFixed(3).padStart(7)} ms  ${p.statement}`);
  console.log("  ->", writeResult("latency", r));
}

if (want("boundary")) {
  const { benchBoundaryMemory } = await import("./boundary.js");
  const r = await benchBoundaryMemory(rounds);
  console.log(`boundary (memory store, no-op connector, ${r.concurrency} in flight): ${fmt(r.boundaryPerSec)}/s | raw Ed25519 verify, sync: ${fmt(r.verifyPerSec)}/s, async x${r.concurrency}: ${fmt(r.asyncVerifyPerSec)}/s`);
  console.log(`  boundary / raw sync verify ${r.ratio.toFixed(3)} (goal >= 0.9) | boundary / raw async verify ${r.ratioAsync.toFixed(3)} (medians of ${rounds} interleaved rounds)`);
  console.log("  ->", writeResult("boundary", { ...r, goal: 0.9 }));
}

if (want("policy")) {
  const { benchPolicy } = await import("./policy.js");
  const r = await benchPolicy(rounds);
  console.log(`policy (cedar, ${r.policies} policies, schema): evaluate+sign ${fmt(r.evaluateSignPerSec)}/s | evaluate ${fmt(r.evaluatePerSec)}/s | raw cedar-wasm (pre-parsed) ${fmt(r.rawPerSec)}/s | ratio ${r.ratio.toFixed(3)} (evaluate alone ${r.evaluateRatio.toFixed(3)})`);
  console.log(`  re-parse per call: ${fmt(r.reparsePerSec)}/s, pre-parsed is ${r.preparseSpeedup.toFixed(1)}x faster (medians of ${rounds} interleaved rounds)`);
  console.log("  ->", writeResult("policy", r));
}

if (want("durable")) {
  const { benchDurable } = await import("./durable.js");
  const r = await benchDurable(rounds);
  const m = r.medians;
  const q = r.ratios;
  console.log(`durable (no-op connector; medians of ${rounds} interleaved rounds): raw fsync ${fmt(m.fsyncPerSec)}/s (fdatasync ${fmt(m.fdatasyncPerSec)}/s) | raw Ed25519 verify ${fmt(m.verifyPerSec)}/s`);
  console.log(`  sqlite group commit, ${r.callers.sqlite} callers: ${fmt(m.sqliteGroupPerSec)}/s (${m.sqliteTxPerCommit.toFixed(1)} tx per commit) | sqlite/verify ${q.sqliteOverVerify.toFixed(3)} (goal >= ${r.goals.sqliteOverVerify}) | sqlite/fsync ${q.sqliteOverFsync.toFixed(2)}`);
  console.log(`  sqlite without group commit: ${fmt(m.sqliteNoGroupPerSec)}/s | /verify ${q.sqliteNoGroupOverVerify.toFixed(3)} | /fsync ${q.sqliteNoGroupOverFsync.toFixed(2)}`);
  console.log(m.postgresPerSec === null || q.postgresOverVerify === null ? "  postgres: skipped (no server)" : `  postgres (${r.postgresServer}), ${r.callers.postgres} callers, pool ${r.callers.postgresPool}: ${fmt(m.postgresPerSec)}/s | postgres/verify ${q.postgresOverVerify.toFixed(3)} (goal >= ${r.goals.postgresOverVerify}; one scope, one hash chain)`);
  if (m.postgresScopesPerSec !== null && q.postgresScopesOverVerify !== null) {
    console.log(`  postgres, ${r.callers.postgres} callers over ${r.callers.postgres} scopes: ${fmt(m.postgresScopesPerSec)}/s | /verify ${q.postgresScopesOverVerify.toFixed(3)}`);
  }
  console.log("  ->", writeResult("durable", r));
}

if (want("http")) {
  const { benchHttp } = await import("./http.js");
  const r = await benchHttp(Math.min(rounds, 3));
  const m = r.medians;
  console.log(`http (${r.connections} connections, autocannon; medians of ${r.rounds.length} rounds): submit on sqlite + worker ${fmt(m.submitPerSec)}/s, p50 ${m.submitP50Ms} ms, p99 ${m.submitP99Ms} ms | bare Hono hello (worker stopped) ${fmt(m.helloPerSec)}/s, p50 ${m.helloP50Ms} ms, p99 ${m.helloP99Ms} ms | ratio ${r.ratio.toFixed(3)}`);
  console.log(`  worker (concurrency ${r.worker.concurrency}) ran ${fmt(r.worker.succeeded)} of ${fmt(r.worker.admitted)} admitted invocations to succeeded during the bench`);
  console.log(`  admission alone (worker stopped): ${fmt(r.admissionOnly.perSec)}/s, p50 ${r.admissionOnly.p50Ms} ms, p99 ${r.admissionOnly.p99Ms} ms | ratio to bare Hono ${r.admissionOnly.ratio.toFixed(3)}`);
  const hs = r.httpOverHostSubmit;
  console.log(`  HTTP submit ${fmt(hs.httpPerSec)}/s vs in-process host.submit ${fmt(hs.hostPerSec)}/s (p50 ${hs.hostP50Ms.toFixed(1)} ms), ${r.connections} concurrent each, same store | HTTP/host.submit ${hs.ratio.toFixed(3)} (goal >= ${hs.goal}; medians of ${hs.rounds.length} interleaved rounds)`);
  console.log("  ->", writeResult("http", r));
}

if (want("cost")) {
  const { benchCost } = await import("./cost.js");
  const r = await benchCost(Math.min(rounds, 3));
  if (r === null) console.log("cost: skipped (no PostgreSQL server)");
  else {
    const line = (name: string, m: { perSec: number; nodeCpuMs: number; nodeSysMs: number; pgCpuMs: number; walBytes: number }): string =>
      `  ${name.padEnd(15)} ${fmt(m.perSec)}/s | Node CPU ${m.nodeCpuMs.toFixed(2)} ms (system ${m.nodeSysMs.toFixed(2)}) | PostgreSQL backends ${m.pgCpuMs.toFixed(2)} ms | WAL ${fmt(m.walBytes)} B`;
    console.log(`cost per item on PostgreSQL, one process submitting and working, 16 in flight, ${r.items} items (medians of ${r.rounds.length} interleaved rounds; load ${r.loadavg.map((x) => x.toFixed(1)).join(" ")}):`);
    console.log(line("Writ", r.medians.writ));
    console.log(line("graphile-worker", r.medians.graphile));
    console.log(`  Writ / graphile-worker: Node CPU ${r.ratios.nodeCpu.toFixed(2)}, PostgreSQL CPU ${r.ratios.pgCpu.toFixed(2)}, total CPU ${r.ratios.totalCpu.toFixed(2)}, WAL ${r.ratios.wal.toFixed(1)}`);
    if (r.walByRelation) console.log(`  Writ's WAL by relation (B per item): ${r.walByRelation.slice(0, 10).map((w) => `${w.relation} ${fmt(w.bytes)}`).join(", ")}`);
    if (r.walByRecordType) console.log(`  Writ's WAL by record type (records / B per item): ${r.walByRecordType.slice(0, 10).map((w) => `${w.type} ${w.records.toFixed(2)} / ${fmt(w.bytes + w.fpiBytes)}`).join(", ")}`);
    console.log("  ->", writeResult("cost", r));
  }
}

if (want("commits")) {
  const { benchCommits, commitsSummary } = await import("./commits.js");
  const r = await benchCommits();
  if (r === null) console.log("commits: skipped (no PostgreSQL server)");
  else {
    for (const line of commitsSummary(r)) console.log(line);
    console.log("  ->", writeResult("commits", r));
  }
}

if (want("host")) {
  const { benchHost, hostSummary } = await import("./host.js");
  const r = await benchHost(Math.min(rounds, 3));
  for (const line of hostSummary(r)) console.log(line);
  console.log("  ->", writeResult("host", r));
}
