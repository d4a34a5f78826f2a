/** `writ/postgres`: the PostgreSQL store, production, many workers on many machines sharing one database. */
export { postgresStore, type PostgresStore } from "./postgres-store.js";
export { POSTGRES_DEFAULTS, type PostgresConnection, type PostgresStoreOptions } from "./postgres-options.js";
export type { PgClientConfig, PgConnection, PgDriver, PgNotification, PgPool, PgPoolConfig, PgPooledConnection, PgQuery, PgResult, PgStandaloneConnection, OwnedPgPool } from "./postgres-driver.js";
export { POSTGRES_MIGRATIONS, POSTGRES_SCHEMA_VERSION, WAKE_CHANNEL, type PostgresMigration } from "./postgres-migrations.js";
export { MIGRATION_LOCK_KEY } from "./postgres-migrate.js";
