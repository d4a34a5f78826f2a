/**
 * Paired A/B of two configurations of the PostgreSQL host loop, for differences of a few percent
 * on a machine whose speed drifts (the shared 2-core VMs here moved by up to 2x within minutes,
 * docs/benchmarks.md): `npx tsx bench/ab.ts`.
 *
 * Two processes (bench/ab-child.ts), each with its own fresh database on the same server, run
 * bench/prof-loop.ts's closed loop. They never run at once: one is paused (SIGSTOP) while the
 * other runs a window of WRIT_AB_WINDOW_MS (default 2000, after 300 ms to settle), and the order
 * flips every pair. A window's rate is taken from the child's own counts and timestamps. Each
 * pair's ratio (B / A) compares two windows a few seconds apart, so a drift of the machine slower
 * than that cancels out; the result is the median of WRIT_AB_PAIRS (default 30) pair ratios, with
 * their quartiles, how many pairs had B ahead, and each side's median rate. An A/A run (both sides
 * alike) shows the spread to expect from the machine alone: read a B / A inside that spread as no
 * difference. Pausing keeps the paused side's leases (30 s) and connections; a window is far
 * shorter. A side that dies or stops counting fails the run.
 *
 * - WRIT_AB_A / WRIT_AB_B: store options of each side, JSON (default `{}`), e.g.
 *   `WRIT_AB_B='{"batchesInFlight":2}'`. An option the code does not know is ignored.
 * - WRIT_AB_A_SQL / WRIT_AB_B_SQL: a file of SQL run on that side's database after the migration
 *   (an experiment on the store's functions, e.g. a `CREATE OR REPLACE FUNCTION`).
 * - WRIT_AB_A_DIR / WRIT_AB_B_DIR: the checkout each side runs (default this one), to compare two
 *   versions of the code: a worktree of the other commit with its `node_modules` and
 *   `bench/node_modules` linked, and this tree's bench/ab-child.ts, bench/prof-loop.ts and
 *   bench/host.ts copied in (so that both sides run the same loop, action and policy).
 * - WRIT_AB_IN_FLIGHT: invocations in flight on each side (default 16).
 * - WRIT_AB_HANDOFF=0: the worker takes every invocation through its wake-up and claim, as one in a
 *   process of its own does, instead of at admission (the hand-off).
 * - WRIT_AB_LABEL: the result's name, bench/results/ab-<label>.json (default `last`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freshDatabase, type FreshDatabase } from "../tests/helpers/pg.js";
import { median, percentile, writeResult } from "./lib.js";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pairs = Number(process.env.WRIT_AB_PAIRS ?? 30);
const windowMs = Number(process.env.WRIT_AB_WINDOW_MS ?? 2000);
const inFlight = Number(process.env.WRIT_AB_IN_FLIGHT ?? 16);
const label = process.env.WRIT_AB_LABEL ?? "last";

interface SideConfig {
  name: "A" | "B";
  options: string;
  sql: string;
  dir: string;
}

interface Side extends SideConfig {
  child: ChildProcess;
  /** The last count the child printed, and when (its clock, ms since the epoch). */
  last: { done: number; at: number } | null;
  exited: string | null;
  ready: Promise<void>;
  rates: number[];
}

function configOf(name: "A" | "B"): SideConfig {
  const options = process.env[`WRIT_AB_${name}`] ?? "{}";
  try {
    JSON.parse(options);
  } catch (e) {
    throw new Error(`WRIT_AB_${name} is not JSON: ${(e as Error).message}`);
  }
  const sql = process.env[`WRIT_AB_${name}_SQL`] ?? "";
  return { name, options, sql: sql === "" ? "" : resolve(sql), dir: resolve(process.env[`WRIT_AB_${name}_DIR`] ?? here) };
}

function startSide(cfg: SideConfig, db: FreshDatabase): Side {
  const child = spawn(process.execPath, ["--import", "tsx", join(cfg.dir, "bench", "ab-child.ts")], {
    cwd: cfg.dir,
    env: { ...process.env, WRIT_AB_URL: db.url, WRIT_AB_STORE_OPTIONS: cfg.options, WRIT_AB_SQL: cfg.sql, WRIT_AB_IN_FLIGHT: String(inFlight) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const side: Side = { ...cfg, child, last: null, exited: null, ready: Promise.resolve(), rates: [] };
  side.ready = new Promise<void>((res, rej) => {
    let buf = "";
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop()!;
      for (const l of lines) {
        if (l === "ready") res();
        const m = /^done (\d+) ([\d.]+)$/.exec(l);
        if (m !== null) side.last = { done: Number(m[1]), at: Number(m[2]) };
      }
    });
    child.on("exit", (code, signal) => {
      side.exited = `exited (${code ?? signal})`;
      rej(new Error(`side ${cfg.name} ${side.exited} before it was ready`));
    });
  });
  return side;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The latest count `s` printed after `after` (its clock), waiting for one. */
async function countAfter(s: Side, after: number): Promise<{ done: number; at: number }> {
  const deadline = performance.now() + 2000;
  for (;;) {
    if (s.exited !== null) throw new Error(`side ${s.name} ${s.exited} during the run`);
    if (s.last !== null && s.last.at > after) return s.last;
    if (performance.now() > deadline) throw new Error(`side ${s.name} printed no count for 2 s`);
    await sleep(5);
  }
}

/** The rate of `s` over one window, the other side paused: its own counts over its own clock. */
async function windowOf(s: Side): Promise<number> {
  s.child.kill("SIGCONT");
  await sleep(300);
  const from = await countAfter(s, Date.now() - 1);
  await sleep(windowMs);
  const to = await countAfter(s, from.at + windowMs - 1);
  s.child.kill("SIGSTOP");
  return ((to.done - from.done) * 1000) / (to.at - from.at);
}

const cfgA = configOf("A");
const cfgB = configOf("B");
let dbA: FreshDatabase | undefined;
let dbB: FreshDatabase | undefined;
const sides: Side[] = [];
try {
  dbA = await freshDatabase({ empty: true });
  dbB = await freshDatabase({ empty: true });
  // One side warms up at a time too.
  const a = startSide(cfgA, dbA);
  sides.push(a);
  await a.ready;
  a.child.kill("SIGSTOP");
  const b = startSide(cfgB, dbB);
  sides.push(b);
  await b.ready;
  b.child.kill("SIGSTOP");
  const ratios: number[] = [];
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? [a, b] : [b, a];
    for (const s of order) s.rates.push(await windowOf(s));
    ratios.push(b.rates.at(-1)! / a.rates.at(-1)!);
    console.log(`  pair ${i + 1}: A ${a.rates.at(-1)!.toFixed(0)}/s, B ${b.rates.at(-1)!.toFixed(0)}/s, B/A ${ratios.at(-1)!.toFixed(3)}`);
  }
  const side = (s: Side): { median: number } & Record<string, unknown> => ({ options: s.options, sql: s.sql || null, dir: s.dir, rates: s.rates, median: median(s.rates) });
  const r = {
    loadavg: loadavg(),
    inFlight,
    windowMs,
    A: side(a),
    B: side(b),
    ratios,
    medianRatio: median(ratios),
    quartiles: [percentile(ratios, 25), percentile(ratios, 75)],
    bAhead: ratios.filter((x) => x > 1).length,
  };
  const desc = (s: Side): string => `${s.options}${s.sql ? ` + ${s.sql}` : ""}${s.dir === here ? "" : ` in ${s.dir}`}`;
  console.log(
    `A/B (${pairs} pairs of ${windowMs} ms windows, ${inFlight} in flight each): A ${desc(a)} median ${r.A.median.toFixed(0)}/s | B ${desc(b)} median ${r.B.median.toFixed(0)}/s | ` +
      `B/A median of pair ratios ${r.medianRatio.toFixed(3)} (quartiles ${r.quartiles.map((x) => x.toFixed(3)).join(" - ")}; B ahead in ${r.bAhead} of ${pairs})`,
  );
  console.log("  ->", writeResult(`ab-${label}`, r));
} finally {
  for (const s of sides) {
    s.child.kill("SIGCONT");
    s.child.kill("SIGKILL");
  }
  await sleep(200);
  await dbA?.drop();
  await dbB?.drop();
}
