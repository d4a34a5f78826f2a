/**
 * /mcp sessions are bounded: a per-key cap (opening one more closes that key's least recently used
 * session) and an idle timeout. Invariant: a closed session's id is answered 404, never served.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { openWorld, type World } from "./fixture.js";

let world: World;
beforeAll(async () => {
  world = await openWorld({ worker: false, mcp: { maxSessionsPerKey: 2, sessionIdleMs: 1500 } });
}, 30_000);
afterAll(async () => {
  await world.close();
  rmSync(world.dir, { recursive: true, force: true });
});

const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function open(key: string): Promise<string> {
  const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
  const res = await fetch(`${world.server.url}/mcp`, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${key}` }, body: JSON.stringify(init) });
  await res.body?.cancel();
  expect(res.status).toBe(200);
  return res.headers.get("mcp-session-id")!;
}

async function ping(key: string, sid: string): Promise<number> {
  const res = await fetch(`${world.server.url}/mcp`, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${key}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
  await res.body?.cancel();
  return res.status;
}

it("a key opening more sessions than its cap closes its least recently used one; other keys are not affected", async () => {
  const other = await open(world.keys.other);
  const a = await open(world.keys.bot);
  const b = await open(world.keys.bot);
  expect(await ping(world.keys.bot, a)).toBe(200);
  const c = await open(world.keys.bot); // b is now the least recently used of bot's sessions
  expect(await ping(world.keys.bot, b)).toBe(404);
  expect(await ping(world.keys.bot, a)).toBe(200);
  expect(await ping(world.keys.bot, c)).toBe(200);
  expect(await ping(world.keys.other, other)).toBe(200);
});

it("an idle session is closed after sessionIdleMs", async () => {
  const s = await open(world.keys.alice);
  expect(await ping(world.keys.alice, s)).toBe(200);
  await new Promise((r) => setTimeout(r, 3500));
  expect(await ping(world.keys.alice, s)).toBe(404);
}, 10_000);
