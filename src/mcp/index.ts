/** The MCP gateway (docs/mcp.md): Writ as an MCP server, and the `mcp` connector to upstream MCP servers. */
export { createMcpServer, resolveGatewayOptions, storedIdempotencyKey, toolNameOf, toolTitleOf, STATUS_TOOL, IDEMPOTENCY_META, type McpGatewayOptions } from "./gateway.js";
export { createMcpHttp, type McpHttp, type McpHttpOptions } from "./http.js";
export { serveMcpStdio, type McpStdioOptions, type RunningMcpStdio } from "./stdio.js";
export { callerForKey, callerOf, principalOf, type McpCaller } from "./principal.js";
export { mcpConnector, type McpConnector, type McpConnectorOptions, type McpUpstream } from "./connector.js";
export { importMcpTools, jsonSchemaParams, type ImportMcpToolsOptions } from "./import.js";
export { inputSchemaOf, RESULT_SCHEMA } from "./schema.js";
export type { WritToolResult } from "./results.js";
