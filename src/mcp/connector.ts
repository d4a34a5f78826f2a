/**
 * The `mcp` connector: Writ calls a tool on an upstream MCP server (stdio or streamable HTTP), so an
 * agent reaches that tool only through policy, approval, the journal and reconciliation
 * (docs/mcp.md, "Governing other MCP servers"). An upstream error result is a definite failure; a
 * connection that drops after the call was sent is an ambiguous outcome (reconciliation). An HTTP
 * upstream that refuses the request itself (a 4xx status) ran nothing; one that no longer knows
 * the client's session (it restarted) is asked again on a new session (docs/mcp.md, "Governing
 * other MCP servers").
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
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

/**
 * What an HTTP status by which a streamable HTTP upstream (or a proxy before it) refused a request
 * says, as the `http` connector reads one (docs/connectors.md): a 4xx means nothing ran; 404 (a
 * restart), 408 and 429 may pass, so a transient failure, any other 4xx refuses the request as it
 * is, a definite failure. Any other status (5xx among them) leaves the outcome unknown: a proxy's 502
 * may follow a call the upstream ran, and an upstream that is not Writ does not dedupe on the key.
 */
function refusedOutcome(status: number): "transient_failure" | "permanent_failure" | undefined {
  if (status === 404 || status === 408 || status === 429) return "transient_failure";
  if (status >= 400 && status <= 499) return "permanent_failure";
  return undefined;
}

/** The HTTP status of a streamable HTTP transport's refusal, if that is what `e` is. */
function httpStatus(e: unknown): number | undefined {
  return e instanceof StreamableHTTPError && typeof e.code === "number" ? e.code : undefined;
}

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

  /**
   * One connection to the upstream: its client, the HTTP transport (for its session id), and the
   * calls on it. A connection found stale (its session gone) is left for new calls and closed when
   * its last call ends, so that calls still on it are not cut short.
   */
  interface Connection {
    client: Promise<Client>;
    http: StreamableHTTPClientTransport | null;
    calls: number;
    stale: boolean;
  }
  let current: Connection | null = null;

  function connect(): Connection {
    if (current) return current;
    const client = new Client({ name: `writ-connector-${options.id}`, version: "0.1.0" });
    const transport = isStdio
      ? new StdioClientTransport({ command: up.command as string, args: (up.args as string[] | undefined) ?? [], ...(up.env ? { env: up.env as Record<string, string> } : {}), ...(up.cwd ? { cwd: up.cwd as string } : {}), stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(up!.url as string), up!.headers ? { requestInit: { headers: up!.headers as Record<string, string> } } : {});
    const http = transport instanceof StreamableHTTPClientTransport ? transport : null;
    const c: Connection = { client: client.connect(transport, { timeout: connectTimeoutMs }).then(() => client), http, calls: 0, stale: false };
    client.onclose = () => {
      if (current === c) current = null;
    };
    current = c;
    c.client.catch(() => {
      if (current === c) current = null;
    });
    return c;
  }

  /** Leaves `c` to the calls already on it: new calls start a new connection; `c` closes once idle. */
  function retire(c: Connection): void {
    if (current === c) current = null;
    c.stale = true;
    if (c.calls === 0) void c.client.then((cl) => cl.close()).catch(() => undefined);
  }

  /** One call of `tool` on `c`; rejects as the client does. */
  async function send(c: Connection, tool: string, args: unknown, ctx: ConnectorContext) {
    const client = await c.client;
    const timeout = Math.max(1, ctx.deadline - Date.now());
    c.calls++;
    try {
      return await client.callTool({ name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: { [IDEMPOTENCY_META]: ctx.idempotencyKey } }, undefined, { signal: ctx.signal, timeout });
    } finally {
      c.calls--;
      if (c.stale && c.calls === 0) void client.close().catch(() => undefined);
    }
  }

  async function callTool(tool: string, args: unknown, ctx: ConnectorContext): Promise<ConnectorReply> {
    let c = connect();
    try {
      await c.client;
    } catch (e) {
      // Not connected: the call was never sent.
      return { outcome: "transient_failure", reason: `cannot reach the upstream MCP server: ${errorMessage(e).slice(0, 300)}` };
    }
    try {
      let res;
      try {
        res = await send(c, tool, args, ctx);
      } catch (e) {
        // An HTTP upstream that answers 404 (or, as some do, 400) to a request naming the client's
        // session no longer holds that session (it restarted, or ended it): it ran nothing. The
        // protocol has the client start a new session; the call goes once more, on it.
        const status = httpStatus(e);
        if ((status === 404 || status === 400) && c.http?.sessionId !== undefined) {
          retire(c);
          c = connect();
          try {
            await c.client;
          } catch (again) {
            return { outcome: "transient_failure", reason: `the upstream MCP server ended its session and cannot be reached again: ${errorMessage(again).slice(0, 300)}` };
          }
          res = await send(c, tool, args, ctx);
        } else throw e;
      }
      if (res.isError === true) return { outcome: "permanent_failure", reason: `the upstream tool ${tool} returned an error: ${textOf(res.content) || "no detail"}` };
      const output = (res.structuredContent ?? { content: res.content ?? [] }) as Json;
      return { outcome: "success", externalRef: `mcp:${options.id}:${tool}:${ctx.idempotencyKey}`, output };
    } catch (e) {
      const status = httpStatus(e);
      const refused = status === undefined ? undefined : refusedOutcome(status);
      // The upstream (or a proxy before it) refused the HTTP request itself: nothing ran.
      if (refused !== undefined) return { outcome: refused, reason: `the upstream refused ${tool} before running it (HTTP ${status}): ${errorMessage(e).slice(0, 300)}` };
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
      const client = await connect().client;
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
      const c = current;
      current = null;
      if (c) await c.client.then((cl) => cl.close()).catch(() => {});
    },
  };
}
