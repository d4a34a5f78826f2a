/** The in-memory Store implementation. */
export { memoryStore, type MemoryStore } from "./memory-store.js";
export type { MemoryStoreOptions } from "./memory-options.js";
export type { MemoryFaultPoint } from "./memory-tx.js";
