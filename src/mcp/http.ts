/**
 * Streamable HTTP at `/mcp` (docs/mcp.md): the same API keys as the HTTP API (Bearer), the Origin
 * checked on every request (DNS rebinding), and bounded sessions (a global and a per-key cap, an
 * idle timeout). Each session is one MCP server bound to the key that opened it; a session id
 * presented with another key is "not found".
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { base64url } from "../core/encoding.js";
import { WritError, errorMessage } from "../core/errors.js";
import type { CryptoPort, Random } from "../core/ports.js";
import type { Store } from "../core/store.js";
import type { Host } from "../host/host.js";
import { silentLogger } from "../host/options.js";
import { verifyApiKey } from "../runtime/api-keys.js";
import { createMcpServer, resolveGatewayOptions } from "./gateway.js";
import { resolveMcpHttpOptions, type McpHttpOptions, type ResolvedMcpHttpOptions } from "./options.js";
import { callerOf, resolveSpace } from "./principal.js";
import { onePrefix } from "./wire.js";

export { resolveMcpHttpOptions, type McpHttpOptions, type ResolvedMcpHttpOptions };

export interface McpHttp {
  /** Answers one request to `/mcp` (POST, GET, DELETE). */
  handle(req: Request): Promise<Response>;
  /** Open sessions now. */
  sessions(): number;
  /** Closes every session (their streams end). */
  close(): Promise<void>;
}

export interface McpHttpDeps {
  host: Host;
  store: Store;
  crypto: CryptoPort;
  random: Random;
}

interface Session {
  id: string;
  keyId: string;
  spaceId: string;
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  lastUsed: number;
}

const LOOPBACK = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/;
const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i;

function jsonRpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), { status, headers: { "content-type": "application/json", ...headers } });
}

/** Creates the `/mcp` handler over a host and its store (API keys). */
export function createMcpHttp(deps: McpHttpDeps, options: McpHttpOptions = {}): McpHttp {
  const resolved = resolveMcpHttpOptions(options);
  const gw = resolveGatewayOptions(options);
  const log = options.logger ?? silentLogger;
  const origins = new Set(resolved.allowedOrigins);
  const { maxSessions, maxSessionsPerKey: perKey, sessionIdleMs: idleMs, bodyLimitBytes: bodyLimit } = resolved;
  const sessions = new Map<string, Session>();
  const now = (): number => deps.host.context.o.clock.now();

  const sweep = setInterval(() => {
    const cutoff = now() - idleMs;
    for (const s of sessions.values()) if (s.lastUsed < cutoff) void drop(s, "idle");
  }, Math.min(idleMs, 60_000));
  sweep.unref();

  async function drop(s: Session, why: string): Promise<void> {
    if (!sessions.delete(s.id)) return;
    log.info({ session: s.id.slice(0, 8), why }, "MCP session closed");
    try {
      await s.server.close();
    } catch (e) {
      log.warn({ err: errorMessage(e) }, "MCP: closing a session failed");
    }
  }

  function makeRoom(keyId: string): void {
    const byAge = [...sessions.values()].sort((a, b) => a.lastUsed - b.lastUsed);
    const mine = byAge.filter((s) => s.keyId === keyId);
    if (mine.length >= perKey) void drop(mine[0]!, "per-key session limit");
    else if (sessions.size >= maxSessions) void drop(byAge[0]!, "session limit");
  }

  function originAllowed(origin: string | null): boolean {
    if (origin === null) return true;
    return origins.has(origin) || (options.allowedOrigins === undefined && LOOPBACK.test(origin));
  }

  async function handle(req: Request): Promise<Response> {
    if (!originAllowed(req.headers.get("origin"))) return jsonRpcError(403, -32600, "this Origin may not call the Writ MCP endpoint (configure mcp.allowedOrigins)");
    const auth = req.headers.get("authorization") ?? "";
    const m = auth.length > 0 && auth.length <= 512 ? BEARER.exec(auth) : null;
    const challenge = { "www-authenticate": 'Bearer realm="writ"' };
    if (!m) return jsonRpcError(401, -32001, "an API key is required: Authorization: Bearer writ_<id>_<secret>", challenge);
    const key = await verifyApiKey(deps.store, deps.crypto, m[1]!);
    if (!key) return jsonRpcError(401, -32001, "the API key is not valid (unknown, revoked or mistyped)", challenge);
    const url = new URL(req.url);
    const asked = req.headers.get("writ-space") ?? url.searchParams.get("space") ?? undefined;
    let caller;
    try {
      caller = callerOf(key, await resolveSpace(deps.store, key, asked, options.demoSpace));
    } catch (e) {
      const forbidden = e instanceof WritError && e.code === "FORBIDDEN";
      return jsonRpcError(forbidden ? 403 : 400, -32600, e instanceof WritError ? e.message : "bad request");
    }
    const sid = req.headers.get("mcp-session-id");
    if (sid !== null) {
      const s = sessions.get(sid);
      // Another key's session is not revealed: the same answer as an unknown one.
      if (!s || s.keyId !== key.keyId || s.spaceId !== caller.scope.spaceId) return jsonRpcError(404, -32001, "Session not found (it expired or was closed): initialize a new one");
      s.lastUsed = now();
      const res = await s.transport.handleRequest(req);
      if (req.method === "DELETE") await drop(s, "closed by the client");
      return res;
    }
    if (req.method !== "POST") return jsonRpcError(400, -32000, "Bad Request: no session; POST an initialize request first");
    makeRoom(key.keyId);
    const server = createMcpServer(deps.host, caller, { ...gw, logger: log });
    let opened: Session | null = null;
    const transport = onePrefix(new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => `mcp_${base64url(deps.random.bytes(24))}`,
      maxRequestBodySize: bodyLimit,
      onsessioninitialized: (id) => {
        opened = { id, keyId: key.keyId, spaceId: caller.scope.spaceId, transport, server, lastUsed: now() };
        sessions.set(id, opened);
        log.info({ session: id.slice(0, 8), keyId: key.keyId }, "MCP session opened");
      },
    }));
    await server.connect(transport);
    const res = await transport.handleRequest(req);
    // Not an initialize request (or a refused one): no session was opened; nothing stays behind.
    if (opened === null) await server.close();
    return res;
  }

  return {
    handle,
    sessions: () => sessions.size,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => drop(s, "server closing")));
    },
  };
}
