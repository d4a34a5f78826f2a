/** Serves the HTTP API on Node (`@hono/node-server`). */
import { createServer, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { base64url } from "../core/encoding.js";
import { errorMessage } from "../core/errors.js";
import type { Runtime } from "../runtime/runtime.js";
import { closeLiveStreams, createApp, mcpEndpointOf, resolveAppOptions, serverOptionsOf, type CreateAppOptions } from "./app.js";
import { ApiError, errorReply } from "./errors.js";
import { metricsFor } from "./metrics.js";

export interface StartServerOptions extends CreateAppOptions {
  /** 0 picks a free port. @defaultValue config.server.port, else 8787 */
  port?: number;
  /** @defaultValue config.server.host, else "127.0.0.1" */
  host?: string;
  /** A client must send its whole request head within this (slowloris). @defaultValue config.server.headersTimeoutMs, else 10000 */
  headersTimeoutMs?: number;
  /** A client must send its whole request, body included, within this. @defaultValue config.server.requestTimeoutMs, else 30000 */
  requestTimeoutMs?: number;
}

export interface RunningServer {
  /** e.g. `http://127.0.0.1:53127` (the real port when 0 was asked for). */
  url: string;
  port: number;
  /** Stops accepting, closes idle keep-alive connections, and resolves once the server is closed. */
  close(): Promise<void>;
}

/**
 * Starts the HTTP API. It does not start a worker: `writ serve` starts one beside it.
 *
 * Requests that never reach the app still get the API's JSON error shape and a request id: the
 * ones the adapter cannot turn into a `Request` (a backslash in the path, a bad Host header:
 * 400 BAD_REQUEST), and the ones Node's HTTP parser refuses (a malformed request line: 400
 * BAD_REQUEST; oversized headers: 431 HEADERS_TOO_LARGE).
 * @example
 * const server = await startServer(runtime, { port: 0 });
 * await fetch(`${server.url}/healthz`);
 * await server.close();
 */
export async function startServer(runtime: Runtime, options: StartServerOptions = {}): Promise<RunningServer> {
  const { port, host, headersTimeoutMs: headersTimeout, requestTimeoutMs: requestTimeout } = serverOptionsOf(runtime, options, "startServer: ");
  const { logger: log } = resolveAppOptions(runtime, options);
  const app = createApp(runtime, options);
  const metrics = metricsFor(runtime.host);
  const newId = (): string => `req_${base64url(runtime.host.context.o.random.bytes(12))}`;

  const refused = (err: ApiError): { status: number; requestId: string; body: string } => {
    const requestId = newId();
    const r = errorReply(err);
    metrics.request("OTHER", "unparsed", r.status, 0);
    log.info({ requestId, status: r.status, err: err.message }, "request refused before routing");
    return { status: r.status, requestId, body: JSON.stringify(r.body) };
  };

  const listener = getRequestListener(app.fetch, {
    hostname: host,
    errorHandler: (err) => {
      const r = refused(new ApiError("BAD_REQUEST", `the request cannot be read: ${errorMessage(err).slice(0, 200)}`));
      return new Response(r.body, { status: r.status, headers: { "content-type": "application/json", "x-request-id": r.requestId, connection: "close" } });
    },
  });
  // Node checks these timeouts every connectionsCheckingInterval: keep it below the shortest.
  const checking = Math.max(10, Math.min(1000, Math.floor(Math.min(headersTimeout, requestTimeout) / 4)));
  // requireHostHeader off: Node's own bare 400 for a missing Host becomes the API's JSON error.
  const server: Server = createServer({ headersTimeout: Math.min(headersTimeout, requestTimeout), requestTimeout, connectionsCheckingInterval: checking, requireHostHeader: false }, (req, res) => {
    if (req.headers.host === undefined || req.headers.host.length === 0) {
      const r = refused(new ApiError("BAD_REQUEST", "the request has no Host header"));
      res.writeHead(r.status, { "content-type": "application/json", "content-length": Buffer.byteLength(r.body), "x-request-id": r.requestId, connection: "close" });
      res.end(r.body);
      return;
    }
    listener(req, res).catch((e: unknown) => log.error({ err: errorMessage(e) }, "HTTP listener failed"));
  });
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
    const slow = err.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const r = refused(
      slow
        ? new ApiError("REQUEST_TIMEOUT", "the request was not received in time")
        : new ApiError(tooLarge ? "HEADERS_TOO_LARGE" : "BAD_REQUEST", tooLarge ? "the request headers are too large" : "the request line or headers cannot be parsed"),
    );
    const reason = slow ? "Request Timeout" : tooLarge ? "Request Header Fields Too Large" : "Bad Request";
    socket.end(`HTTP/1.1 ${r.status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(r.body)}\r\nx-request-id: ${r.requestId}\r\nconnection: close\r\n\r\n${r.body}`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${shown}:${address.port}`,
    port: address.port,
    close() {
      closing ??= (async () => {
        // Console live streams and MCP sessions hold streams open: end them first, or the server
        // would wait for them.
        closeLiveStreams(app);
        await mcpEndpointOf(app)?.close();
        await new Promise<void>((resolve, reject) => {
          server.close((err) => (err ? reject(err) : resolve()));
          server.closeIdleConnections();
        });
      })();
      return closing;
    },
  };
}
