/**
 * The HTTP edge no input can bend (docs/security.md), against a real server. Invariants:
 * - a client that disconnects mid-body is neither a 5xx in the metrics nor an error in the log;
 * - a slowloris client (headers trickled) and a slow body are cut off with 408 REQUEST_TIMEOUT;
 * - a request without Host gets the JSON error with a request id;
 * - per-key rate limits: over the burst, 429 RATE_LIMITED with Retry-After; other keys unaffected;
 * - the webhook route answers a connector without a secret exactly like one with a secret and a
 *   bad signature;
 * - a 413 reaches a client that sends its whole body before reading.
 */
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../src/server/index.js";
import { call, memoryLogger, raw, refund, startRig, type Rig } from "../server/fixture.js";

let rig: Rig;
let edge: RunningServer;
const log = memoryLogger();
beforeAll(async () => {
  rig = await startRig();
  edge = await startServer(rig.runtime, { port: 0, headersTimeoutMs: 400, requestTimeoutMs: 800, rateLimit: { perSecond: 1, burst: 3 }, logger: log });
});
afterAll(async () => {
  await edge.close();
  await rig.close();
});

function open(url: string): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(u.port), u.hostname, () => resolve(s));
    s.on("error", reject);
  });
}

/** Everything the server sends until it closes (or `ms` passes: then "TIMEOUT"). */
function readAll(s: Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let data = "";
    const t = setTimeout(() => {
      s.destroy();
      resolve("TIMEOUT");
    }, ms);
    s.setEncoding("latin1");
    s.on("data", (d: string) => (data += d));
    s.on("error", () => undefined);
    s.on("close", () => {
      clearTimeout(t);
      resolve(data);
    });
  });
}

describe("the HTTP edge", () => {
  it("a mid-body disconnect is no 5xx in the metrics and no error in the log", async () => {
    const s = await open(edge.url);
    s.write(`POST /v1/spaces/prod/invocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rig.keys["acme.submit"]}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"action":`);
    await new Promise((r) => setTimeout(r, 100));
    s.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const metrics = await (await fetch(`${edge.url}/metrics`)).text();
    expect(metrics).not.toMatch(/status="5\d\d"/);
    expect(log.lines.filter((l) => /"level":"error"/.test(l) || /"stack"/.test(l))).toEqual([]);
  });

  it("a slowloris client and a slow body are cut off with 408", async () => {
    const s = await open(edge.url);
    const answer = readAll(s, 5000);
    s.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
    const trickle = setInterval(() => {
      if (s.writable) s.write("X-a: b\r\n");
    }, 100);
    const text = await answer;
    clearInterval(trickle);
    expect(text).not.toBe("TIMEOUT");
    expect(text).toMatch(/^HTTP\/1\.1 408/);
    expect(text).toContain('"REQUEST_TIMEOUT"');

    const b = await open(edge.url);
    const slowBody = readAll(b, 5000);
    b.write(`POST /v1/spaces/prod/invocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rig.keys["acme.submit"]}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    const t = await slowBody;
    expect(t).not.toBe("TIMEOUT");
    expect(t).toMatch(/^HTTP\/1\.1 (408|499)/);
  });

  it("a request without Host gets the JSON error with a request id", async () => {
    const r = await raw(edge.url, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    expect(r.status).toBe(400);
    expect(r.headers).toContain("x-request-id: req_");
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: "BAD_REQUEST" } });
  });

  it("per-key rate limits: 429 with Retry-After beyond the burst; other keys unaffected", async () => {
    const get = (key: string) => fetch(`${edge.url}/v1/spaces/prod/invocations`, { headers: { authorization: `Bearer ${rig.keys[key]}` } });
    const statuses: number[] = [];
    let last: Response | null = null;
    for (let i = 0; i < 5; i++) {
      last = await get("acme.approve");
      statuses.push(last.status);
      if (last.status === 429) break;
    }
    expect(statuses).toContain(429);
    expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(((await last!.json()) as { error: { code: string } }).error.code).toBe("RATE_LIMITED");
    expect((await get("globex.operate")).status).toBe(200);
  });

  it("the webhook route does not reveal whether a connector has a secret", async () => {
    const headers = { "content-type": "application/json", "webhook-id": "msg_1", "webhook-timestamp": String(Math.floor(Date.now() / 1000)), "webhook-signature": `v1,${Buffer.alloc(32, 7).toString("base64")}` };
    const body = JSON.stringify({ externalRef: "dep-x", outcome: "success" });
    const withSecret = await call(rig, "POST", "/v1/completions/deployer", { raw: body, headers });
    const without = await call(rig, "POST", "/v1/completions/payments", { raw: body, headers });
    const unknown = await call(rig, "POST", "/v1/completions/no-such-connector", { raw: body, headers });
    expect(withSecret.status).toBe(401);
    for (const r of [without, unknown]) {
      expect(r.status).toBe(withSecret.status);
      expect(r.json.error).toEqual(withSecret.json.error);
    }
  });

  it("a 413 reaches a client that sends its whole body before reading", async () => {
    const big = JSON.stringify({ ...refund(1), params: { amount: 1, currency: "EUR", pad: "x".repeat(3 * 1024 * 1024) } });
    const r = await fetch(`${rig.url}/v1/spaces/prod/invocations`, { method: "POST", headers: { authorization: `Bearer ${rig.keys["acme.submit"]}`, "content-type": "application/json" }, body: big });
    expect(r.status).toBe(413);
  });
});
