/**
 * The `mcp` connector: Writ calls a tool on an upstream MCP server (stdio or streamable HTTP), so an
 * agent reaches that tool only through policy, approval, the journal and reconciliation
 * (docs/mcp.md, "Governing other MCP servers"). An upstream error result is a definite failure; a
 * connection that drops after the call was sent is an ambiguous outcome (reconciliation).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Connector, ConnectorContext, ConnectorOperation, ConnectorReply } from "../core/action.js";
import { defineConnector } from "../core/action.js";
import { WritError, errorMessage } from "../core/errors.js";
import type { Json } from "../core/types.js";
import { IDEMPOTENCY_META } from "./gateway.js";

/** Where the upstream MCP server is: a command Writ starts (stdio) or a streamable HTTP URL. */
export type McpUpstream =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { url: string; /** e.g. an Authorization header for the upstream */ headers?: Record<string, string> };

export interface McpConnectorOptions {
  /** The connector's registered id (steps name it). */
  id: string;
  upstream: McpUpstream;
  /** Upstream tools offered as operations (the operation name is the tool name). `importMcpTools` adds the ones it imports. @defaultValue none besides `call` */
  tools?: string[];
  /** How long connecting (and initializing) may take. @defaultValue 10000 */
  connectTimeoutMs?: number;
}

/** A connector to an upstream MCP server, with the upstream's tool list and a close. */
export interface McpConnector extends Connector {
  /** The upstream's tools (tools/list, every page). */
  listTools(): Promise<Tool[]>;
  /** Adds an upstream tool as an operation. */
  addTool(name: string): void;
  /** Closes the upstream connection (a stdio upstream process is stopped). */
  close(): Promise<void>;
}

function textOf(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((c) => {
      const t = typeof c === "object" && c !== null && (c as { type?: unknown }).type === "text" ? (c as { text?: unknown }).text : undefined;
      return typeof t === "string" ? t : "";
    })
    .filter((t) => t.length > 0)
    .join(" ")
    .slice(0, 2000);
}

/** JSON-RPC errors by which a server refuses a request before running anything. */
const REFUSED = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.InvalidRequest]);

/** Errors that prove the request never reached the upstream (nothing can have happened). */
function neverSent(e: unknown): boolean {
  const codes = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH"]);
  for (let x: unknown = e, i = 0; x && i < 5; i++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === "string" && codes.has(code)) return true;
    x = (x as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Creates an `mcp` connector. Each operation calls the upstream tool of the same name with the
 * step input as its arguments and the step idempotency key in `_meta["writ/idempotencyKey"]`; the
 * operation `call` takes `{ tool, arguments }`.
 * @example
 * const files = mcpConnector({ id: "files", upstream: { command: "npx", args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv"] } });
 * const actions = await importMcpTools(files, { prefix: "files." });
 */
export function mcpConnector(options: McpConnectorOptions): McpConnector {
  if (typeof options !== "object" || options === null) throw new WritError("INVALID_OPTION", "mcpConnector needs { id, upstream }");
  const up = options.upstream as Record<string, unknown> | undefined;
  const isStdio = typeof up?.command === "string" && up.command.length > 0;
  const isHttp = typeof up?.url === "string";
  if (!isStdio && !isHttp) throw new WritError("INVALID_OPTION", `mcpConnector ${String(options.id)}: upstream must be { command, args? } or { url, headers? }`);
  if (isHttp) {
    try {
      const u = new URL(up.url as string);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http");
    } catch {
      throw new WritError("INVALID_OPTION", `mcpConnector ${String(options.id)}: upstream.url must be an http(s) URL`);
    }
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  if (!Number.isInteger(connectTimeoutMs) || connectTimeoutMs < 1 || connectTimeoutMs > 600_000) throw new WritError("INVALID_OPTION", `mcpConnector ${String(options.id)}: connectTimeoutMs must be an integer from 1 to 600000`);

  let current: Promise<Client> | null = null;

  function connect(): Promise<Client> {
    if (current) return current;
    const client = new Client({ name: `writ-connector-${options.id}`, version: "0.1.0" });
    const transport = isStdio
      ? new StdioClientTransport({ command: up.command as string, args: (up.args as string[] | undefined) ?? [], ...(up.env ? { env: up.env as Record<string, string> } : {}), ...(up.cwd ? { cwd: up.cwd as string } : {}), stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(up!.url as string), up!.headers ? { requestInit: { headers: up!.headers as Record<string, string> } } : {});
    const p = client.connect(transport, { timeout: connectTimeoutMs }).then(() => client);
    client.onclose = () => {
      if (current === p) current = null;
    };
    current = p;
    p.catch(() => {
      if (current === p) current = null;
    });
    return p;
  }

  async function callTool(tool: string, args: unknown, ctx: ConnectorContext): Promise<ConnectorReply> {
    let client: Client;
    try {
      client = await connect();
    } catch (e) {
      // Not connected: the call was never sent.
      return { outcome: "transient_failure", reason: `cannot reach the upstream MCP server: ${errorMessage(e).slice(0, 300)}` };
    }
    const timeout = Math.max(1, ctx.deadline - Date.now());
    try {
      const res = await client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: { [IDEMPOTENCY_META]: ctx.idempotencyKey } }, undefined, { signal: ctx.signal, timeout });
      if (res.isError === true) return { outcome: "permanent_failure", reason: `the upstream tool ${tool} returned an error: ${textOf(res.content) || "no detail"}` };
      const output = (res.structuredContent ?? { content: res.content ?? [] }) as Json;
      return { outcome: "success", externalRef: `mcp:${options.id}:${tool}:${ctx.idempotencyKey}`, output };
    } catch (e) {
      if (e instanceof McpError) {
        const code: number = e.code;
        if (code === (ErrorCode.RequestTimeout as number)) return { outcome: "timeout" };
        // The upstream refused the request itself (unknown tool, invalid arguments): it did not run.
        if (REFUSED.has(code)) {
          return { outcome: "permanent_failure", reason: `the upstream refused ${tool}: ${e.message.slice(0, 500)}` };
        }
      }
      if (neverSent(e)) return { outcome: "transient_failure", reason: `cannot reach the upstream MCP server: ${errorMessage(e).slice(0, 300)}` };
      // Sent, and then the connection dropped (or another fault): nobody knows whether it ran.
      return { outcome: "ambiguous", reason: `the upstream connection failed after ${tool} was sent: ${errorMessage(e).slice(0, 300)}` };
    }
  }

  const operations: { [op: string]: ConnectorOperation } = {
    call: (ctx) => {
      const input = ctx.input as { tool?: unknown; arguments?: unknown } | null;
      if (typeof input !== "object" || input === null || typeof input.tool !== "string" || input.tool.length === 0) {
        return { outcome: "permanent_failure", reason: "the call operation needs { tool, arguments }" };
      }
      return callTool(input.tool, input.arguments ?? {}, ctx);
    },
  };
  const addTool = (name: string): void => {
    if (typeof name !== "string" || name.length === 0 || name.length > 128) throw new WritError("INVALID_OPTION", `mcpConnector ${options.id}: tool names are 1-128 characters`);
    if (name === "call") throw new WritError("INVALID_OPTION", `mcpConnector ${options.id}: an upstream tool named "call" clashes with the call operation`);
    operations[name] = (ctx) => callTool(name, ctx.input, ctx);
  };
  for (const t of options.tools ?? []) addTool(t);
  const base = defineConnector({ id: options.id, operations });
  return {
    ...base,
    operations,
    addTool,
    async listTools() {
      const client = await connect();
      const out: Tool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const r = await client.listTools(cursor ? { cursor } : {});
        out.push(...r.tools);
        cursor = r.nextCursor;
        if (!cursor) break;
      }
      return out;
    },
    async close() {
      const p = current;
      current = null;
      if (p) await p.then((c) => c.close()).catch(() => {});
    },
  };
}
