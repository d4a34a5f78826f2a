/**
 * Writ as a local MCP server over stdio (`writ mcp`): one session, the principal of one API key
 * (docs/mcp.md). stdout carries the protocol only; logs go to the logger (stderr in the CLI).
 */
import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { WritError } from "../core/errors.js";
import type { Runtime } from "../runtime/runtime.js";
import { createMcpServer, type McpGatewayOptions } from "./gateway.js";
import { callerForKey, type McpCaller } from "./principal.js";
import { onePrefix } from "./wire.js";

/** What an unknown, revoked or mistyped key is told (never the key itself). */
export const UNKNOWN_KEY = "the API key is not valid (unknown, revoked or mistyped)";

export interface McpStdioOptions extends McpGatewayOptions {
  /** The API key text (`writ_<id>_<secret>`). */
  key: string;
  /** The space. @defaultValue the key's only space, else the tenant's only space, else `demoSpace` (src/runtime/default-space.ts) */
  space?: string;
  /** The config's demo space, the last default (`configDemoSpace(config)`). */
  demoSpace?: string;
  /** @defaultValue process.stdin */
  stdin?: Readable;
  /** @defaultValue process.stdout */
  stdout?: Writable;
}

export interface RunningMcpStdio {
  caller: McpCaller;
  /** Resolves when the client closes the connection (stdin ends). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the MCP gateway on stdio for the key's principal.
 * @example
 * const rt = await openRuntime(config);
 * const mcp = await serveMcpStdio(rt, { key: process.env.WRIT_MCP_KEY! });
 * await mcp.closed;
 */
export async function serveMcpStdio(runtime: Pick<Runtime, "host" | "store">, options: McpStdioOptions): Promise<RunningMcpStdio> {
  const { crypto } = runtime.host.context.o;
  if (typeof options.key !== "string" || options.key.length === 0) throw new WritError("INVALID_ARGUMENT", "an API key is required (--key or $WRIT_MCP_KEY)");
  const caller = await callerForKey(runtime.store, crypto, options.key, options.space, options.demoSpace);
  if (!caller) throw new WritError("FORBIDDEN", UNKNOWN_KEY, { details: { reason: "KEY_UNKNOWN" } });
  const server = createMcpServer(runtime.host, caller, options);
  const transport = onePrefix(new StdioServerTransport(options.stdin, options.stdout));
  let done!: () => void;
  const closed = new Promise<void>((r) => (done = r));
  server.onclose = () => done();
  (options.stdin ?? process.stdin).once("end", () => void server.close());
  await server.connect(transport);
  return { caller, closed, close: () => server.close() };
}
