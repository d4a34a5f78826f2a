/** Options of `memoryStore`, their defaults and their validation. */
import { WritError } from "../../core/errors.js";
import type { MemoryFaultPoint } from "./memory-tx.js";

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Fault injection for tests. Called before every transaction operation (with the `StoreTx`
   * method's name) and before each commit (`"commit"`). Whatever it throws fails that operation
   * as a store fault would; a throw at `"commit"` rolls the whole transaction back and rejects
   * `transact` with that error, after `fn` has already resolved.
   * @example
   * memoryStore({ faults: (point) => { if (point === "commit" && crash) throw new Error("disk gone"); } })
   * @defaultValue undefined (no faults)
   */
  faults?: (point: MemoryFaultPoint) => void;
}

const KNOWN: ReadonlySet<string> = new Set(["faults"]);

/** Validated options with defaults applied. */
export interface ResolvedMemoryStoreOptions {
  faults: ((point: MemoryFaultPoint) => void) | undefined;
}

/** Throws `INVALID_OPTION` naming the first bad option. */
export function resolveOptions(options: MemoryStoreOptions | undefined): ResolvedMemoryStoreOptions {
  if (options === undefined) return { faults: undefined };
  if (typeof options !== "object" || options === null) throw new WritError("INVALID_OPTION", "memoryStore: options must be an object");
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new WritError("INVALID_OPTION", `memoryStore: unknown option "${key}"`);
  }
  if (options.faults !== undefined && typeof options.faults !== "function") {
    throw new WritError("INVALID_OPTION", 'memoryStore: option "faults" must be a function');
  }
  return { faults: options.faults };
}
