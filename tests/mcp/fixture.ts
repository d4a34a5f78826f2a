/**
 * The MCP test world: a runtime on a SQLite file in a temporary directory (the config of
 * fixtures/mcp.config.ts), the HTTP API with /mcp on an ephemeral port, API keys, authorities, and
 * MCP clients (the SDK's own Client) over streamable HTTP or over stdio (`writ mcp`, a real child
 * process on the same database).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Scope } from "../../src/core/types.js";
import type { WritConfig } from "../../src/config/define-config.js";
import { createApiKey } from "../../src/runtime/api-keys.js";
import { openRuntime, type Runtime } from "../../src/runtime/runtime.js";
import { startServer, type RunningServer } from "../../src/server/index.js";
import type { Worker } from "../../src/host/worker.js";
import { mcpTestConfig } from "./fixtures/mcp.config.js";

export const ACME: Scope = { tenantId: "acme", spaceId: "prod" };
export const GLOBEX: Scope = { tenantId: "globex", spaceId: "prod" };
export const CONFIG = join(import.meta.dirname, "fixtures", "mcp.config.ts");
export const WRIT_BIN = join(process.cwd(), "bin", "writ.js");

export type Transport = "http" | "stdio";
export type KeyName = "bot" | "other" | "alice" | "ops" | "globex" | "viewer";

export interface World {
  dir: string;
  runtime: Runtime;
  server: RunningServer;
  keys: Record<KeyName, string>;
  worker: Worker | null;
  /** Lines of effects.log: one per provider effect. */
  effects(): string[];
  /** Stops the server, the worker and the store (the directory stays: reopen it). */
  close(): Promise<void>;
}

/** Opens (or reopens) the world in `dir`; keys and authorities are made on first open. */
export async function openWorld(o: { dir?: string; worker: boolean; mcp?: WritConfig["mcp"] }): Promise<World> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), "writ-mcp-"));
  const runtime = await openRuntime(mcpTestConfig(dir, o.mcp), { cwd: dir });
  const keysFile = join(dir, "keys.json");
  let keys: Record<KeyName, string>;
  if (existsSync(keysFile)) {
    keys = JSON.parse(readFileSync(keysFile, "utf8")) as Record<KeyName, string>;
  } else {
    const { crypto, random, clock } = runtime.host.context.o;
    const mk = async (tenantId: string, name: string, roles: ("submit" | "approve" | "operate")[], agent = false) =>
      (await createApiKey(runtime.store, crypto, random, { tenantId, spaces: ["prod"], roles, name, ...(agent ? { principal: { type: "agent" as const, id: name } } : {}) }, clock.now())).key;
    keys = {
      bot: await mk("acme", "bot", ["submit"], true),
      other: await mk("acme", "other-bot", ["submit"], true),
      alice: await mk("acme", "alice", ["approve"]),
      ops: await mk("acme", "ops", ["operate"]),
      globex: await mk("globex", "bot", ["submit"], true),
      viewer: await mk("acme", "viewer", ["approve"]),
    };
    const root = { type: "user" as const, id: "root" };
    await runtime.host.authorities.create(ACME, { authorityRef: "auth-bot", principal: { type: "agent", id: "bot" }, grantor: root, actions: ["payments.*", "reports.*"] });
    await runtime.host.authorities.create(ACME, { authorityRef: "auth-other", principal: { type: "agent", id: "other-bot" }, grantor: root, actions: ["reports.*"] });
    writeFileSync(keysFile, JSON.stringify(keys));
  }
  const server = await startServer(runtime, { port: 0 });
  const worker = o.worker ? runtime.host.worker({ concurrency: 4, pollMs: 25 }) : null;
  worker?.start();
  const effectsFile = join(dir, "effects.log");
  return {
    dir,
    runtime,
    server,
    keys,
    worker,
    effects: () => (existsSync(effectsFile) ? readFileSync(effectsFile, "utf8").split("\n").filter((l) => l.length > 0) : []),
    async close() {
      await server.close();
      await worker?.stop({ drain: false });
      await runtime.close();
    },
  };
}

export interface Connected {
  client: Client;
  /** The `writ mcp` child's pid (stdio only). */
  pid: number | null;
  close(): Promise<void>;
}

/** An SDK Client connected to Writ as the holder of `key`; `args` are more flags of `writ mcp` (stdio). */
export async function connectClient(world: World, transport: Transport, key: string, args: string[] = []): Promise<Connected> {
  const client = new Client({ name: "writ-test-agent", version: "1.0.0" });
  if (transport === "http") {
    const t = new StreamableHTTPClientTransport(new URL(`${world.server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    await client.connect(t);
    return { client, pid: null, close: () => client.close() };
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const t = new StdioClientTransport({ command: process.execPath, args: [WRIT_BIN, "mcp", "--config", CONFIG, ...args], env: { ...env, WRIT_MCP_TEST_DIR: world.dir, WRIT_MCP_KEY: key }, stderr: "ignore" });
  await client.connect(t, { timeout: 30_000 });
  return { client, pid: t.pid, close: () => client.close() };
}

/** POST to the HTTP API as `key`. */
export async function api(world: World, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(world.server.url + path, { method, headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

/** Polls `read` until `ok` holds (wall time: real processes and a real database). */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  let last: T = await read();
  while (!ok(last)) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)?.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 30));
    last = await read();
  }
  return last;
}
