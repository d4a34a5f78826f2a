/**
 * SPEC 9 over HTTP, randomized: malformed bodies, headers, paths, queries and webhook deliveries —
 * aimed at real records as well as missing ones — each get a 4xx with a stable code (never a
 * 5xx) and a request id, and change nothing: every table of the SQLite file has the same rows
 * afterwards, and the journal heads are the same. Hostile connections too, mixed with those cases:
 * clients that disconnect mid-body and slow clients (headers or body trickled) leave no 5xx in the
 * metrics, no error in the log and nothing in the store, and the server keeps answering.
 */
import Database from "better-sqlite3";
import fc from "fast-check";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signWebhook } from "../../src/core/webhook.js";
import { API_ERROR_CODES } from "../../src/server/index.js";
import { fcRun } from "../helpers/seed.js";
import { startServer } from "../../src/server/index.js";
import { ACME, GLOBEX, WEBHOOK_SECRET, call, memoryLogger, raw, refund, secretOf, startRig, type Rig } from "./fixture.js";

let rig: Rig;
/** Real records the cases aim at (they must come out unchanged). */
const real = { invocation: "", approval: "", reconciliation: "", parkedRef: "dep-fuzz" };

beforeAll(async () => {
  rig = await startRig();
  const submit = async (body: Record<string, unknown>): Promise<string> => (await call(rig, "POST", "/v1/spaces/prod/invocations", { key: "acme.submit", body })).json.invocation.invocationId;
  await submit(refund(5000)); // -> awaiting approval
  await submit(refund(1, { mode: "ambiguous" })); // -> reconciliation
  await submit({ action: "deploy.run", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth-1", params: { ref: "fuzz" }, idempotencyKey: "deploy-fuzz" }); // -> parked
  await rig.work();
  real.invocation = await submit(refund(2)); // stays queued
  real.approval = (await call(rig, "GET", "/v1/spaces/prod/approvals?status=pending", { key: "acme.approve" })).json.items[0].approvalId;
  real.reconciliation = (await call(rig, "GET", "/v1/spaces/prod/reconciliations?status=open", { key: "acme.operate" })).json.items[0].reconciliationId;
  expect(real.approval && real.reconciliation).toBeTruthy();
});
afterAll(async () => {
  await rig?.close();
});

/** Row counts of every table, and the journal heads: what "changes nothing" is checked against. */
async function snapshot(): Promise<unknown> {
  const db = new Database(rig.dbPath, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as Array<{ name: string }>;
    const counts = Object.fromEntries(tables.map(({ name }) => [name, (db.prepare(`SELECT count(*) AS n FROM "${name}"`).get() as { n: number }).n]));
    const heads = await rig.runtime.store.transact(async (tx) => [await tx.journalHead(ACME), await tx.journalHead(GLOBEX)]);
    return { counts, heads };
  } finally {
    db.close();
  }
}

interface Case {
  kind: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
}

type KeyName = "acme.submit" | "acme.approve" | "acme.operate" | "acme.admin" | "globex.admin" | "acme.otherspace";
const bearer = (k: KeyName): string => `Bearer ${rig.keys[k]}`;
const JSON_CT = { "content-type": "application/json" };

/** Printable text without the characters fetch refuses in a header value. */
const headerText = fc.string({ unit: fc.constantFrom(..."abcXYZ019 _-.,;:=/+\"'<>()[]{}!?*%~`"), maxLength: 80 });
const junkText = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: "binary", maxLength: 100 }), fc.constantFrom("", " ", "null", "[]", "{}", "true", "1e999", '"x"', "{", "}", "{\"a\":}", "\u0000", "\ufeff{}"));
// Refused character classes (docs/security.md): C1, bidi overrides and isolates, zero-width characters.
const LYING = ["\u009b", "\u202e", "\u2066", "\u200b", "\u200d", "\ufeff"];
const badId = fc.oneof(fc.constant("x".repeat(201)), fc.constant("a%00b"), fc.constant("%01"), fc.constant("bad%7Fid"), fc.constantFrom(...LYING.map((c) => `id${encodeURIComponent(c)}x`)), fc.string({ minLength: 201, maxLength: 300, unit: fc.constantFrom("a", "b", "1") }));

/** A request body (JSON text) that is certainly not a valid request. */
function badRequestJson(base: () => Record<string, unknown>): fc.Arbitrary<string> {
  const FIELDS = ["action", "actionVersion", "actor", "authorityRef", "params", "idempotencyKey"];
  // Every field but actor is required (a missing actor is the key's principal).
  const REQUIRED = FIELDS.filter((f) => f !== "actor");
  const mutated = fc.oneof(
    fc.constantFrom(...REQUIRED).map((f) => {
      const b = base();
      delete b[f];
      return b;
    }),
    fc.tuple(fc.constantFrom(...FIELDS), fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.array(fc.integer(), { maxLength: 2 }), fc.constant(""))).map(([f, v]) => ({ ...base(), [f]: v })),
    fc.string({ minLength: 1, maxLength: 20 }).filter((k) => ![...FIELDS, "tenantId", "spaceId", "__proto__"].includes(k)).map((k) => ({ ...base(), [k]: 1 })),
    fc.integer({ min: 256, max: 600 }).map((n) => ({ ...base(), idempotencyKey: "k".repeat(n) })),
    fc.constantFrom({ type: "robot", id: "x" }, { type: "agent" }, { type: "agent", id: "" }, { type: "agent", id: "x", extra: 1 }, "bot").map((actor) => ({ ...base(), actor })),
    fc.string({ maxLength: 30 }).filter((a) => a !== "payments.refund").map((action) => ({ ...base(), action })),
    fc.constantFrom({ amount: "10", currency: "EUR" }, { amount: 1.5, currency: "EUR" }, { currency: "EUR" }, { amount: 1, currency: "EURO-LONG-CODE" }, { amount: 1, currency: "EUR", mode: "weird" }).map((params) => ({ ...base(), params })),
    fc.constantFrom("a\u0001b", "x".repeat(201), ...LYING.map((c) => `a${c}b`)).map((authorityRef) => ({ ...base(), authorityRef })),
    fc.constantFrom(...LYING, "\u001b[2J", "\ud800").map((c) => ({ ...base(), idempotencyKey: `k${c}` })),
    fc.constant({ ...base(), tenantId: "globex" }),
    fc.constant({ ...base(), spaceId: "staging" }),
    fc.constant({ ...base(), actionVersion: "2" }),
  );
  return fc.oneof(
    { weight: 6, arbitrary: mutated.map((b) => JSON.stringify(b)) },
    // syntax: every strict prefix of a JSON object is invalid JSON
    { weight: 2, arbitrary: fc.nat().map((n) => { const t = JSON.stringify(base()); return t.slice(0, n % t.length); }) },
    { weight: 1, arbitrary: fc.constant(JSON.stringify(base()).replace("{", '{"action":"x",')) },
    { weight: 1, arbitrary: fc.constant(JSON.stringify(base()).replace("{", '{"__proto__":{"polluted":1},')) },
    { weight: 1, arbitrary: fc.integer({ min: 33, max: 200 }).map((d) => JSON.stringify({ ...base(), params: { amount: 1, currency: "EUR", x: "@" } }).replace('"@"', "[".repeat(d) + "]".repeat(d))) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
    { weight: 1, arbitrary: junkText },
  );
}

const submitPaths = ["/v1/spaces/prod/invocations", "/v1/spaces/prod/decisions/preview"];

function cases(): fc.Arbitrary<Case> {
  const body = (b: fc.Arbitrary<string>, paths: string[], key: KeyName) =>
    fc.tuple(b, fc.constantFrom(...paths)).map(([text, path]): Case => ({ kind: `body ${path.split("/").pop()}`, method: "POST", path, headers: { ...JSON_CT, authorization: bearer(key) }, body: text }));
  const request = badRequestJson(() => refund(10));
  const decisionJunk = fc.oneof(fc.string({ maxLength: 50 }), fc.constant("a.b.c"), fc.constant("eyJhbGciOiJFZERTQSJ9.e30.AAAA"));
  return fc.oneof(
    // malformed request bodies on submit and preview
    { weight: 6, arbitrary: body(request, submitPaths, "acme.submit") },
    // evaluate-and-sign and boundary execute: a bad request, or a good request with a junk decision
    { weight: 2, arbitrary: request.map((r): Case => ({ kind: "body evaluate", method: "POST", path: "/v1/spaces/prod/decisions/evaluate-and-sign", headers: { ...JSON_CT, authorization: bearer("acme.admin") }, body: r.startsWith("{") ? `{"request":${r}}` : r })) },
    {
      weight: 3,
      arbitrary: fc.oneof(request.map((r) => (r.startsWith("{") ? `{"request":${r},"decision":"a.b.c"}` : r)), decisionJunk.map((d) => JSON.stringify({ request: refund(10), decision: d }))).map((b): Case => ({ kind: "body execute", method: "POST", path: "/v1/spaces/prod/boundary/execute", headers: { ...JSON_CT, authorization: bearer("acme.operate") }, body: b })),
    },
    // votes and resolutions on real records: malformed bodies only
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom("approve", "deny", "revoke"), fc.oneof(fc.string({ minLength: 2001, maxLength: 2100 }).map((note) => JSON.stringify({ note })), fc.constant('{"note":1}'), fc.constant('{"verdict":"yes"}'), junkText.filter((t) => t.trim() !== "" && t.trim() !== "{}"))).map(([verb, b]): Case => ({ kind: "body vote", method: "POST", path: `/v1/spaces/prod/approvals/${real.approval}/${verb}`, headers: { ...JSON_CT, authorization: bearer("acme.approve") }, body: b })),
    },
    {
      weight: 2,
      arbitrary: fc.oneof(fc.constantFrom({ outcome: "maybe", note: "x" }, { outcome: "succeeded" }, { outcome: "succeeded", note: "" }, { outcome: "failed", note: " \t" }, { outcome: "failed", note: "x", externalRef: "" }, { outcome: "failed", note: "x", by: "me" }).map((b) => JSON.stringify(b)), junkText).map((b): Case => ({ kind: "body resolve", method: "POST", path: `/v1/spaces/prod/reconciliations/${real.reconciliation}/resolve`, headers: { ...JSON_CT, authorization: bearer("acme.operate") }, body: b })),
    },
    // wrong content type, invalid UTF-8, empty bodies
    { weight: 1, arbitrary: fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "json").map((ct): Case => ({ kind: "content-type", method: "POST", path: "/v1/spaces/prod/invocations", headers: { "content-type": ct, authorization: bearer("acme.submit") }, body: JSON.stringify(refund(10)) })) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes): Case => ({ kind: "bytes", method: "POST", path: "/v1/spaces/prod/invocations", headers: { ...JSON_CT, authorization: bearer("acme.submit") }, body: Uint8Array.from([0xff, ...bytes]) })) },
    // credentials: junk, forged, wrong role, wrong space, wrong tenant — with VALID bodies (the auth alone must refuse)
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.oneof(headerText, headerText.map((t) => `Bearer ${t}`), fc.constant(`Bearer ${"writ_AAAAAAAAAAAA_" + "b".repeat(32)}`), fc.constant("bearer  "), fc.constantFrom(...(["acme.approve", "acme.otherspace"] as const)).map((k) => bearer(k))),
          fc.constantFrom(
            { method: "POST", path: "/v1/spaces/prod/invocations", body: () => JSON.stringify(refund(10)) },
            { method: "POST", path: `/v1/spaces/prod/invocations/__INV__/cancel`, body: () => undefined },
          ),
        )
        .map(([auth, r]): Case => ({ kind: "credentials", method: r.method, path: r.path.replace("__INV__", real.invocation), headers: { ...JSON_CT, authorization: auth }, ...(r.body() !== undefined ? { body: r.body()! } : {}) })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        { method: "POST", path: `/v1/spaces/prod/approvals/__APR__/approve`, key: "acme.submit" as const },
        { method: "POST", path: `/v1/spaces/prod/approvals/__APR__/approve`, key: "globex.admin" as const },
        { method: "POST", path: `/v1/spaces/prod/reconciliations/__REC__/resolve`, key: "acme.approve" as const },
        { method: "POST", path: "/v1/spaces/prod/decisions/evaluate-and-sign", key: "acme.operate" as const },
        { method: "GET", path: `/v1/spaces/prod/invocations/__INV__`, key: "globex.admin" as const },
        { method: "POST", path: `/v1/spaces/prod/invocations/__INV__/cancel`, key: "globex.admin" as const },
        { method: "POST", path: `/v1/spaces/prod/invocations/__INV__/cancel`, key: "acme.approve" as const },
      ).map((r): Case => ({
        kind: "role",
        method: r.method,
        path: r.path.replace("__APR__", real.approval).replace("__REC__", real.reconciliation).replace("__INV__", real.invocation),
        headers: { ...JSON_CT, authorization: bearer(r.key) },
        ...(r.method === "POST" && !r.path.endsWith("cancel") ? { body: r.path.includes("resolve") ? JSON.stringify({ outcome: "succeeded", note: "x" }) : r.path.includes("evaluate") ? JSON.stringify({ request: refund(1) }) : "{}" } : {}),
      })),
    },
    // paths: unknown routes, bad ids, missing records, wrong methods
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.constantFrom("/", "/v1/", "/v1/spaces/prod/", "/v2/", "/v1/spaces/prod/invocations/x/", "/.well-known/"), fc.array(fc.string({ maxLength: 12 }).filter((s) => s !== "." && s !== ".."), { minLength: 1, maxLength: 4 }), fc.constantFrom("GET", "POST", "DELETE"))
        .map(([prefix, segs, method]): Case => ({ kind: "unknown path", method, path: prefix + "zz-" + segs.map(encodeURIComponent).join("/"), headers: { authorization: bearer("acme.admin") } })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(badId, fc.constantFrom("/v1/spaces/{}/invocations", "/v1/spaces/prod/invocations/{}", "/v1/spaces/prod/approvals/{}", "/v1/spaces/{}/journal")).map(([id, tpl]): Case => ({ kind: "bad id", method: "GET", path: tpl.replace("{}", id), headers: { authorization: bearer("acme.admin") } })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(fc.string({ minLength: 1, maxLength: 40, unit: fc.constantFrom("a", "b", "_", "-", "9") }), fc.constantFrom("invocations/{}", "invocations/{}/cancel", "approvals/{}", "approvals/{}/approve", "reconciliations/{}/resolve")).map(([id, tpl]): Case => {
        const path = `/v1/spaces/prod/${tpl.replace("{}", "missing-" + id)}`;
        const post = tpl.includes("cancel") || tpl.includes("approve") || tpl.includes("resolve");
        return { kind: "missing record", method: post ? "POST" : "GET", path, headers: { ...JSON_CT, authorization: bearer("acme.admin") }, ...(post ? { body: tpl.includes("resolve") ? JSON.stringify({ outcome: "failed", note: "n" }) : "{}" } : {}) };
      }),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom("PUT", "PATCH", "DELETE", "OPTIONS"), fc.constantFrom("/healthz", "/metrics", "/openapi.json", "/v1/spaces/prod/invocations", `/v1/spaces/prod/journal`, "/v1/completions/deployer")).map(([method, path]): Case => ({ kind: "method", method, path, headers: { authorization: bearer("acme.admin") } })),
    },
    // queries
    {
      weight: 2,
      arbitrary: fc.tuple(fc.constantFrom("/v1/spaces/prod/invocations", "/v1/spaces/prod/approvals", "/v1/spaces/prod/reconciliations", "/v1/spaces/prod/journal"), fc.constantFrom("status=bogus", "limit=0", "limit=-1", "limit=abc", "limit=100000", "limit=1.5", "fromSeq=0", "fromSeq=-3", "cursor=%00", "unknown=1", "limit=", "status=")).map(([path, q]): Case => ({ kind: "query", method: "GET", path: `${path}?${q}`, headers: { authorization: bearer("acme.admin") } })),
    },
    // webhooks: unsigned, badly signed, stale, unknown connector, and correctly signed but malformed
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.oneof(fc.constant(JSON.stringify({ externalRef: real.parkedRef, outcome: "success" })), junkText, fc.constantFrom('{"externalRef":"dep-fuzz","outcome":"maybe"}', '{"externalRef":"dep-fuzz","outcome":"success","extra":1}', '{"externalRef":"","outcome":"success"}', '{"outcome":"failure"}', "[1]")),
          fc.constantFrom("none", "garbage", "wrong-secret", "stale", "future", "unknown-connector", "signed-malformed"),
          headerText,
        )
        .map(([text, how, junk]): Case => {
          const now = Math.floor(Date.now() / 1000);
          const crypto = rig.runtime.host.context.o.crypto;
          const other = "whsec_" + Buffer.from("fedcba9876543210fedcba9876543210").toString("base64");
          const sign = (secret: string, ts: number) => ({ "webhook-id": `fz_${junk.length}_${how}`, "webhook-timestamp": String(ts), "webhook-signature": signWebhook(crypto, secret, `fz_${junk.length}_${how}`, ts, text) });
          const validBody = text === JSON.stringify({ externalRef: real.parkedRef, outcome: "success" });
          const headers: Record<string, string> =
            how === "none" ? {}
            : how === "garbage" ? { "webhook-id": junk, "webhook-timestamp": junk, "webhook-signature": junk }
            : how === "wrong-secret" ? sign(other, now)
            : how === "stale" ? sign(WEBHOOK_SECRET, now - 301 - junk.length)
            : how === "future" ? sign(WEBHOOK_SECRET, now + 301 + junk.length)
            : how === "unknown-connector" ? sign(WEBHOOK_SECRET, now)
            : validBody ? sign(other, now) // never a correctly signed valid completion: that one would apply
            : sign(WEBHOOK_SECRET, now);
          return { kind: `webhook ${how}`, method: "POST", path: `/v1/completions/${how === "unknown-connector" ? "ghost" : "deployer"}`, headers: { ...JSON_CT, ...headers }, body: text };
        }),
    },
  );
}

/** A request without credentials to a keyed route, with a malformed or junk header block. */
function rawCases(): fc.Arbitrary<string> {
  const junkLine = fc.oneof(
    fc.string({ unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)), maxLength: 60 }),
    fc.tuple(fc.string({ maxLength: 20 }), fc.string({ maxLength: 40 })).map(([k, v]) => `${k}: ${v}`),
    fc.constantFrom("Content-Length: abc", "Content-Length: -1", "Content-Length: 1, 2", "Transfer-Encoding: bogus", "Transfer-Encoding: chunked\r\nContent-Length: 5", "Host: two\r\nHost: hosts", " leading: space", "X: a\u0000b", "X-Request-Id: \u00ff\u00fe", ": empty name", "NoColon"),
  );
  return fc
    .tuple(fc.constantFrom("GET", "POST", "G E T", "PO\tST", ""), fc.constantFrom("/v1/spaces/prod/invocations", "/v1/spaces/prod/journal", "*", "http://x/v1/spaces/prod/journal", "/v1/spaces/prod/invocations?x=\u0001"), fc.constantFrom("HTTP/1.1", "HTTP/1.0", "HTTP/9.9", "HTTP/1.1 extra"), fc.array(junkLine, { minLength: 1, maxLength: 4 }))
    .map(([method, path, version, lines]) => `${method} ${path} ${version}\r\nHost: localhost\r\nConnection: close\r\n${lines.join("\r\n")}\r\n\r\n`);
}

describe("malformed HTTP input", () => {
  it("gets a 4xx with a stable code and a request id, never a 5xx, and changes nothing in the store", async () => {
    const before = await snapshot();
    const seen = new Map<string, number>();
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(cases(), async (c) => {
        const res = await fetch(rig.url + c.path, { method: c.method, headers: c.headers, ...(c.body !== undefined ? { body: c.body } : {}) });
        const text = await res.text();
        seen.set(c.kind, (seen.get(c.kind) ?? 0) + 1);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const where = `${c.kind}: ${c.method} ${c.path.slice(0, 120)} -> ${res.status} ${text.slice(0, 300)}`;
        expect(res.status, where).toBeGreaterThanOrEqual(400);
        expect(res.status, where).toBeLessThan(500);
        expect(res.headers.get("x-request-id"), where).toBeTruthy();
        const body = JSON.parse(text) as { error: { code: string; message: string } };
        expect(API_ERROR_CODES, where).toContain(body.error.code);
        expect(typeof body.error.message).toBe("string");
        for (const k of Object.values(rig.keys)) expect(text).not.toContain(secretOf(k));
      }),
      fcRun("server", "malformed HTTP input", 1200),
    );
    // Malformed header blocks over a raw socket (what fetch would refuse to send).
    await fc.assert(
      fc.asyncProperty(rawCases(), async (text) => {
        const r = await raw(rig.url, text);
        const where = `${JSON.stringify(text.slice(0, 200))} -> ${r.status} ${r.body.slice(0, 200)}`;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        expect(r.status, where).toBeGreaterThanOrEqual(400);
        expect(r.status, where).toBeLessThan(500);
        expect(r.headers, where).toMatch(/x-request-id: \S+/);
        expect(API_ERROR_CODES, where).toContain((JSON.parse(r.body) as { error: { code: string } }).error.code);
      }),
      fcRun("server", "malformed header blocks (raw socket)", 150),
    );
    expect(await snapshot()).toEqual(before);
    console.log(`[server] cases by kind: ${JSON.stringify(Object.fromEntries(seen))}; statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(seen.size).toBeGreaterThan(15);
    // The real records are as they were.
    const inv = await call(rig, "GET", `/v1/spaces/prod/invocations/${real.invocation}`, { key: "acme.submit" });
    expect(inv.json.invocation.status).toBe("queued");
    expect((await call(rig, "GET", `/v1/spaces/prod/approvals/${real.approval}`, { key: "acme.approve" })).json.approval.status).toBe("pending");
  }, 60_000);
});

/** Opens a raw TCP connection to a server URL. */
function open(url: string): Promise<Socket> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(u.port), u.hostname, () => resolve(sock));
    sock.on("error", reject);
  });
}

/** What the server sends until it closes the connection, or "TIMEOUT" after `ms`. */
function answerOf(sock: Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let data = "";
    const t = setTimeout(() => {
      sock.destroy();
      resolve("TIMEOUT");
    }, ms);
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => (data += d));
    sock.on("error", () => undefined);
    sock.on("close", () => {
      clearTimeout(t);
      resolve(data);
    });
  });
}

type Hostile =
  | { kind: "disconnect"; cut: number; route: "invocations" | "execute" | "approve" }
  | { kind: "slow-headers"; every: number }
  | { kind: "slow-body"; declared: number }
  | { kind: "bad"; c: Case };

describe("hostile connections", () => {
  // Invariants: whatever mix of mid-body disconnects, slowloris headers, stalled bodies and
  // malformed requests arrives, (1) a slow client is cut off with 408 (or the connection is
  // closed) and never holds the server, (2) a malformed request gets its 4xx, (3) no 5xx is ever
  // counted in the metrics and nothing is logged at error level, (4) the store is unchanged, and
  // (5) the server still answers a valid request afterwards.
  it("disconnects and slow clients, mixed with malformed requests, never make a 5xx, an error log or a write", async () => {
    const log = memoryLogger();
    const edge = await startServer(rig.runtime, { port: 0, headersTimeoutMs: 300, requestTimeoutMs: 600, logger: log });
    try {
      const before = await snapshot();
      const bodyFor = (route: string): { path: string; key: KeyName; body: string } =>
        route === "invocations" ? { path: "/v1/spaces/prod/invocations", key: "acme.submit", body: JSON.stringify(refund(3)) }
        : route === "execute" ? { path: "/v1/spaces/prod/boundary/execute", key: "acme.operate", body: JSON.stringify({ request: refund(3), decision: "a.b.c" }) }
        : { path: `/v1/spaces/prod/approvals/${real.approval}/approve`, key: "acme.approve", body: JSON.stringify({ note: "n" }) };
      const hostile: fc.Arbitrary<Hostile> = fc.oneof(
        { weight: 3, arbitrary: fc.record({ kind: fc.constant("disconnect" as const), cut: fc.double({ min: 0, max: 0.95, noNaN: true }), route: fc.constantFrom("invocations" as const, "execute" as const, "approve" as const) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant("slow-headers" as const), every: fc.integer({ min: 40, max: 150 }) }) },
        { weight: 1, arbitrary: fc.record({ kind: fc.constant("slow-body" as const), declared: fc.integer({ min: 10, max: 5000 }) }) },
        { weight: 3, arbitrary: cases().map((c) => ({ kind: "bad" as const, c })) },
      );
      const seen = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(fc.array(hostile, { minLength: 1, maxLength: 4 }), async (plan) => {
          await Promise.all(
            plan.map(async (h) => {
              seen.set(h.kind, (seen.get(h.kind) ?? 0) + 1);
              if (h.kind === "bad") {
                const res = await fetch(edge.url + h.c.path, { method: h.c.method, headers: h.c.headers, ...(h.c.body !== undefined ? { body: h.c.body } : {}) });
                await res.text();
                expect(res.status, `${h.c.kind} ${h.c.path.slice(0, 80)}`).toBeGreaterThanOrEqual(400);
                expect(res.status, `${h.c.kind} ${h.c.path.slice(0, 80)}`).toBeLessThan(500);
                return;
              }
              const sock = await open(edge.url);
              const answer = answerOf(sock, 5000);
              if (h.kind === "disconnect") {
                const { path, key, body } = bodyFor(h.route);
                sock.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rig.keys[key]}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, Math.floor(body.length * h.cut))}`);
                await new Promise((r) => setTimeout(r, 20));
                sock.destroy();
                await answer;
                return;
              }
              if (h.kind === "slow-headers") {
                sock.write("GET /healthz HTTP/1.1\r\nHost: x\r\n");
                const trickle = setInterval(() => {
                  if (sock.writable) sock.write("X-a: b\r\n");
                }, h.every);
                const text = await answer;
                clearInterval(trickle);
                expect(text, "slowloris must be cut off").not.toBe("TIMEOUT");
                if (text !== "") expect(text).toMatch(/^HTTP\/1\.1 408/);
                return;
              }
              sock.write(`POST /v1/spaces/prod/invocations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rig.keys["acme.submit"]}\r\nContent-Type: application/json\r\nContent-Length: ${h.declared}\r\n\r\n{`);
              const text = await answer;
              expect(text, "a stalled body must be cut off").not.toBe("TIMEOUT");
              if (text !== "") expect(text).toMatch(/^HTTP\/1\.1 (408|499)/);
            }),
          );
        }),
        fcRun("server", "hostile connections", 12),
      );
      await new Promise((r) => setTimeout(r, 200));
      const metrics = await (await fetch(`${edge.url}/metrics`)).text();
      expect(metrics).not.toMatch(/status="5\d\d"/);
      expect(log.lines.filter((l) => /"level":"error"/.test(l) || /"stack"/.test(l))).toEqual([]);
      expect(await snapshot()).toEqual(before);
      expect((await fetch(`${edge.url}/v1/spaces/prod/invocations/${real.invocation}`, { headers: { authorization: bearer("acme.submit") } })).status).toBe(200);
      console.log(`[server] hostile connections by kind: ${JSON.stringify(Object.fromEntries(seen))}`);
    } finally {
      await edge.close();
    }
  }, 90_000);
});
