/**
 * A running Writ process built from a config: the store, the keys, the policy engine and the host.
 * `writ serve`, `writ worker` and the other CLI commands all start here.
 */
import { dirname, join, resolve } from "node:path";
import type { PolicyEngine } from "../core/policy.js";
import type { Keyring, SigningKey } from "../core/keyring.js";
import type { Store } from "../core/store.js";
import type { WritConfig } from "../config/define-config.js";
import { createHostCore, type Host } from "../host/host.js";
import { sequencerFor } from "../core/sequencer.js";
import { cedarPolicy } from "../policy/cedar-engine.js";
import "../policy/cedar-wasm-node.js";
import { systemClock, systemRandom } from "../node/clock.js";
import { defaultCrypto } from "../node/defaults.js";
import { localDataKey } from "./data-key-file.js";
import { loadKeyring, loadSigningKey } from "./key-files.js";
import { keysDirOf, storeFromConfig } from "./store-from-config.js";
import type { Logger } from "../host/options.js";
import type { ArchiveHostOptions } from "../core/archive-options.js";
import { directoryArchive } from "../node/archive-dir.js";
import { witnessOf } from "../node/witness.js";

export { storeFromConfig };

export interface Runtime {
  config: WritConfig;
  store: Store;
  host: Host;
  policy: PolicyEngine;
  keyring: Keyring;
  signingKey: SigningKey;
  keysDir: string;
  close(): Promise<void>;
}

export interface OpenRuntimeOptions {
  /**
   * Relative paths in the config (store, keys) resolve against it. The CLI passes the config
   * file's directory. @defaultValue process.cwd()
   */
  cwd?: string;
  logger?: Logger;
  /** Create a signing key when none exists. @defaultValue true */
  createKey?: boolean;
  /** Apply migrations. @defaultValue true */
  migrate?: boolean;
}

export function policyFromConfig(config: WritConfig): PolicyEngine {
  const p = config.policy;
  if ("evaluate" in p) return p;
  return cedarPolicy({ policies: p.cedar.policies, ...(p.cedar.schema !== undefined ? { schema: p.cedar.schema } : {}) });
}

/** The host's archive options from the config: a local directory by default, none when turned off. */
function archiveOf(config: WritConfig, cwd: string, keysDir: string): { archive?: ArchiveHostOptions } {
  const { enabled, dir, witnesses, ...rest } = config.archive ?? {};
  if (enabled === false) return {};
  const named = (witnesses ?? []).map((w) => (typeof w === "string" ? witnessOf(w, cwd) : w));
  return { archive: { ...rest, ...(named.length > 0 ? { witnesses: named } : {}), target: directoryArchive(resolve(cwd, dir ?? join(dirname(keysDir), "archives"))) } };
}

export async function openRuntime(config: WritConfig, options: OpenRuntimeOptions = {}): Promise<Runtime> {
  const cwd = options.cwd ?? process.cwd();
  const keysDir = keysDirOf(config, cwd);
  const signingKey = loadSigningKey(keysDir, { create: options.createKey ?? true });
  const keyring = loadKeyring(keysDir);
  const policy = policyFromConfig(config);
  // Sensitive params and outputs are sealed at rest with the local data key (docs/security.md).
  const dataKey = localDataKey(join(keysDir, "data-key.json"));
  const store = await storeFromConfig(config, cwd);
  let host: Host;
  try {
    if (options.migrate ?? true) await store.migrate();
    // On a store with a clock of its own (PostgreSQL: the server's), leases and deadlines follow it.
    await store.clock?.ready?.();
    host = createHostCore({
      store,
      actions: config.actions,
      connectors: config.connectors,
      policy,
      signingKey,
      keyring,
      clock: store.clock ?? systemClock,
      crypto: defaultCrypto(),
      random: systemRandom,
      dataKey,
      ...(config.host ?? {}),
      ...archiveOf(config, cwd, keysDir),
      ...(config.completionSecrets ? { completionSecrets: config.completionSecrets } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    });
  } catch (e) {
    // A failed migration or a host option refused: nothing else holds the store yet.
    await store.close().catch(() => undefined);
    throw e;
  }
  const close = async (): Promise<void> => {
    // Seals this process's commits have started end first (PostgreSQL seals after commit).
    await sequencerFor(store, defaultCrypto()).idle();
    await store.close();
  };
  return { config, store, host, policy, keyring, signingKey, keysDir, close };
}
