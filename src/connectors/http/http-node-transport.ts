/**
 * The default transport, on node:http / node:https with one fresh connection per call (no
 * keep-alive pool: a pooled connection the server has just closed fails after the request was
 * written, which would make an unsent request look ambiguous). A request counts as sent once its
 * connection is up (TCP connected, and for https the TLS handshake done): before that nothing of
 * it can have reached the provider.
 */
import http from "node:http";
import https from "node:https";
import { TLSSocket } from "node:tls";
import { describeError, type HttpExchange, type HttpResponse, type HttpTransport } from "./http-transport.js";

export const nodeTransport: HttpTransport = (call, signal, maxBytes) =>
  new Promise<HttpExchange>((resolve) => {
    let sent = false;
    let head: Omit<HttpResponse, "body"> | undefined;
    let settled = false;
    let req: http.ClientRequest | undefined;
    const onAbort = (): void => void req?.destroy(new Error("aborted"));
    const finish = (x: HttpExchange): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener("abort", onAbort);
      resolve(x);
    };
    // After the status line arrived, a failure only costs the body; before, the whole exchange.
    const fail = (problem: string): void => {
      if (head) finish({ kind: "response", response: { ...head, body: { ok: false, problem } } });
      else finish({ kind: "failed", sent, problem });
    };
    if (signal.aborted) return finish({ kind: "failed", sent: false, problem: "aborted" });
    const headers: http.OutgoingHttpHeaders = { ...call.headers };
    if (call.body !== undefined) headers["content-length"] = Buffer.byteLength(call.body);
    try {
      const lib = call.url.protocol === "https:" ? https : http;
      req = lib.request(call.url, { method: call.method, headers, agent: false }, (res) => {
        head = {
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          header: (name) => {
            const v = res.headers[name.toLowerCase()];
            return Array.isArray(v) ? v.join(", ") : v;
          },
        };
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            fail(`response body larger than ${maxBytes} bytes`);
            res.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on("end", () => finish({ kind: "response", response: { ...head!, body: { ok: true, text: Buffer.concat(chunks).toString("utf8") } } }));
        res.on("error", (e) => fail(describeError(e)));
        res.on("close", () => fail("the response was cut off"));
      });
    } catch (e) {
      // Thrown before any connection was attempted (a bad URL or header).
      return finish({ kind: "failed", sent: false, problem: describeError(e) });
    }
    req.on("socket", (socket) => {
      if (socket instanceof TLSSocket) socket.once("secureConnect", () => void (sent = true));
      else if (socket.connecting) socket.once("connect", () => void (sent = true));
      else sent = true;
    });
    req.on("error", (e) => fail(describeError(e)));
    signal.addEventListener("abort", onAbort, { once: true });
    req.end(call.body);
  });
