/** The SQLite store: embedded default, one file under `.writ/`. */
export { sqliteStore, type SqliteStore } from "./sqlite-store.js";
export { SYNCHRONOUS_MODES, SQLITE_DEFAULTS, type SqliteStoreOptions, type SynchronousMode, type GroupCommitOptions } from "./sqlite-options.js";
export type { GroupCommitStats } from "./sqlite-group-commit.js";
export { SQLITE_MIGRATIONS, SQLITE_SCHEMA_VERSION, type SqliteMigration } from "./sqlite-migrations.js";
