/** Default ports for Node. */
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import { systemClock, systemRandom } from "./clock.js";
import { nodeCryptoPort } from "./crypto.js";

let sharedCrypto: CryptoPort | undefined;

/** The process-wide Node CryptoPort (shares its imported-key cache). */
export function defaultCrypto(): CryptoPort {
  return (sharedCrypto ??= nodeCryptoPort());
}

export function defaultPorts(o: { clock?: Clock; crypto?: CryptoPort; random?: Random } = {}): { clock: Clock; crypto: CryptoPort; random: Random } {
  return { clock: o.clock ?? systemClock, crypto: o.crypto ?? defaultCrypto(), random: o.random ?? systemRandom };
}
