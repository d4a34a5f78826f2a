/**
 * Paired A/B of two configurations of the PostgreSQL host loop, for differences of a few percent
 * on a machine whose speed drifts (the shared 2-core VMs here moved by up to 2x within minutes,
 * docs/benchmarks.md): `npx tsx bench/ab.ts`.
 *
 * Two processes (bench/ab-child.ts), each with its own fresh database on the same server, run
 * bench/prof-loop.ts's closed loop. They never run at once: one is paused (SIGSTOP) while the
 * other runs a window of WRIT_AB_WINDOW_MS (default 2000, after 300 ms to settle), and the order
 * flips every pair. Each pair's ratio (B / A) compares two windows a few seconds apart, so a
 * drift of the machine slower than that cancels out; the result is the median of WRIT_AB_PAIRS
 * (default 15) pair ratios, with each side's median rate. Pausing keeps the paused side's leases
 * (30 s) and connections; a window is far shorter.
 *
 * - WRIT_AB_A / WRIT_AB_B: store options of each side, JSON (default `{}`), e.g.
 *   `WRIT_AB_B='{"batchesInFlight":2}'`.
 * - WRIT_AB_A_DIR / WRIT_AB_B_DIR: the checkout each side runs (default this one), to compare two
 *   versions of the code: a worktree of the other commit with `node_modules` linked and this
 *   file's bench/ab-child.ts and bench/prof-loop.ts copied in.
 * - WRIT_AB_IN_FLIGHT: invocations in flight on each side (default 16).
 * Prints the pairs; writes bench/results/ab.json.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freshDatabase, type FreshDatabase } from "../tests/helpers/pg.js";
import { median, writeResult } from "./lib.js";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pairs = Number(process.env.WRIT_AB_PAIRS ?? 15);
const windowMs = Number(process.env.WRIT_AB_WINDOW_MS ?? 2000);
const inFlight = Number(process.env.WRIT_AB_IN_FLIGHT ?? 16);

interface Side {
  name: "A" | "B";
  options: string;
  dir: string;
  db: FreshDatabase;
  child: ChildProcess;
  done: number;
  ready: Promise<void>;
  rates: number[];
}

function startSide(name: "A" | "B", db: FreshDatabase): Side {
  const options = process.env[`WRIT_AB_${name}`] ?? "{}";
  JSON.parse(options); // a typo fails here, not in the child
  const dir = resolve(process.env[`WRIT_AB_${name}_DIR`] ?? here);
  const child = spawn(process.execPath, ["--import", "tsx", join(dir, "bench", "ab-child.ts")], {
    cwd: dir,
    env: { ...process.env, WRIT_AB_URL: db.url, WRIT_AB_STORE_OPTIONS: options, WRIT_AB_IN_FLIGHT: String(inFlight) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const side: Side = { name, options, dir, db, child, done: 0, ready: Promise.resolve(), rates: [] };
  side.ready = new Promise<void>((res, rej) => {
    let buf = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) {
        if (l === "ready") res();
        else if (l.startsWith("done ")) side.done = Number(l.slice(5));
      }
    });
    child.on("exit", (code, signal) => rej(new Error(`side ${name} exited (${code ?? signal}) before it was ready`)));
  });
  return side;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The rate of `s` over one window, the other side paused. */
async function windowOf(s: Side): Promise<number> {
  s.child.kill("SIGCONT");
  await sleep(300);
  const d0 = s.done;
  const t0 = performance.now();
  await sleep(windowMs);
  // The child prints every 20 ms: wait for a count printed after the window ended.
  const t1 = performance.now();
  await sleep(40);
  const rate = ((s.done - d0) * 1000) / (t1 - t0 + 40);
  s.child.kill("SIGSTOP");
  return rate;
}

const dbA = await freshDatabase({ empty: true });
const dbB = await freshDatabase({ empty: true });
const a = startSide("A", dbA);
// One side warms up at a time too.
await a.ready;
a.child.kill("SIGSTOP");
const b = startSide("B", dbB);
try {
  await b.ready;
  b.child.kill("SIGSTOP");
  const ratios: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? [a, b] : [b, a];
    for (const s of order) s.rates.push(await windowOf(s));
    ratios.push(b.rates.at(-1)! / a.rates.at(-1)!);
    console.log(`  pair ${i + 1}: A ${a.rates.at(-1)!.toFixed(0)}/s, B ${b.rates.at(-1)!.toFixed(0)}/s, B/A ${ratios.at(-1)!.toFixed(3)}`);
  }
  const r = {
    loadavg: loadavg(),
    inFlight,
    windowMs,
    A: { options: a.options, dir: a.dir, rates: a.rates, median: median(a.rates) },
    B: { options: b.options, dir: b.dir, rates: b.rates, median: median(b.rates) },
    ratios,
    medianRatio: median(ratios),
  };
  console.log(`A/B (${pairs} pairs of ${windowMs} ms windows, ${inFlight} in flight): A ${a.options} median ${r.A.median.toFixed(0)}/s | B ${b.options} median ${r.B.median.toFixed(0)}/s | B/A median of pair ratios ${r.medianRatio.toFixed(3)}`);
  console.log("  ->", writeResult("ab", r));
} finally {
  for (const s of [a, b]) {
    s.child.kill("SIGCONT");
    s.child.kill("SIGKILL");
  }
  await sleep(200);
  await dbA.drop();
  await dbB.drop();
}
