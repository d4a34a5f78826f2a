/**
 * WAL per invocation of the host loop on PostgreSQL, by record type and by relation:
 * `node --import tsx bench/prof-wal.ts` (WRIT_PROF_SECS, default 10). A private instance
 * (PostgreSQL's defaults) with pg_walinspect; one host, one worker (concurrency 8), 16 in flight,
 * bench/host.ts's one-step no-op action (bench/prof-loop.ts). After 3 s of warm-up a CHECKPOINT,
 * then the WAL between two LSNs is read back: per record type its records, bytes and full-page
 * image bytes per invocation, then the same per relation (the first block a record names). Counts,
 * not rates: the machine's load barely moves them. docs/performance.md reads them.
 */
import pg from "pg";
import { postgresStore } from "../src/stores/postgres/index.js";
import { startPgInstance } from "../tests/helpers/pg-instance.js";
import { startHostLoop } from "./prof-loop.js";
const secs = Number(process.env.WRIT_PROF_SECS ?? 10);
const inst = await startPgInstance({});
await inst.createDatabase("w");
const url = inst.url("w");
const store = postgresStore({ url });
await store.migrate();
const c = new pg.Client({ connectionString: url });
await c.connect();
await c.query("CREATE EXTENSION IF NOT EXISTS pg_walinspect");
const loop = await startHostLoop(store);
await new Promise((r) => setTimeout(r, 3000));
await c.query("CHECKPOINT");
const lsn = async (): Promise<string> => (await c.query<{ l: string }>("SELECT pg_current_wal_lsn() AS l")).rows[0]!.l;
const l0 = await lsn();
const d0 = loop.done();
await new Promise((r) => setTimeout(r, secs * 1000));
const d1 = loop.done();
const l1 = await lsn();
await loop.stop();
const n = d1 - d0;
console.log(`${n} invocations in ${secs} s`);
type Row = { k: string; count: number; record_size: number; fpi_size: number };
const st = await c.query<Row>("SELECT \"resource_manager/record_type\" AS k, count, record_size, fpi_size, combined_size FROM pg_get_wal_stats($1, $2, true) WHERE count > 0 ORDER BY combined_size DESC LIMIT 25", [l0, l1]);
for (const r of st.rows) console.log(String(r.k).padEnd(28), (r.count / n).toFixed(2).padStart(7), "rec/inv", (r.record_size / n).toFixed(0).padStart(6), "B rec", (r.fpi_size / n).toFixed(0).padStart(6), "B fpi");
const tot = await c.query<{ r: number; f: number }>("SELECT sum(record_size) r, sum(fpi_size) f FROM pg_get_wal_stats($1, $2, false)", [l0, l1]);
console.log("total per inv: records", (tot.rows[0]!.r / n).toFixed(0), "fpi", (tot.rows[0]!.f / n).toFixed(0));
// per relation: block refs
const rel = await c.query<{ relname: string | null; n: number; fpi: number; len: number }>(`SELECT c.relname, count(*) n, sum(fpi_length) fpi, sum(record_length) len FROM pg_get_wal_records_info($1, $2) w
  CROSS JOIN LATERAL (SELECT (regexp_match(w.block_ref, 'rel \\d+/\\d+/(\\d+)'))[1]::oid AS fn) b
  LEFT JOIN pg_class c ON c.relfilenode = b.fn GROUP BY 1 ORDER BY 4 DESC LIMIT 25`, [l0, l1]);
for (const r of rel.rows) console.log((r.relname ?? "(no relation)").padEnd(50), (r.n / n).toFixed(2).padStart(6), "rec/inv", (r.len / n).toFixed(0).padStart(6), "B", (r.fpi / n).toFixed(0).padStart(6), "B fpi");
await c.end();
await store.close();
await inst.close();
