import { boundaryRig } from "../bench/boundary.js";
import { memoryStore } from "../src/index.js";
const rig = await boundaryRig(memoryStore());
await rig.run(3000, 8);
console.log(await rig.run(20000, 8));
