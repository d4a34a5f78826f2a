/**
 * Built-in connectors (docs/connectors.md): REST calls over HTTP and statements on a SQL
 * database. Both carry the step idempotency key to the outside system, so a repeated step applies
 * its effect once. See docs/connectors.md.
 *
 * @example
 * const payments = httpConnector({ id: "payments", baseUrl: "https://api.example.com", operations: {
 *   refund: { method: "POST", path: "/refunds", externalRef: { field: "id" } } } });
 * const ledger = sqlConnector({ id: "ledger", target: { kind: "sqlite", path: "ledger.db" }, operations: {
 *   credit: { sql: "INSERT INTO credits (amount) VALUES (?)", params: (input) => [(input as { amount: number }).amount] } } });
 */
export * from "./http/index.js";
export * from "./sql/index.js";
