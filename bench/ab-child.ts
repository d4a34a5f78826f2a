/**
 * One side of `bench/ab.ts`: bench/prof-loop.ts's closed host loop (one host, one worker of
 * concurrency 8, WRIT_AB_IN_FLIGHT invocations in flight, one scope) on the PostgreSQL database
 * WRIT_AB_URL, with the store options of WRIT_AB_STORE_OPTIONS (JSON, default `{}`). After the
 * migration it runs the SQL of the file WRIT_AB_SQL if set (an experiment on the store's
 * functions). Prints `ready` once warm, then `done <n> <t>` every 20 ms: invocations succeeded so
 * far and the moment (ms since the epoch, `performance.timeOrigin + performance.now()`). Runs until
 * killed; the parent pauses and resumes it (SIGSTOP, SIGCONT) so that only one side runs at a time.
 * An invocation that does not succeed ends the process with an error (prof-loop throws).
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startHostLoop } from "./prof-loop.js";

const url = process.env.WRIT_AB_URL;
if (url === undefined) throw new Error("bench/ab-child.ts: WRIT_AB_URL is not set");
const options = JSON.parse(process.env.WRIT_AB_STORE_OPTIONS ?? "{}") as Record<string, unknown>;
const store = postgresStore({ url }, options);
await store.migrate();
const sqlFile = process.env.WRIT_AB_SQL;
if (sqlFile !== undefined && sqlFile !== "") {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(readFileSync(sqlFile, "utf8"));
  } finally {
    await c.end();
  }
}
const loop = await startHostLoop(store, Number(process.env.WRIT_AB_IN_FLIGHT ?? 16));
await new Promise((r) => setTimeout(r, Number(process.env.WRIT_AB_WARM_MS ?? 3000)));
process.stdout.write("ready\n");
setInterval(() => process.stdout.write(`done ${loop.done()} ${performance.timeOrigin + performance.now()}\n`), 20);
