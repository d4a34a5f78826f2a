/** The built-in SQL connector (PostgreSQL, SQLite). */
export { sqlConnector, type SqlConnector } from "./sql-connector.js";
export {
  SQL_DEFAULTS,
  type SqlConnectorOptions,
  type SqlOperation,
  type SqlParams,
  type SqlResult,
  type SqlRow,
  type SqlTarget,
  type SqliteDatabaseLike,
  type SqliteStatementLike,
} from "./sql-options.js";
