/** `writ/sqlite`: the SQLite store, embedded default, one file under `.writ/` (docs/stores.md). */
export { sqliteStore, type SqliteStore } from "./sqlite-store.js";
export { SYNCHRONOUS_MODES, SQLITE_DEFAULTS, type SqliteStoreOptions, type SynchronousMode, type GroupCommitOptions } from "./sqlite-options.js";
export type { GroupCommitStats } from "./sqlite-group-commit.js";
export { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION, type SqliteMigration } from "./sqlite-migrations.js";
export type { SqliteDriver, SqliteDriverDatabase, SqliteDriverStatement } from "./sqlite-driver.js";
