/** Test helpers for connectors: a connector context, and a real node:http server on an ephemeral port. */
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ConnectorContext } from "../../src/core/action.js";
import type { Json } from "../../src/core/types.js";

/** A connector context as the boundary builds one (a fresh step key unless given). */
export function connectorContext(over: Partial<ConnectorContext> & { input?: Json } = {}): ConnectorContext {
  return {
    request: { tenantId: "t", spaceId: "s", action: "test.action", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth", params: {}, idempotencyKey: "k" },
    operation: "op",
    input: {},
    idempotencyKey: `writ-step-${randomUUID()}`,
    signal: new AbortController().signal,
    deadline: Date.now() + 10_000,
    attemptId: "att_1",
    decisionId: "dec_1",
    invocationId: "inv_1",
    step: { index: 0, name: "a" },
    ...over,
  };
}

/** A request as the server received it (the body read whole). */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Handler = (req: ReceivedRequest, res: http.ServerResponse, raw: http.IncomingMessage) => void;

export interface TestServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  requests: ReceivedRequest[];
  /** Sets how the server answers (default: 200 `{"id":"ref-1"}`). */
  handle(h: Handler): void;
  /** Resolves once `n` requests have been received whole. */
  received(n: number): Promise<void>;
  close(): Promise<void>;
}

/** Answers `status` with a JSON body. */
export function json(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

export async function startServer(): Promise<TestServer> {
  const requests: ReceivedRequest[] = [];
  let handler: Handler = (_req, res) => json(res, 200, { id: "ref-1" });
  const waiters: { n: number; resolve: () => void }[] = [];
  const server = http.createServer((raw, res) => {
    const chunks: Buffer[] = [];
    raw.on("data", (c: Buffer) => chunks.push(c));
    raw.on("end", () => {
      const req = { method: raw.method ?? "", url: raw.url ?? "", headers: raw.headers, body: Buffer.concat(chunks).toString("utf8") };
      requests.push(req);
      for (const w of waiters.filter((x) => requests.length >= x.n)) w.resolve();
      handler(req, res, raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    handle: (h) => void (handler = h),
    received: (n) => (requests.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A local port nothing listens on (a server was bound to it and closed). */
export async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}
