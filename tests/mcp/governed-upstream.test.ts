/**
 * End to end: an agent connected to Writ (SDK Client over an in-memory transport) reaches an
 * upstream MCP server's tool only as a Writ action: the tool list shows the imported tool with the
 * upstream's input schema, and the call runs through policy (a DENY never reaches the upstream).
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHost, functionPolicy, generateSigningKey, memoryStore } from "../../src/index.js";
import { callerOf, createMcpServer, importMcpTools, mcpConnector, type McpConnector } from "../../src/mcp/index.js";
import type { ApiKeyRecord } from "../../src/core/types.js";

const SCOPE = { tenantId: "t", spaceId: "s" };
const TSX = join(process.cwd(), "node_modules", ".bin", "tsx");
let conn: McpConnector;
let client: Client;
let host: ReturnType<typeof createHost>;
let worker: ReturnType<ReturnType<typeof createHost>["worker"]>;

beforeAll(async () => {
  conn = mcpConnector({ id: "up", upstream: { command: TSX, args: [join(import.meta.dirname, "fixtures", "upstream.ts")] } });
  const actions = await importMcpTools(conn, { tools: ["echo", "fail"] });
  host = createHost({
    store: memoryStore(),
    actions,
    connectors: [conn],
    policy: functionPolicy("p:v1", ({ request }) => (JSON.stringify(request.params.text ?? "").includes("forbidden") ? { result: "DENY", reasons: ["no forbidden words"] } : "ALLOW")),
    signingKey: generateSigningKey(),
  });
  await host.authorities.create(SCOPE, { authorityRef: "a1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "root" }, actions: ["up.echo"] });
  const key: ApiKeyRecord = { keyId: "k1", tenantId: "t", spaces: ["s"], roles: ["submit"], hash: "x", name: "bot", principal: { type: "agent", id: "bot" }, createdAt: 0 };
  const server = createMcpServer(host, callerOf(key, key.spaces[0]!), { callWaitMs: 10_000, pollMs: 20 });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  client = new Client({ name: "agent", version: "1" });
  await client.connect(b);
  worker = host.worker({ pollMs: 20 });
  worker.start();
}, 30_000);

afterAll(async () => {
  await worker.stop({ drain: false });
  await client.close();
  await conn.close();
});

it("the imported tool is offered with the upstream's input schema; a call runs through Writ to the upstream", async () => {
  const { tools } = await client.listTools();
  // up.fail is imported but the authority covers only up.echo.
  expect(tools.map((t) => t.name).sort()).toEqual(["up.echo", "writ_invocation_status"]);
  const echo = tools.find((t) => t.name === "up.echo")!;
  expect(echo.inputSchema.properties).toMatchObject({ text: { type: "string", maxLength: 100 } });
  expect(echo.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
  const r = await client.callTool({ name: "up.echo", arguments: { text: "hi" } });
  expect(r.structuredContent).toMatchObject({ status: "succeeded", outputs: { call: { echoed: "hi" } } });
}, 30_000);

it("a call policy denies never reaches the upstream", async () => {
  const r = await client.callTool({ name: "up.echo", arguments: { text: "forbidden" } });
  expect(r.isError).toBe(true);
  expect(r.structuredContent).toMatchObject({ status: "denied", reasons: ["no forbidden words"] });
  const inv = (await host.get(SCOPE, (r.structuredContent as { invocationId: string }).invocationId))!;
  const steps = await host.context.o.store.transact((tx) => tx.getSteps(SCOPE, inv.invocationId));
  expect(steps).toEqual([]);
}, 30_000);
