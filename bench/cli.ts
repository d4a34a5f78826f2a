/**
 * CLI cold start: `writ --help` and `writ ls` (on a demo store with a few invocations) against
 * `node -e 0`, each run as a fresh process, interleaved round by round so machine load hits all
 * alike. Reports medians and the median of the per-round ratios (bench/results/cli.json).
 *
 * Run: npm run bench -- cli   (env WRIT_BENCH_CLI_RUNS: processes per command, default 15)
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { builtCli } from "../bin/built.js";
import { median } from "./lib.js";

const REPO = join(dirname(fileURLToPath(import.meta.url)), "..");
const BIN = join(REPO, "bin", "writ.js");
const CONFIG = join(REPO, "examples", "writ.config.ts");

function timed(args: string[], cwd: string): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRIT_TENANT: "demo" } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(" ")} exited ${r.status}: ${r.stderr.toString()}`);
  return ms;
}

export interface CliBench {
  runs: number;
  compiled: boolean;
  medians: { nodeMs: number; helpMs: number; lsMs: number };
  /** Medians of the per-round ratios. */
  ratios: { helpOverNode: number; lsOverNode: number };
  rounds: { nodeMs: number; helpMs: number; lsMs: number }[];
  command: string;
}

export function benchCli(runs: number): CliBench {
  const { entry } = builtCli();
  if (!entry) throw new Error("dist/ is missing or older than src/: `npm run build` first (the bench measures the compiled CLI)");
  const dir = mkdtempSync(join(tmpdir(), "writ-bench-cli-"));
  try {
    const ls = [BIN, "ls", "--config", CONFIG];
    // First run creates the store, the signing key and the schema; a few invocations to list.
    timed([BIN, "migrate", "--config", CONFIG], dir);
    for (let i = 0; i < 3; i++) {
      timed([BIN, "submit", "--config", CONFIG, "--action", "payments.refund", "--actor", "agent:support-bot", "--authority", "support-bot", "--params", `{"paymentId":"pay_${i}","amount":100,"currency":"EUR"}`, "--idempotency-key", `bench-${i}`], dir);
    }
    timed(ls, dir);
    const rounds: CliBench["rounds"] = [];
    for (let i = 0; i < runs; i++) {
      // Rotating order within each round.
      const order = [() => ({ nodeMs: timed(["-e", "0"], dir) }), () => ({ helpMs: timed([BIN, "--help"], dir) }), () => ({ lsMs: timed(ls, dir) })];
      const round = {} as CliBench["rounds"][number];
      for (let k = 0; k < order.length; k++) Object.assign(round, order[(i + k) % order.length]!());
      rounds.push(round);
    }
    return {
      runs,
      compiled: true,
      medians: { nodeMs: median(rounds.map((r) => r.nodeMs)), helpMs: median(rounds.map((r) => r.helpMs)), lsMs: median(rounds.map((r) => r.lsMs)) },
      ratios: { helpOverNode: median(rounds.map((r) => r.helpMs / r.nodeMs)), lsOverNode: median(rounds.map((r) => r.lsMs / r.nodeMs)) },
      rounds,
      command: "npm run bench -- cli",
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
