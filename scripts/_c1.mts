import { readFileSync } from "node:fs";
import { boundaryRig } from "../bench/boundary.js";
import { memoryStore, nodeCryptoPort } from "../src/index.js";
const main = () => { const f = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8"); const r = f.slice(f.lastIndexOf(")") + 2).split(" "); return (Number(r[11]) + Number(r[12])) * 10000; };
const conc = Number(process.argv[2] ?? 1);
const rigs = [] as any[];
for (const port of [nodeCryptoPort(), { ...nodeCryptoPort(), verifyEd25519Async: undefined }]) { const r = await boundaryRig(memoryStore(), 1, { crypto: port }); await r.run(2000, conc); rigs.push([port.verifyEd25519Async ? "async" : "sync", r]); }
const res: Record<string, number[][]> = { async: [], sync: [] };
for (let k = 0; k < 4; k++) for (const [name, r] of rigs) { const m0 = main(); const c0 = process.cpuUsage(); const t0 = performance.now(); await r.run(4000, conc); const c = process.cpuUsage(c0); res[name].push([(main() - m0) / 4000, (c.user + c.system) / 4000, (performance.now() - t0) * 1000 / 4000]); }
for (const k of ["async", "sync"]) { const m = (i: number) => res[k].map((x) => x[i]).sort((a, b) => a - b)[2].toFixed(0); console.log(`conc ${conc} ${k}: main ${m(0)} all ${m(1)} wall ${m(2)}`); }
