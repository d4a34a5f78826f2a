/**
 * What goes on the wire from Writ's MCP server. The SDK's `McpError` puts `MCP error <code>: ` in
 * its message, and the client adds the same prefix again when it turns the JSON-RPC error back into
 * an `McpError`, so an agent read `MCP error -32602: MCP error -32602: unknown tool ...`. Error
 * messages leave without that prefix (the code travels in `error.code`), whoever threw them: the
 * gateway, the task store or the SDK's own handlers (docs/mcp.md, "What the agent sees").
 */
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

const PREFIX = /MCP error -?\d+: /g;

/** An error message without the SDK's `MCP error <code>: ` prefixes (the client adds one). */
export function wireMessage(message: string): string {
  return message.replace(PREFIX, "");
}

/** Makes `transport` send error answers whose message says its thing once. Returns the transport. */
export function onePrefix<T extends Transport>(transport: T): T {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    const error = (message as { error?: { message?: unknown } }).error;
    if (error && typeof error.message === "string") {
      return send({ ...message, error: { ...error, message: wireMessage(error.message) } } as typeof message, options);
    }
    return send(message, options);
  };
  return transport;
}
