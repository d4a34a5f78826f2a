/**
 * SQL fragments and the prepare signature the sqlite-<domain>.ts statement files share. Scope
 * columns are in every key and every WHERE, except in the cross-scope worker operations the port defines
 * (claim, heartbeat, next run time, the sweeps, the sequencer's unsealed scopes).
 */
import type Database from "better-sqlite3";

/** Prepares one statement on the store's connection. */
export type Prepare = (sql: string) => Database.Statement;

/** The scope condition: named parameters `@t` (tenant) and `@s` (space). */
export const SCOPE = "tenant_id = @t AND space_id = @s";

/** The row is `running` under the lease named by `@owner` and `@token`. */
export const HOLDS_LEASE = "status = 'running' AND lease_owner = @owner AND lease_token = @token";
