/**
 * How long a plain tool call waits (docs/mcp.md, Plain calls), over both transports.
 *
 * Invariants checked:
 * - a call whose invocation parks awaiting approval answers at once with that state, not after
 *   `callWaitMs` (set to 30 s here; the answer must come within a third of it);
 * - over HTTP, with `pollMs` at its largest (60 s), the call is woken by the host's own events:
 *   a call that succeeds, or parks, still answers long before any poll would have read it;
 * - `writ_invocation_status` with `waitMs` waits for a change, not for the state it found;
 * - a call still waiting where waiting helps (queued, no worker) sends progress, and cancelled by
 *   the client cancels its invocation before any step runs.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Invocation } from "../../src/core/types.js";
import { ACME, api, connectClient, eventually, openWorld, type Connected, type Transport, type World } from "./fixture.js";

type Answer = { isError?: boolean; structuredContent?: { invocationId: string; status: string; approval?: { approvalId: string } } };

const CALL_WAIT_MS = 30_000;
/** Far below CALL_WAIT_MS and the 60 s poll: only an answer that did not wait them out is this fast. */
const ANSWERED_WITHIN_MS = CALL_WAIT_MS / 3;

let seq = 0;
const amount = (base: number): number => base + (++seq % 900);

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await f();
  return { value, ms: Date.now() - t0 };
}

describe.each(["http", "stdio"] as const)("a plain tool call over %s answers as soon as waiting cannot help", (transport: Transport) => {
  let world: World;
  let bot: Connected;

  beforeAll(async () => {
    world = await openWorld({ worker: transport === "http", mcp: { callWaitMs: CALL_WAIT_MS, pollMs: 60_000 } });
    // The stdio child reads the fixture config (pollMs 25): its own worker and the flag's wait.
    bot = await connectClient(world, transport, world.keys.bot, ["--call-wait-ms", String(CALL_WAIT_MS)]);
  }, 60_000);

  afterAll(async () => {
    await bot?.close();
    await world?.close();
    rmSync(world.dir, { recursive: true, force: true });
  });

  const call = async (name: string, args: Record<string, unknown>): Promise<Answer> =>
    (await bot.client.callTool({ name, arguments: args }, undefined, { timeout: CALL_WAIT_MS + 30_000 })) as Answer;

  it("a call parked awaiting approval answers with that state, well before callWaitMs", async () => {
    const { value, ms } = await timed(() => call("payments.refund", { amount: amount(5000), currency: "EUR" }));
    expect(value.structuredContent).toMatchObject({ status: "awaiting_approval" });
    expect(value.structuredContent!.approval?.approvalId).toMatch(/.+/);
    expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
  }, CALL_WAIT_MS + 40_000);

  it("a call that succeeds answers when it succeeds", async () => {
    const { value, ms } = await timed(() => call("payments.refund", { amount: amount(1), currency: "EUR" }));
    expect(value.structuredContent).toMatchObject({ status: "succeeded" });
    expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
  }, CALL_WAIT_MS + 40_000);

  it("writ_invocation_status with waitMs waits past the state it found, to the next one where waiting cannot help", async () => {
    const parked = await call("payments.refund", { amount: amount(5000), currency: "EUR" });
    const { invocationId, approval } = parked.structuredContent!;
    const waiting = timed(() => call("writ_invocation_status", { invocationId, waitMs: 20_000 }));
    const voted = await api(world, world.keys.alice, "POST", `/v1/spaces/prod/approvals/${approval!.approvalId}/approve`, {});
    expect(voted.status).toBe(200);
    const { value, ms } = await waiting;
    expect(value.structuredContent).toMatchObject({ invocationId, status: "succeeded" });
    expect(ms).toBeLessThan(ANSWERED_WITHIN_MS);
  }, CALL_WAIT_MS + 40_000);
});

describe.each(["http", "stdio"] as const)("a waiting call over %s cancelled by the client", (transport: Transport) => {
  let world: World;
  let bot: Connected;

  beforeAll(async () => {
    // No worker anywhere: the invocation stays queued, a state where waiting helps.
    world = await openWorld({ worker: false, mcp: { callWaitMs: CALL_WAIT_MS } });
    bot = await connectClient(world, transport, world.keys.bot, ["--no-worker", "--call-wait-ms", String(CALL_WAIT_MS)]);
  }, 60_000);

  afterAll(async () => {
    await bot?.close();
    await world?.close();
    rmSync(world.dir, { recursive: true, force: true });
  });

  it("sends progress while it waits, and cancelling it cancels its invocation before any step ran", async () => {
    const big = amount(8000);
    const ac = new AbortController();
    const progress: string[] = [];
    const onprogress = (p: { message?: string }): void => void progress.push(p.message ?? "");
    const pending = bot.client.callTool({ name: "payments.refund", arguments: { amount: big, currency: "EUR" } }, undefined, { timeout: CALL_WAIT_MS + 30_000, signal: ac.signal, onprogress });
    const found = await eventually(
      async () => (await world.runtime.host.list(ACME, { status: "queued", limit: 100 })).find((i) => i.request.params.amount === big),
      (i) => i !== undefined,
      "the call's invocation",
    );
    await eventually(async () => progress, (p) => p.includes("payments.refund: queued"), "progress while the call waits");
    ac.abort("agent changed its mind");
    await expect(pending).rejects.toThrow();
    const inv = (): Promise<Invocation> => world.runtime.host.get(ACME, found!.invocationId).then((i) => i!);
    await eventually(inv, (i) => i.status === "cancelled", "invocation cancelled by the call's cancellation");
    expect(world.effects()).toEqual([]);
  }, 40_000);
});
