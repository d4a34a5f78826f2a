/**
 * The read-only part of a runtime: the config's store behind its data key, answering invocation
 * reads as the host does (src/host/reads.ts), without the host, the policy engine or the signing
 * key. `writ ls` and `writ get` run on it and start faster (docs/cli.md, Start-up).
 */
import { join } from "node:path";
import type { Store } from "../core/store.js";
import type { WritConfig } from "../config/define-config.js";
import { invocationReads, readableStore, type InvocationReads } from "../host/reads.js";
import { localDataKey } from "./data-key-file.js";
import { keysDirOf, storeFromConfig } from "./store-from-config.js";

export interface ReadRuntime {
  config: WritConfig;
  /** The store as the config opens it (not behind the data key). */
  store: Store;
  /** The same store behind the data key: sealed params and outputs read opened, as the host reads them. */
  readable: Store;
  reads: InvocationReads;
  close(): Promise<void>;
}

/** Opens the config's store for reading; `migrate` (default true) applies migrations first, as the runtime does. */
export async function openReads(config: WritConfig, options: { cwd?: string; migrate?: boolean } = {}): Promise<ReadRuntime> {
  const cwd = options.cwd ?? process.cwd();
  // Before the store opens: a data key file that is unreadable or open to others is refused here.
  const dataKey = localDataKey(join(keysDirOf(config, cwd), "data-key.json"));
  const store = await storeFromConfig(config, cwd);
  try {
    if (options.migrate ?? true) await store.migrate();
  } catch (e) {
    // Nothing else holds the store yet: close it before the error reaches the caller.
    await store.close().catch(() => undefined);
    throw e;
  }
  const readable = readableStore(store, dataKey, config.actions);
  const actions = new Map(config.actions.map((a) => [a.id, a]));
  return { config, store, readable, reads: invocationReads(readable, actions), close: () => store.close() };
}
