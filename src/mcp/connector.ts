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
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Connector, ConnectorContext, ConnectorOperation, ConnectorReply } from "../core/action.js";
import { defineConnector } from "../core/action.js";
import { WritError, errorMessage } from "../core/errors.js";
import { secretMasker } from "../connectors/http/http-mapping.js";
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

/** `text` on one line, cut at `max` characters (an upstream's answer goes into a reason). */
function oneLine(text: string, max = 300): string {
  return text.replace(/\s+/g, " ").slice(0, max);
}

/** JSON-RPC errors by which a server refuses a request before running anything. */
const REFUSED = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.InvalidRequest]);

/**
 * What an HTTP status by which a streamable HTTP upstream (or a proxy before it) refused a request
 * says. A 4xx means nothing ran, as the `http` connector reads one (docs/connectors.md); 404 (here
 * a restarted upstream, where the `http` connector takes it as definite), 408 and 429 may pass, so
 * a transient failure; any other 4xx refuses the request as it is, a definite failure. Any other
 * status (5xx among them) leaves the outcome unknown: a proxy's 502 may follow a call the upstream
 * ran, and an upstream that is not Writ need not dedupe on the key.
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

  /** Reasons never carry the values of the upstream's headers (an upstream may echo its Authorization). */
  const headerValues: unknown[] = isHttp && typeof up?.headers === "object" && up.headers !== null ? Object.values(up.headers) : [];
  const mask = secretMasker(headerValues.filter((v): v is string => typeof v === "string"));

  /**
   * One connection to the upstream: its client, the HTTP transport (for its session id), and the
   * calls and listings holding it. A connection found stale (its session gone) is left for new
   * calls and shut when the last one holding it ends, so that none is cut short.
   */
  interface Connection {
    client: Promise<Client>;
    http: StreamableHTTPClientTransport | null;
    calls: number;
    stale: boolean;
    closed: boolean;
  }
  let current: Connection | null = null;

  function connect(): Connection {
    if (current) return current;
    const client = new Client({ name: `writ-connector-${options.id}`, version: "0.1.0" });
    const transport = isStdio
      ? new StdioClientTransport({ command: up.command as string, args: (up.args as string[] | undefined) ?? [], ...(up.env ? { env: up.env as Record<string, string> } : {}), ...(up.cwd ? { cwd: up.cwd as string } : {}), stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(up!.url as string), up!.headers ? { requestInit: { headers: up!.headers as Record<string, string> } } : {});
    const http = transport instanceof StreamableHTTPClientTransport ? transport : null;
    const c: Connection = { client: client.connect(transport, { timeout: connectTimeoutMs }).then(() => client), http, calls: 0, stale: false, closed: false };
    client.onclose = () => {
      if (current === c) current = null;
    };
    current = c;
    c.client.catch(() => {
      if (current === c) current = null;
    });
    return c;
  }

  /**
   * Runs `fn` holding `c`, the connection new calls use: counted from before its first await, so a
   * retire (below) never closes a connection under a call or a listing still on it.
   */
  async function holding<T>(fn: (c: Connection) => Promise<T>): Promise<T> {
    const c = connect();
    c.calls++;
    try {
      return await fn(c);
    } finally {
      c.calls--;
      if (c.stale && c.calls === 0) shut(c);
    }
  }

  /** Whether `e` is an HTTP upstream's 404 (or, as some answer, 400) to a request naming `c`'s session. */
  function sessionLost(e: unknown, c: Connection): boolean {
    const status = httpStatus(e);
    return (status === 404 || status === 400) && c.http?.sessionId !== undefined;
  }

  /** Leaves `c` to what already holds it: new calls start a new connection; `c` is shut once free. */
  function retire(c: Connection): void {
    if (current === c) current = null;
    c.stale = true;
    if (c.calls === 0) shut(c);
  }

  /** Ends a retired connection: its session on the upstream (where it still has one), then the client. */
  function shut(c: Connection): void {
    if (c.closed) return;
    c.closed = true;
    void c.client
      .then(async (cl) => {
        // Bounded: an upstream that never answers the DELETE must not keep the client open
        // (closing it aborts the request).
        let timer: ReturnType<typeof setTimeout> | undefined;
        const bound = new Promise<void>((r) => (timer = setTimeout(r, connectTimeoutMs)));
        await Promise.race([c.http?.terminateSession().catch(() => undefined), bound]);
        clearTimeout(timer);
        await cl.close();
      })
      .catch(() => undefined);
  }

  /**
   * One call of `tool` on `client`; rejects as the protocol does. Sent as a plain `tools/call` request:
   * the SDK's `callTool` also checks the structured result against the tool's output schema once
   * the tool has run, and its refusal would read as a refusal of the call itself. Writ records
   * what the upstream answered.
   */
  function send(client: Client, tool: string, args: unknown, ctx: ConnectorContext) {
    const timeout = Math.max(1, ctx.deadline - Date.now());
    return client.request({ method: "tools/call", params: { name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: { [IDEMPOTENCY_META]: ctx.idempotencyKey } } }, CallToolResultSchema, { signal: ctx.signal, timeout });
  }

  /** The reply for an answer of the upstream. */
  function replyOf(tool: string, ctx: ConnectorContext, res: CallToolResult): ConnectorReply {
    if (res.isError === true) return { outcome: "permanent_failure", reason: mask(`the upstream tool ${tool} returned an error: ${textOf(res.content) || "no detail"}`) };
    const output = (res.structuredContent ?? { content: res.content ?? [] }) as Json;
    return { outcome: "success", externalRef: `mcp:${options.id}:${tool}:${ctx.idempotencyKey}`, output };
  }

  /** The reply for a call that failed with `e`. */
  function failureOf(tool: string, e: unknown): ConnectorReply {
    const status = httpStatus(e);
    const refused = status === undefined ? undefined : refusedOutcome(status);
    // The upstream (or a proxy before it) refused the HTTP request itself: nothing ran.
    if (refused !== undefined) return { outcome: refused, reason: mask(`the upstream refused ${tool} before running it (HTTP ${status}): ${oneLine(errorMessage(e))}`) };
    if (e instanceof McpError) {
      const code: number = e.code;
      if (code === (ErrorCode.RequestTimeout as number)) return { outcome: "timeout" };
      // The upstream refused the request itself (unknown tool, invalid arguments): it did not run.
      if (REFUSED.has(code)) return { outcome: "permanent_failure", reason: mask(`the upstream refused ${tool}: ${oneLine(e.message, 500)}`) };
    }
    if (neverSent(e)) return unreachable(e);
    // Sent, and then the connection dropped (or another fault): nobody knows whether it ran.
    return { outcome: "ambiguous", reason: mask(`the upstream connection failed after ${tool} was sent: ${oneLine(errorMessage(e))}`) };
  }

  /** Why a call must not leave now (the step aborted, or no time left before its deadline), if it must not. */
  function tooLate(tool: string, ctx: ConnectorContext): ConnectorReply | undefined {
    if (ctx.signal.aborted) return { outcome: "transient_failure", reason: `${tool} was not sent: the step was aborted` };
    if (!(ctx.deadline - Date.now() > 0)) return { outcome: "transient_failure", reason: `${tool} was not sent: the step deadline has passed` };
    return undefined;
  }

  /** Not connected: nothing was sent. */
  function unreachable(e: unknown, what = "cannot reach the upstream MCP server"): ConnectorReply {
    return { outcome: "transient_failure", reason: mask(`${what}: ${oneLine(errorMessage(e))}`) };
  }

  /** `retried`: this is the call sent once more on a new session after the upstream lost the first. */
  function callTool(tool: string, args: unknown, ctx: ConnectorContext, retried = false): Promise<ConnectorReply> {
    return holding(async (c) => {
      let client: Client;
      try {
        client = await c.client;
      } catch (e) {
        return unreachable(e, retried ? "the upstream MCP server ended its session and cannot be reached again" : undefined);
      }
      // A call sent with no time left would time out at once, an outcome nobody could know.
      const late = tooLate(tool, ctx);
      if (late !== undefined) return late;
      try {
        return replyOf(tool, ctx, await send(client, tool, args, ctx));
      } catch (e) {
        // An HTTP upstream that answers 404 (or, as some do, 400) to a request naming the client's
        // session no longer holds that session (it restarted, or ended it), and ran nothing: the
        // protocol has the client start a new session. The call goes once more, on a new one.
        if (retried || !sessionLost(e, c)) return failureOf(tool, e);
        retire(c);
        return callTool(tool, args, ctx, true);
      }
    });
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
    listTools() {
      const list = (c: Connection): Promise<Tool[]> =>
        c.client.then(async (client) => {
          const out: Tool[] = [];
          let cursor: string | undefined;
          for (let page = 0; page < 100; page++) {
            const r = await client.listTools(cursor ? { cursor } : {});
            out.push(...r.tools);
            cursor = r.nextCursor;
            if (!cursor) break;
          }
          return out;
        });
      return holding(async (c) => {
        try {
          return await list(c);
        } catch (e) {
          // As for a call: a session the upstream no longer holds is replaced, once (a listing runs nothing).
          if (!sessionLost(e, c)) throw e;
          retire(c);
          return holding(list);
        }
      });
    },
    async close() {
      const c = current;
      current = null;
      if (c) await c.client.then((cl) => cl.close()).catch(() => {});
    },
  };
}
