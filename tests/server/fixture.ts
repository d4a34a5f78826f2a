/**
 * A real server on an ephemeral port over a runtime on a temporary SQLite file: two tenants, API
 * keys for every role, a function policy (ALLOW small refunds, REQUIRE_APPROVAL large ones, DENY
 * negative ones), a payments connector that can answer ambiguously, and a deployer that hands off
 * (completed by a signed webhook).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { defineAction, defineConnector } from "../../src/core/action.js";
import { functionPolicy } from "../../src/core/policy.js";
import type { ApiRole, Scope } from "../../src/core/types.js";
import { defineConfig, type WritConfig } from "../../src/config/define-config.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { openRuntime, type Runtime } from "../../src/runtime/runtime.js";
import type { Logger } from "../../src/host/options.js";
import { startServer, type RunningServer } from "../../src/server/index.js";
import { conformance, type Conformance, type OpenApiDoc } from "./conformance.js";

export const WEBHOOK_SECRET = "whsec_" + Buffer.from("0123456789abcdef0123456789abcdef").toString("base64");
export const ACME: Scope = { tenantId: "acme", spaceId: "prod" };
export const GLOBEX: Scope = { tenantId: "globex", spaceId: "prod" };
export const AGENT = { type: "agent" as const, id: "bot" };

const refundParams = z.object({ amount: z.number().int(), currency: z.string().max(8), mode: z.enum(["ok", "ambiguous"]).optional() });
const deployParams = z.object({ ref: z.string().min(1).max(64) });

export const actions = [
  defineAction({ id: "payments.refund", version: "1", params: refundParams, idempotent: true, steps: [{ name: "refund", connector: "payments", operation: "refund" }] }),
  defineAction({ id: "deploy.run", version: "1", params: deployParams, idempotent: true, completion: { deadlineMs: 600_000 }, steps: [{ name: "start", connector: "deployer", operation: "start" }] }),
];

export const connectors = [
  defineConnector({
    id: "payments",
    operations: {
      refund: ({ input, idempotencyKey }) =>
        (input as { mode?: string }).mode === "ambiguous" ? { outcome: "ambiguous", reason: "provider timed out mid-way" } : { outcome: "success", externalRef: `re_${idempotencyKey.slice(-8)}`, output: { refunded: true } },
    },
  }),
  defineConnector({ id: "deployer", operations: { start: ({ input }) => ({ outcome: "accepted", externalRef: `dep-${(input as { ref: string }).ref}` }) } }),
];

export const policy = functionPolicy("test:v1", ({ request, approval }) => {
  if (request.params.currency === "BOOM") throw new Error("policy engine exploded: internal detail 7f3a");
  const amount = Number(request.params.amount ?? 0);
  if (amount < 0) return { result: "DENY", reasons: ["negative amounts are refused"] };
  if (amount > 100_000) return approval?.status === "approved" ? "ALLOW" : { result: "REQUIRE_APPROVAL", reasons: ["very large refund"], approval: { approverRoles: ["finance"], quorum: 1 } };
  if (amount > 1000) return approval?.status === "approved" ? "ALLOW" : { result: "REQUIRE_APPROVAL", reasons: ["large refund"], approval: { approverRoles: ["approve"], quorum: 1 } };
  return "ALLOW";
});

export interface Rig {
  runtime: Runtime;
  server: RunningServer;
  url: string;
  dir: string;
  dbPath: string;
  /** API keys (the text) by name: `<tenant>.<role>`. */
  keys: Record<string, string>;
  /** One worker pass: claims what is due and runs it to the end. */
  work(): Promise<number>;
  close(): Promise<void>;
}

const ROLES: ApiRole[] = ["submit", "approve", "operate", "admin"];

export async function startRig(options: { logger?: Logger; apiKeyCacheMs?: number } = {}): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), "writ-http-"));
  const dbPath = join(dir, "writ.db");
  const config = defineConfig({
    store: { kind: "sqlite", path: dbPath },
    keys: { dir: join(dir, "keys") },
    actions,
    connectors,
    policy,
    completionSecrets: [{ ...ACME, connector: "deployer", secrets: [WEBHOOK_SECRET] }],
  });
  const runtime = await openRuntime(config, { cwd: dir });
  const { crypto, random, clock } = runtime.host.context.o;
  const keys: Record<string, string> = {};
  for (const scope of [ACME, GLOBEX]) {
    for (const role of ROLES) {
      // The submit key is the agent's own key: its principal is AGENT (the requests' actor).
      const principal = role === "submit" ? { principal: AGENT } : {};
      keys[`${scope.tenantId}.${role}`] = (await createApiKey(runtime.store, crypto, random, { tenantId: scope.tenantId, roles: [role], name: `${scope.tenantId}-${role}`, ...principal }, clock.now())).key;
    }
    await runtime.host.authorities.create(scope, { authorityRef: "auth-1", principal: AGENT, grantor: { type: "user", id: "root" }, actions: ["*"] });
  }
  keys["acme.approve2"] = (await createApiKey(runtime.store, crypto, random, { tenantId: "acme", roles: ["approve"], name: "bob" }, clock.now())).key;
  keys["acme.otherspace"] = (await createApiKey(runtime.store, crypto, random, { tenantId: "acme", roles: ["admin"], spaces: ["staging"], name: "staging-admin" }, clock.now())).key;
  const server = await startServer(runtime, { port: 0, checkResponses: true, ...(options.logger ? { logger: options.logger } : {}), ...(options.apiKeyCacheMs !== undefined ? { apiKeyCacheMs: options.apiKeyCacheMs } : {}) });
  return rigOf(runtime, server, dir, keys, runtime.host.worker({ concurrency: 8 }));
}

function rigOf(runtime: Runtime, server: RunningServer, dir: string, keys: Record<string, string>, worker: { runOnce(): Promise<unknown[]> }): Rig {
  return {
    runtime,
    server,
    url: server.url,
    dir,
    dbPath: join(dir, "writ.db"),
    keys,
    work: async () => (await worker.runOnce()).length,
    async close() {
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A server over `config` (its keys, and a SQLite store, redirected into a temporary directory), started with
 * no options in code but the port, as `writ serve` starts it; `keys` makes the API keys calls name.
 */
export async function serveConfig(config: WritConfig, keys: (runtime: Runtime) => Promise<Record<string, string>>): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), "writ-config-"));
  const dbPath = join(dir, "writ.db");
  const runtime = await openRuntime({ ...config, store: config.store === undefined || config.store.kind === "sqlite" ? { kind: "sqlite", path: dbPath } : config.store, keys: { dir: join(dir, "keys") } }, { cwd: dir });
  try {
    const named = await keys(runtime);
    return rigOf(runtime, await startServer(runtime, { port: 0, mcp: false }), dir, named, runtime.host.worker());
  } catch (e) {
    await runtime.close();
    throw e;
  }
}

export interface Answer {
  status: number;
  headers: Headers;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** The rig's own OpenAPI document, read once per server, as a checker of answers. */
const checkers = new Map<string, Promise<Conformance>>();
function checkerOf(url: string): Promise<Conformance> {
  let c = checkers.get(url);
  if (!c) {
    c = fetch(url + "/openapi.json").then(async (r) => conformance((await r.json()) as OpenApiDoc));
    checkers.set(url, c);
  }
  return c;
}

/**
 * A request to the rig; `key` is a key name of `rig.keys` or a raw Authorization value. Every
 * answer is checked against the served OpenAPI document (conformance.ts): an undeclared status,
 * media type or a body its schema refuses fails the calling test.
 */
export async function call(rig: Rig, method: string, path: string, o: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...(o.headers ?? {}) };
  if (o.key !== undefined) headers.authorization = rig.keys[o.key] !== undefined ? `Bearer ${rig.keys[o.key]}` : o.key;
  let body: string | undefined = o.raw;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(rig.url + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  const problems = (await checkerOf(rig.url)).problems({ method, path, status: res.status, contentType: res.headers.get("content-type"), json, text });
  if (problems.length > 0) throw new Error(`the answer to ${method} ${path} departs from the OpenAPI document:\n  ${problems.join("\n  ")}`);
  return { status: res.status, headers: res.headers, json, text };
}

let n = 0;
export function refund(amount: number, o: { key?: string; mode?: "ok" | "ambiguous"; currency?: string } = {}): Record<string, unknown> {
  return { action: "payments.refund", actionVersion: "1", actor: AGENT, authorityRef: "auth-1", params: { amount, currency: o.currency ?? "EUR", ...(o.mode ? { mode: o.mode } : {}) }, idempotencyKey: o.key ?? `k-${process.pid}-${++n}` };
}

/** A logger that keeps every line (as JSON text) for assertions. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (obj: object, msg?: string) => void lines.push(JSON.stringify({ level, msg, ...obj }));
  return { lines, debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** The secret part of a key text `writ_<keyId>_<secret>` (the id has no underscore; the secret may). */
export function secretOf(key: string): string {
  return key.slice(key.indexOf("_", 5) + 1);
}

/** Sends raw bytes (latin1) on a fresh connection and reads the first answer until the server closes. */
export function raw(url: string, text: string): Promise<{ status: number; headers: string; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(u.port), u.hostname, () => socket.end(text, "latin1"));
    let data = "";
    socket.setEncoding("latin1");
    socket.on("data", (d: string) => (data += d));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head = "", rest = ""] = data.split("\r\n\r\n", 2);
      const length = /content-length: (\d+)/i.exec(head);
      resolve({ status: Number(head.split(" ")[1]), headers: head.toLowerCase(), body: length ? rest.slice(0, Number(length[1])) : rest });
    });
  });
}
