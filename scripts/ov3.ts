// Where a boundary execution's time goes (memory store, verify stubbed): time inside each transaction vs outside.
import { boundaryRig } from "../bench/boundary.js";
import { memoryStore } from "../src/index.js";
import type { Store } from "../src/core/store.js";
import { defaultCrypto } from "../src/node/defaults.js";
const c = defaultCrypto();
c.verifyEd25519 = () => true;
const inner = memoryStore();
let txTime = 0;
let txCount = 0;
const store: Store = {
  kind: "memory",
  migrate: () => inner.migrate(),
  close: () => inner.close(),
  async transact(fn) {
    const t0 = performance.now();
    try {
      return await inner.transact(fn);
    } finally {
      txTime += performance.now() - t0;
      txCount++;
    }
  },
};
const rig = await boundaryRig(store);
await rig.run(3000, 1);
for (let i = 0; i < 3; i++) {
  txTime = 0;
  txCount = 0;
  const n = 5000;
  const rate = await rig.run(n, 1);
  const total = (1e6 / rate);
  console.log(`per exec ${total.toFixed(1)} us; in transactions ${(txTime * 1000 / n).toFixed(1)} us (${(txCount / n).toFixed(1)} tx/exec); outside ${(total - txTime * 1000 / n).toFixed(1)} us`);
}
