/**
 * The MCP gateway's options and their defaults in one place, free of the MCP SDK so a config can be
 * checked (and `writ doctor` can print them) without loading it (docs/mcp.md).
 */
import { WritError } from "../core/errors.js";
// Types only from the host: its options module loads the boundary, which a config check must not.
import type { Logger } from "../host/options.js";

export interface McpGatewayOptions {
  /**
   * How long a tool call (not a task) waits at most before answering with the pending state. It
   * answers earlier once waiting cannot help (final, awaiting approval, parked, reconciliation required).
   * @defaultValue 20000
   */
  callWaitMs?: number;
  /** How often a waiting call re-reads its invocation (the host's events for it wake it sooner). @defaultValue 200 */
  pollMs?: number;
  /** Largest tool arguments accepted, in bytes of JSON. @defaultValue 65536 */
  maxArgumentsBytes?: number;
  /** Poll interval suggested to task clients. @defaultValue 1000 */
  taskPollIntervalMs?: number;
  /** @defaultValue silent */
  logger?: Logger;
}

export interface ResolvedGatewayOptions {
  callWaitMs: number;
  pollMs: number;
  maxArgumentsBytes: number;
  taskPollIntervalMs: number;
  logger: Logger;
}

function int(name: string, v: unknown, dflt: number, min: number, max: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw new WritError("INVALID_OPTION", `MCP gateway: ${name} must be an integer from ${min} to ${max}`);
  return v;
}

/** The gateway's limits with their defaults (its logger is filled in by the gateway: `resolveGatewayOptions`). */
export function resolveGatewayLimits(o: McpGatewayOptions = {}): Omit<ResolvedGatewayOptions, "logger"> {
  if (typeof o !== "object" || o === null) throw new WritError("INVALID_OPTION", "MCP gateway: options must be an object");
  return {
    callWaitMs: int("callWaitMs", o.callWaitMs, 20_000, 0, 600_000),
    pollMs: int("pollMs", o.pollMs, 200, 10, 60_000),
    maxArgumentsBytes: int("maxArgumentsBytes", o.maxArgumentsBytes, 65_536, 2, 16 * 1024 * 1024),
    taskPollIntervalMs: int("taskPollIntervalMs", o.taskPollIntervalMs, 1000, 10, 600_000),
  };
}


export interface McpHttpOptions extends McpGatewayOptions {
  /**
   * Browser origins allowed to call `/mcp` (exact `scheme://host[:port]`). Requests without an
   * Origin header (non-browser clients) are allowed; any other Origin is refused with 403.
   * @defaultValue loopback origins only (http://localhost, http://127.0.0.1, http://[::1], any port)
   */
  allowedOrigins?: string[];
  /** Open sessions at most; opening one more closes the least recently used. @defaultValue 100 */
  maxSessions?: number;
  /** Open sessions per API key at most; opening one more closes that key's least recently used. @defaultValue 10 */
  maxSessionsPerKey?: number;
  /** A session unused this long is closed. @defaultValue 900000 (15 min) */
  sessionIdleMs?: number;
  /** Largest POST body. @defaultValue 1048576 (1 MiB) */
  bodyLimitBytes?: number;
  /**
   * The space of a request that names none, when neither the key nor the tenant has only one: the
   * config's demo space (`writ serve` passes it; src/runtime/default-space.ts). @defaultValue none
   */
  demoSpace?: string;
}

/** The `/mcp` endpoint's options with their defaults filled in (the logger aside). */
export interface ResolvedMcpHttpOptions extends Omit<ResolvedGatewayOptions, "logger"> {
  /** Browser origins allowed beside the loopback ones. */
  allowedOrigins: string[];
  maxSessions: number;
  maxSessionsPerKey: number;
  sessionIdleMs: number;
  bodyLimitBytes: number;
}

/** Checks the `/mcp` options (an error names the bad one) and fills in the defaults. */
export function resolveMcpHttpOptions(options: McpHttpOptions = {}): ResolvedMcpHttpOptions {
  const gw = resolveGatewayLimits(options);
  if (options.allowedOrigins !== undefined && (!Array.isArray(options.allowedOrigins) || !options.allowedOrigins.every((x) => typeof x === "string"))) {
    throw new WritError("INVALID_OPTION", "MCP HTTP: allowedOrigins must be a list of origins");
  }
  return {
    ...gw,
    allowedOrigins: [...(options.allowedOrigins ?? [])],
    maxSessions: posInt("maxSessions", options.maxSessions, 100, 100_000),
    maxSessionsPerKey: posInt("maxSessionsPerKey", options.maxSessionsPerKey, 10, 100_000),
    sessionIdleMs: posInt("sessionIdleMs", options.sessionIdleMs, 900_000, 86_400_000),
    bodyLimitBytes: posInt("bodyLimitBytes", options.bodyLimitBytes, 1024 * 1024, 1024 ** 3),
  };
}

function posInt(name: string, v: unknown, dflt: number, max: number): number {
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > max) throw new WritError("INVALID_OPTION", `MCP HTTP: ${name} must be an integer from 1 to ${max}`);
  return v;
}
