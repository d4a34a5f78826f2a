/**
 * httpConnector against a real node:http server on an ephemeral port, through both transports
 * (node:http, the default, and an injected fetch): the request it sends, every status mapping,
 * failures before and after sending, abort and deadline, secrets kept out of reasons, options.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { httpConnector, type HttpConnectorOptions } from "../../src/connectors/index.js";
import { defaultStatusOutcome } from "../../src/connectors/http/http-mapping.js";
import type { Connector, ConnectorContext, ConnectorReply } from "../../src/core/action.js";
import { manualClock } from "../../src/core/manual-clock.js";
import type { Json } from "../../src/core/types.js";
import { closedPort, connectorContext, json, startServer, type TestServer } from "./helpers.js";

const SECRET = "sk_live_9f8e7d6c5b4a3210";

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
  server.handle((_req, res) => json(res, 200, { id: "ref-1" }));
});

const call = async (c: Connector, op: string, ctx: ConnectorContext): Promise<ConnectorReply> => c.operations[op]!(ctx);

function reasonOf(r: ConnectorReply): string {
  return "reason" in r ? r.reason : "";
}

const TRANSPORTS = [
  { name: "node:http", fetch: undefined },
  { name: "fetch", fetch: globalThis.fetch },
] as const;

for (const transport of TRANSPORTS) {
  describe(`httpConnector over ${transport.name}`, () => {
    const clock = manualClock(1_000_000);
    const ctx = (over: Partial<ConnectorContext> & { input?: Json } = {}): ConnectorContext => connectorContext({ deadline: clock.now() + 10_000, ...over });
    function connector(over: Partial<HttpConnectorOptions> = {}, baseUrl = server.url): Connector {
      return httpConnector({
        id: "provider",
        baseUrl,
        headers: { authorization: `Bearer ${SECRET}` },
        fetch: transport.fetch,
        clock,
        operations: {
          charge: { method: "POST", path: "/charges/{account}", externalRef: { field: "/id" } },
          status: { method: "POST", path: "/status/{code}", externalRef: { header: "x-ref", field: "id" } },
          read: { method: "GET", path: "/items/{id}?full=1", externalRef: { field: "data.items.0.id" } },
          slow: { method: "POST", path: "/slow", externalRef: { field: "id" }, timeoutMs: 2_000 },
        },
        ...over,
      });
    }

    // The step key goes out as Idempotency-Key; path placeholders are filled and encoded; the
    // input is the JSON body of a POST; a JSON 2xx answer is the output.
    it("sends the step key as Idempotency-Key, fills the path, posts the input and returns the JSON output", async () => {
      server.handle((_req, res) => json(res, 201, { id: "ch_1", amount: 5 }));
      const c = ctx({ input: { account: "a/1 b", amount: 5 } });
      const reply = await call(connector(), "charge", c);
      expect(reply).toEqual({ outcome: "success", externalRef: "ch_1", output: { id: "ch_1", amount: 5 } });
      const [req] = server.requests;
      expect(req!.method).toBe("POST");
      expect(req!.url).toBe("/charges/a%2F1%20b");
      expect(req!.headers["idempotency-key"]).toBe(c.idempotencyKey);
      expect(req!.headers.authorization).toBe(`Bearer ${SECRET}`);
      expect(req!.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(req!.body)).toEqual({ account: "a/1 b", amount: 5 });
    });

    // A GET carries no body; a dotted path reaches into arrays; a numeric reference is accepted.
    it("GET without a body, reference from a dotted path with an array index", async () => {
      server.handle((_req, res) => json(res, 200, { data: { items: [{ id: 42 }] } }));
      const reply = await call(connector(), "read", ctx({ input: { id: 7 } }));
      expect(reply).toMatchObject({ outcome: "success", externalRef: "42" });
      expect(server.requests[0]).toMatchObject({ method: "GET", url: "/items/7?full=1", body: "" });
    });

    // The header is tried before the body field; a non-JSON 2xx body gives no output.
    it("reference from a response header; non-JSON body gives no output", async () => {
      server.handle((_req, res) => {
        res.writeHead(200, { "content-type": "text/plain", "x-ref": "hdr-9" });
        res.end("ok");
      });
      expect(await call(connector(), "status", ctx({ input: { code: 200 } }))).toEqual({ outcome: "success", externalRef: "hdr-9" });
    });

    // The status table (docs/connectors.md): what the provider did, what it provably did not do
    // (transient when a retry may help), and everything else ambiguous.
    it("maps every status by the table", async () => {
      server.handle((req, res) => {
        const status = Number(req.url.split("/")[2]);
        if (status === 204) {
          res.writeHead(204, { "x-ref": "hdr-204" });
          res.end();
        } else json(res, status, { id: `ref-${status}`, error: "some error" });
      });
      const table: [number, ConnectorReply["outcome"]][] = [
        [200, "success"],
        [201, "success"],
        [202, "accepted"],
        [204, "success"],
        [301, "permanent_failure"],
        [303, "ambiguous"],
        [400, "permanent_failure"],
        [401, "permanent_failure"],
        [404, "permanent_failure"],
        [408, "transient_failure"],
        [409, "permanent_failure"],
        [422, "permanent_failure"],
        [429, "transient_failure"],
        [500, "ambiguous"],
        [501, "permanent_failure"],
        [502, "transient_failure"],
        [503, "transient_failure"],
        [504, "ambiguous"],
        [599, "ambiguous"],
      ];
      const c = connector();
      for (const [status, outcome] of table) {
        const reply = await call(c, "status", ctx({ input: { code: status } }));
        expect({ status, outcome: reply.outcome }).toEqual({ status, outcome });
        expect(defaultStatusOutcome(status)).toBe(outcome);
        if (outcome === "accepted") expect(reply).toEqual({ outcome: "accepted", externalRef: "ref-202" });
        if (outcome.endsWith("failure") || outcome === "ambiguous") {
          expect(reasonOf(reply)).toContain(`HTTP ${status}`);
          expect(reasonOf(reply)).toContain("POST /status/{code}");
          expect(reasonOf(reply)).toContain("some error");
        }
      }
      expect(server.requests).toHaveLength(table.length);
    });

    // Statuses can be re-read per connector and per operation (the operation's wins).
    it("statusOutcomes overrides", async () => {
      server.handle((req, res) => json(res, Number(req.url.split("/")[2]), { id: "r" }));
      const c = connector({
        statusOutcomes: { 409: "transient_failure", 502: "ambiguous" },
        operations: { status: { method: "POST", path: "/status/{code}", externalRef: { field: "id" }, statusOutcomes: { 502: "permanent_failure", 202: "success" } } },
      });
      expect((await call(c, "status", ctx({ input: { code: 409 } }))).outcome).toBe("transient_failure");
      expect((await call(c, "status", ctx({ input: { code: 502 } }))).outcome).toBe("permanent_failure");
      expect(await call(c, "status", ctx({ input: { code: 202 } }))).toEqual({ outcome: "success", externalRef: "r", output: { id: "r" } });
    });

    // A 2xx or 202 whose reference cannot be found, or whose JSON does not parse, is ambiguous:
    // the provider acted but the effect cannot be named.
    it("2xx or 202 without a reference, or with malformed JSON, is ambiguous", async () => {
      server.handle((req, res) => {
        if (req.url.endsWith("/bad")) {
          res.writeHead(200, { "content-type": "application/json" });
          res.end("{not json");
        } else json(res, Number(req.url.split("/")[2]), { other: 1 });
      });
      for (const code of [200, 202]) {
        const r = await call(connector(), "status", ctx({ input: { code } }));
        expect(r.outcome).toBe("ambiguous");
        expect(reasonOf(r)).toContain("no external reference at header x-ref or body field id");
      }
      const bad = await call(connector(), "charge", ctx({ input: { account: "bad" } }));
      expect(bad.outcome).toBe("ambiguous");
      expect(reasonOf(bad)).toContain("does not parse");
    });

    // A body larger than maxResponseBytes cannot be read: a 2xx with it is ambiguous.
    it("an oversized 2xx body is ambiguous", async () => {
      server.handle((_req, res) => json(res, 200, { id: "x", pad: "p".repeat(5000) }));
      const r = await call(connector({ maxResponseBytes: 1000 }), "charge", ctx({ input: { account: "a" } }));
      expect(r.outcome).toBe("ambiguous");
      expect(reasonOf(r)).toContain("larger than 1000 bytes");
    });

    // 429 and 503 say the provider did not process the request; Retry-After is kept in the reason.
    it("429 keeps Retry-After in the reason", async () => {
      server.handle((_req, res) => json(res, 429, { error: "slow down" }, { "retry-after": "30" }));
      const r = await call(connector(), "charge", ctx({ input: { account: "a" } }));
      expect(r).toEqual({ outcome: "transient_failure", reason: expect.stringContaining("(Retry-After: 30)") });
    });

    // Nothing listens: the connection is refused before a byte of the request left.
    it("connection refused -> transient_failure", async () => {
      const port = await closedPort();
      const r = await call(connector({}, `http://127.0.0.1:${port}`), "charge", ctx({ input: { account: "a" } }));
      expect(r.outcome).toBe("transient_failure");
      expect(reasonOf(r)).toContain("ECONNREFUSED");
      expect(reasonOf(r)).toContain("the request was not sent");
    });

    // The server read the whole request, then dropped the connection: the provider may have acted.
    it("connection reset after the request was sent -> ambiguous", async () => {
      server.handle((_req, _res, raw) => raw.socket.destroy());
      const r = await call(connector(), "charge", ctx({ input: { account: "a" } }));
      expect(server.requests).toHaveLength(1);
      expect(r.outcome).toBe("ambiguous");
      expect(reasonOf(r)).toContain("the request was sent, then failed");
    });

    // The server holds the response past the operation's timeoutMs (driven by the clock).
    it("timeout while the server holds the response -> ambiguous", async () => {
      server.handle(() => undefined);
      const pending = call(connector(), "slow", ctx());
      await server.received(1);
      clock.advance(1_999);
      clock.advance(1);
      const r = await pending;
      expect(r.outcome).toBe("ambiguous");
      expect(reasonOf(r)).toContain("the request was sent, then failed (no complete answer within 2000 ms)");
    });

    // The step deadline bounds the wait too (when it is sooner than timeoutMs).
    it("the step deadline bounds the wait", async () => {
      server.handle(() => undefined);
      const pending = call(connector(), "slow", ctx({ deadline: clock.now() + 500 }));
      await server.received(1);
      clock.advance(500);
      const r = await pending;
      expect(r.outcome).toBe("ambiguous");
      expect(reasonOf(r)).toContain("within 500 ms");
    });

    // ctx.signal: aborted before the call -> nothing sent; aborted while waiting -> ambiguous.
    it("abort via ctx.signal before and after sending", async () => {
      const before = new AbortController();
      before.abort();
      const r1 = await call(connector(), "charge", ctx({ input: { account: "a" }, signal: before.signal }));
      expect(r1.outcome).toBe("transient_failure");
      expect(server.requests).toHaveLength(0);

      server.handle(() => undefined);
      const during = new AbortController();
      const pending = call(connector(), "charge", ctx({ input: { account: "a" }, signal: during.signal }));
      await server.received(1);
      during.abort();
      const r2 = await pending;
      expect(r2.outcome).toBe("ambiguous");
      expect(reasonOf(r2)).toContain("the request was sent, then failed (the step was aborted)");
    });

    // A deadline already past: nothing is sent.
    it("a deadline already past -> transient_failure, nothing sent", async () => {
      const r = await call(connector(), "charge", ctx({ input: { account: "a" }, deadline: clock.now() - 1 }));
      expect(r.outcome).toBe("transient_failure");
      expect(server.requests).toHaveLength(0);
    });

    // Secret header values never appear in reasons, even when the provider echoes them.
    it("secrets are masked out of reasons (static and function headers)", async () => {
      server.handle((req, res) => json(res, 401, { error: "bad key", got: req.headers.authorization, key: req.headers["x-api-key"] }));
      const r1 = await call(connector(), "charge", ctx({ input: { account: "a" } }));
      expect(r1.outcome).toBe("permanent_failure");
      expect(reasonOf(r1)).toContain("[redacted]");
      expect(reasonOf(r1)).not.toContain(SECRET);
      const rotating = connector({ headers: async () => ({ "x-api-key": `${SECRET}-rotated` }) });
      const r2 = await call(rotating, "charge", ctx({ input: { account: "a" } }));
      expect(server.requests[1]!.headers["x-api-key"]).toBe(`${SECRET}-rotated`);
      expect(reasonOf(r2)).not.toContain(SECRET);
      const failing = connector({
        headers: () => {
          throw new Error("token service down");
        },
      });
      const r3 = await call(failing, "charge", ctx({ input: { account: "a" } }));
      expect(r3).toEqual({ outcome: "transient_failure", reason: expect.stringContaining("token service down") });
      expect(server.requests).toHaveLength(2);
    });
  });
}

describe("httpConnector requests", () => {
  const clock = manualClock(1_000_000);
  const ctx = (input: Json): ConnectorContext => connectorContext({ deadline: clock.now() + 10_000, input });

  // Request problems are definite before anything is sent.
  it("a missing path field or a throwing body builder -> permanent_failure, nothing sent", async () => {
    const c = httpConnector({
      id: "p",
      baseUrl: server.url,
      clock,
      operations: {
        a: { method: "POST", path: "/x/{id}", externalRef: { field: "id" } },
        b: {
          method: "PUT",
          path: "/y",
          externalRef: { field: "id" },
          body: () => {
            throw new Error("no body");
          },
        },
      },
    });
    const r1 = await c.operations.a!(ctx({ other: 1 }));
    expect(r1).toEqual({ outcome: "permanent_failure", reason: expect.stringContaining("`id`") });
    const r2 = await c.operations.b!(ctx({}));
    expect(r2).toEqual({ outcome: "permanent_failure", reason: expect.stringContaining("no body") });
    expect(server.requests).toHaveLength(0);
  });

  // A custom body, extra operation headers and another idempotency header name.
  it("custom body, operation headers and idempotencyHeader", async () => {
    const c = httpConnector({
      id: "p",
      baseUrl: `${server.url}/v2/`,
      clock,
      idempotencyHeader: "X-Idempotency-Key",
      operations: { a: { method: "PATCH", path: "/things/{id}", headers: { "x-version": "2024-01-01" }, body: (input) => ({ wrapped: input }), externalRef: { field: "id" } } },
    });
    const context = ctx({ id: "t1" });
    expect(await c.operations.a!(context)).toMatchObject({ outcome: "success", externalRef: "ref-1" });
    const req = server.requests[0]!;
    expect(req).toMatchObject({ method: "PATCH", url: "/v2/things/t1" });
    expect(req.headers["x-idempotency-key"]).toBe(context.idempotencyKey);
    expect(req.headers["idempotency-key"]).toBeUndefined();
    expect(req.headers["x-version"]).toBe("2024-01-01");
    expect(JSON.parse(req.body)).toEqual({ wrapped: { id: "t1" } });
  });

  // fetch failures that prove nothing was sent (DNS) are transient; anything else is ambiguous.
  it("fetch: DNS failure -> transient; an unknown failure -> ambiguous", async () => {
    const failing = (cause: object): typeof fetch => async () => {
      throw new TypeError("fetch failed", { cause });
    };
    const op = { a: { method: "POST" as const, path: "/a", externalRef: { field: "id" } } };
    const dns = httpConnector({ id: "p", baseUrl: "http://nowhere.invalid", clock, fetch: failing(Object.assign(new Error("getaddrinfo ENOTFOUND nowhere.invalid"), { code: "ENOTFOUND" })), operations: op });
    expect((await dns.operations.a!(ctx({}))).outcome).toBe("transient_failure");
    const reset = httpConnector({ id: "p", baseUrl: "http://nowhere.invalid", clock, fetch: failing(Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" })), operations: op });
    expect((await reset.operations.a!(ctx({}))).outcome).toBe("ambiguous");
    const unknown = httpConnector({ id: "p", baseUrl: "http://nowhere.invalid", clock, fetch: failing(new Error("???")), operations: op });
    expect((await unknown.operations.a!(ctx({}))).outcome).toBe("ambiguous");
  });
});

describe("httpConnector options", () => {
  const op = { method: "POST" as const, path: "/a", externalRef: { field: "id" } };
  const base = { id: "p", baseUrl: "https://api.example.com", operations: { a: op } };
  const cases: [string, Record<string, unknown>, string][] = [
    ["bad id", { id: "no spaces" }, "id"],
    ["no baseUrl", { baseUrl: 5 }, "baseUrl"],
    ["ftp baseUrl", { baseUrl: "ftp://x" }, "baseUrl"],
    ["credentials in baseUrl", { baseUrl: "https://user:pw@x.example" }, "baseUrl"],
    ["query in baseUrl", { baseUrl: "https://x.example/?k=1" }, "baseUrl"],
    ["no operations", { operations: {} }, "operations"],
    ["bad method", { operations: { a: { ...op, method: "TRACE" } } }, "operations.a.method"],
    ["relative path", { operations: { a: { ...op, path: "a" } } }, "operations.a.path"],
    ["bad placeholder", { operations: { a: { ...op, path: "/a/{b-c}" } } }, "operations.a.path"],
    ["no externalRef", { operations: { a: { ...op, externalRef: {} } } }, "operations.a.externalRef"],
    ["bad externalRef field", { operations: { a: { ...op, externalRef: { field: "a..b" } } } }, "operations.a.externalRef.field"],
    ["GET with a body", { operations: { a: { ...op, method: "GET", body: () => ({}) } } }, "operations.a.body"],
    ["bad timeoutMs", { operations: { a: { ...op, timeoutMs: 0 } } }, "operations.a.timeoutMs"],
    ["bad status key", { statusOutcomes: { 42: "ambiguous" } }, "statusOutcomes.42"],
    ["bad status outcome", { statusOutcomes: { 409: "retry" } }, "statusOutcomes.409"],
    ["success for a 5xx", { statusOutcomes: { 500: "success" } }, "statusOutcomes.500"],
    ["header overriding the idempotency key", { headers: { "Idempotency-Key": "x" } }, "headers.Idempotency-Key"],
    ["bad header value", { headers: { authorization: `Bearer ${SECRET}\r\nx: y` } }, "headers.authorization"],
    ["bad fetch", { fetch: "fetch" }, "fetch"],
    ["bad maxResponseBytes", { maxResponseBytes: -1 }, "maxResponseBytes"],
    ["bad clock", { clock: {} }, "clock"],
  ];
  // Construction validates every option and names the bad one, never echoing a secret value.
  it.each(cases)("%s -> INVALID_OPTION naming the option", (_name, patch, option) => {
    let thrown: unknown;
    try {
      httpConnector({ ...base, ...patch });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: "INVALID_OPTION", details: { option } });
    expect(String((thrown as Error).message)).not.toContain(SECRET);
  });

  it("a valid configuration builds a connector with its operations", () => {
    const c = httpConnector({ ...base, operations: { a: op, b: { ...op, method: "DELETE" } } });
    expect(c.id).toBe("p");
    expect(Object.keys(c.operations)).toEqual(["a", "b"]);
  });
});
