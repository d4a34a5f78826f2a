// Measures the boundary's per-execution cost without signature verification (verify stubbed out).
import { boundaryRig } from "../bench/boundary.js";
import { memoryStore } from "../src/index.js";
import { defaultCrypto } from "../src/node/defaults.js";
const c = defaultCrypto();
if (process.argv[2] === "stub") c.verifyEd25519 = () => true;
const rig = await boundaryRig(memoryStore());
await rig.run(3000, 8);
const rates = [];
for (let i = 0; i < 5; i++) rates.push(await rig.run(10000, Number(process.argv[3] ?? 8)));
rates.sort((a, b) => a - b);
console.log(process.argv[2] ?? "real", "median/s", Math.round(rates[2]!), "us/exec", (1e6 / rates[2]!).toFixed(1));
