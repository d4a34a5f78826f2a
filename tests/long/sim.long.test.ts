/**
 * The long simulation (npm run test:long, docs/simulation.md): 10,000 seeds on the memory store,
 * 1,000 on SQLite and 1,000 on PostgreSQL. WRIT_SIM_FROM moves the first seed (each run prints
 * its range); a failing seed prints its replay command. On PostgreSQL the simulator runs one
 * store call at a time and waits for its real I/O, so the same seed makes the same logical
 * choices and the same trace; only wall-clock timing differs (the store's own background
 * connections and timers are outside the simulation). WRIT_SIM_LONG_SCALE=0.1 runs a tenth of
 * each count (PostgreSQL's 1,000 seeds took 4.5 minutes on a quiet 2-core machine, far longer under load).
 */
import { afterAll, describe, expect, it } from "vitest";
import { pgServerOrNull } from "../helpers/pg.js";
import { dropSharedPostgres } from "../sim/run.js";
import { runSeeds, seedList, storeSelected } from "../sim/suite.js";

const FILE = "tests/long/sim.long.test.ts";
const server = await pgServerOrNull();
const scale = Number(process.env.WRIT_SIM_LONG_SCALE ?? 1);

afterAll(() => dropSharedPostgres());

describe("deterministic simulation, long", () => {
  for (const [kind, count] of [["memory", 10_000], ["sqlite", 1_000], ["postgres", 1_000]] as const) {
    it.runIf(storeSelected(kind) && (kind !== "postgres" || server !== null))(`${kind} store: ${count * scale} seeds keep every invariant`, async () => {
      const r = await runSeeds(kind, seedList(Math.max(1, Math.round(count * scale))), FILE);
      expect(r.failures.map((f) => `${f.replay}\n  ${f.violations.join("\n  ")}`)).toEqual([]);
      // PostgreSQL pays real round trips for every store call: 3.7 seeds/s on a quiet machine, 0.1-0.3 under heavy load (docs/simulation.md, The long run).
    }, kind === "postgres" ? 14_400_000 : 1_800_000);
  }
});
