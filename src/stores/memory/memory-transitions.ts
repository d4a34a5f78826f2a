/**
 * The memory store's transitions: it has no native ones, and says so here so that every store
 * folder holds the same domain files (docs/stores.md, "Layout"). `transitionsOf(store)` falls back
 * to `genericTransitions` (src/core/transitions.ts), each transition one `transact` over the
 * `StoreTx` operations of the other memory-*.ts files. Memory transactions already run one at a
 * time under one mutex, in process, so a composed transition is one atomic step and a native one
 * would save nothing.
 */
export {};
