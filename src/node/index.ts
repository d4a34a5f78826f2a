/**
 * `writ/node`: the ports on Node (docs/architecture.md, Entries): the system clock, randomness from
 * node:crypto, the node:crypto CryptoPort, and `defaultPorts`, which fills in whichever are missing.
 */
export { systemClock, systemRandom } from "./clock.js";
export { nodeCryptoPort, type NodeCryptoOptions, type VerifyPlacement } from "./crypto.js";
export { defaultCrypto, defaultPorts } from "./defaults.js";
/** A DataKeyPort over a local key file (created 0600 on first use): sealing of `sensitive` values at rest (docs/security.md). */
export { localDataKey } from "../runtime/data-key-file.js";
