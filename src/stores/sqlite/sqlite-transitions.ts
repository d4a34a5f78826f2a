/**
 * The SQLite store's transitions: it has no native ones, and says so here so that every store
 * folder holds the same domain files (docs/stores.md, "Layout"). `transitionsOf(store)` falls back
 * to `genericTransitions` (src/core/transitions.ts), each transition one `transact` over the
 * `StoreTx` operations whose statements the other sqlite-*.ts files hold. A transaction runs
 * synchronously on one connection inside the group commit, so a composed transition is one
 * transaction that costs no round trips; a native one would save nothing.
 */
export {};
