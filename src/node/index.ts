/**
 * `writ/node`: the ports on Node (docs/architecture.md, Entries): the system clock, randomness from
 * node:crypto, the node:crypto CryptoPort, and `defaultPorts`, which fills in whichever are missing.
 */
export { systemClock, systemRandom } from "./clock.js";
export { nodeCryptoPort } from "./crypto.js";
export { defaultCrypto, defaultPorts } from "./defaults.js";
