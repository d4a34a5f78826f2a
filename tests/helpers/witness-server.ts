/**
 * A checkpoint witness endpoint in the test process (docs/archives.md, Checkpoint witnesses): `POST`
 * keeps a checkpoint, `GET ?tenantId=&spaceId=` answers the scope's as a JSON list; while `down`,
 * every request is answered 503.
 */
import { createServer, type Server } from "node:http";
import type { JournalCheckpoint } from "../../src/core/types.js";

export interface WitnessServer {
  /** Every checkpoint it was shown, in order. */
  held: JournalCheckpoint[];
  down: boolean;
  server: Server;
  /** Listens on `port` (0: any free one) and answers the endpoint's URL. */
  listen(port?: number): Promise<string>;
  close(): Promise<void>;
}

export function witnessServer(): WitnessServer {
  const w: WitnessServer = {
    held: [],
    down: false,
    server: createServer((req, res) => {
      if (w.down) return void res.writeHead(503).end();
      if (req.method === "POST") {
        let body = "";
        req.on("data", (c: Buffer) => (body += c.toString()));
        req.on("end", () => {
          w.held.push(JSON.parse(body) as JournalCheckpoint);
          res.writeHead(204).end();
        });
        return;
      }
      const q = new URL(req.url ?? "/", "http://x").searchParams;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(w.held.filter((c) => c.tenantId === q.get("tenantId") && c.spaceId === q.get("spaceId"))));
    }),
    async listen(port = 0) {
      await new Promise<void>((r) => w.server.listen(port, "127.0.0.1", r));
      return `http://127.0.0.1:${(w.server.address() as { port: number }).port}/witness`;
    },
    close: () => new Promise<void>((r) => (w.server.listening ? w.server.close(() => r()) : r())),
  };
  return w;
}
