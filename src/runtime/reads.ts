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
import { WritError } from "../core/errors.js";
import { describeStore, keysDirOf, sqliteFileOf, storeExists, storeFromConfig, whyNotCreatable } from "./store-from-config.js";

export interface ReadRuntime {
  config: WritConfig;
  /** The store as the config opens it (not behind the data key). */
  store: Store;
  /** The same store behind the data key: sealed params and outputs read opened (invocation reads, `reads`, need none opened and read beneath it). */
  readable: Store;
  reads: InvocationReads;
  close(): Promise<void>;
  /** Where the store would be, when it does not exist yet (`ifMissing: "empty"`); else null. */
  missing: string | null;
}

export interface OpenReadsOptions {
  /** Relative paths in the config resolve against it (the CLI: the config file's directory). @defaultValue process.cwd() */
  cwd?: string;
  /** Apply migrations first, as the runtime does. @defaultValue true */
  migrate?: boolean;
  /**
   * A SQLite store whose file does not exist yet: "create" it (and the data key), or read it as
   * "empty" without creating anything (a command that only reads never creates a state
   * directory; `missing` then says where the store would be). @defaultValue "create"
   */
  ifMissing?: "create" | "empty";
}

/** Opens the config's store for reading. */
export async function openReads(config: WritConfig, options: OpenReadsOptions = {}): Promise<ReadRuntime> {
  const cwd = options.cwd ?? process.cwd();
  if (options.ifMissing === "empty" && !storeExists(config, cwd)) return nothingStored(config, cwd);
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
  return { config, store, readable, reads: invocationReads(readable, actions), close: () => store.close(), missing: null };
}

/**
 * Reads of a store that does not exist yet: an empty memory store stands in; nothing is created on
 * disk. A file that could never be created is the store unreachable, as opening it would say.
 */
async function nothingStored(config: WritConfig, cwd: string): Promise<ReadRuntime> {
  const file = sqliteFileOf(config, cwd);
  const blocked = file === null ? null : whyNotCreatable(file);
  if (blocked !== null) throw new WritError("STORE_ERROR", `cannot open sqlite database ${file}: ${blocked}`);
  const { memoryStore } = await import("../stores/memory/index.js");
  const store = memoryStore();
  await store.migrate();
  const refuse = (): never => {
    throw new WritError("KEY_ERROR", "no data key: the store does not exist yet");
  };
  const readable = readableStore(store, { keyId: "none", seal: refuse, open: refuse }, config.actions);
  const actions = new Map(config.actions.map((a) => [a.id, a]));
  return { config, store, readable, reads: invocationReads(readable, actions), close: () => store.close(), missing: describeStore(config, cwd) };
}
