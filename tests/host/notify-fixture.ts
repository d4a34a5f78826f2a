/** A webhook receiver for notification tests: a real HTTP server that records every request and answers as scripted. */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  headers: IncomingHttpHeaders;
  /** The status this request was answered with. */
  status: number;
}

export interface Receiver {
  url: string;
  /** Every request, in arrival order. */
  requests: Received[];
  /** Decides each answer's status (default 204). */
  answer: (r: Omit<Received, "status">, n: number) => number;
  /** The body of each answer, by its status (default "ok", or "receiver says no" from 300 up). */
  reply: (status: number) => string;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const requests: Received[] = [];
  const rx: Receiver = { url: "", requests, answer: () => 204, reply: (status) => (status >= 300 ? "receiver says no" : "ok"), close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r = {
        id: String(req.headers["webhook-id"] ?? ""),
        timestamp: String(req.headers["webhook-timestamp"] ?? ""),
        signature: String(req.headers["webhook-signature"] ?? ""),
        body: Buffer.concat(chunks).toString("utf8"),
        headers: req.headers,
      };
      const status = rx.answer(r, requests.length);
      requests.push({ ...r, status });
      res.writeHead(status, { "content-type": "text/plain" }).end(rx.reply(status));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  rx.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/writ`;
  rx.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return rx;
}

/** The first occurrence of each id, in arrival order (what a receiver deduping on webhook-id keeps). */
export function firstOf(requests: readonly Received[], accepted = true): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of requests) {
    if (accepted && (r.status < 200 || r.status >= 300)) continue;
    if (seen.has(r.id)) continue;
    seen.add(r.id);
    out.push(r.id);
  }
  return out;
}
