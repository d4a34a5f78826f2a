/**
 * `writ serve` with the example config (examples/writ.config.ts) in an empty directory, as
 * `npm start` runs it: the demo agent, approver and admin keys (0600, printed each start), a refund
 * over HTTP with the agent key, the agent refused approving its own request, an approval with the
 * approver key, and a graceful stop on SIGTERM (exit 0, store closed).
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN, REPO, childEnv, json, workspace, writ } from "./helpers.js";

interface Banner {
  url: string;
  console: string;
  demo: { tenantId: string; spaceId: string; adminKey: string; adminKeyFile: string; created: boolean; curl: string; agentKey: string; agentKeyFile: string; approverKey: string; approverKeyFile: string };
}

interface Served {
  child: ChildProcessWithoutNullStreams;
  banner: Banner;
  stderr: () => string;
  exited: Promise<number | null>;
}

const CONFIG = join(REPO, "examples", "writ.config.ts");
let ws: ReturnType<typeof workspace>;
const running: Served[] = [];

beforeAll(() => {
  ws = workspace({});
});
afterAll(() => {
  for (const s of running) s.child.kill("SIGKILL");
  ws.cleanup();
});

/** Starts `writ serve --json --port 0` and resolves with its banner once it listens. */
function serve(): Promise<Served> {
  const child = spawn(process.execPath, [BIN, "serve", "--config", CONFIG, "--port", "0", "--json", "--quiet"], { cwd: ws.dir, env: childEnv({ WRIT_DEMO_DIR: join(ws.dir, ".writ") }), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<number | null>((r) => child.on("close", (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${stdout}\n${stderr}`)), 30_000);
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      try {
        const banner = JSON.parse(stdout) as Banner;
        clearTimeout(timer);
        const s = { child, banner, stderr: () => stderr, exited };
        running.push(s);
        resolve(s);
      } catch {
        // not complete yet
      }
    });
    void exited.then((code) => reject(new Error(`serve exited ${code}:\n${stdout}\n${stderr}`)));
  });
}

async function api(s: Served, method: string, path: string, body?: unknown, key = s.banner.demo.approverKey): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${s.banner.url}/v1/spaces/${s.banner.demo.spaceId}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function until(s: Served, invocationId: string, status: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const r = await api(s, "GET", `/invocations/${invocationId}`);
    const inv = r.body.invocation as Record<string, unknown>;
    if (inv.status === status) return inv;
    if (Date.now() > deadline) throw new Error(`invocation ${invocationId} is ${String(inv.status)}, expected ${status}`);
    await new Promise((x) => setTimeout(x, 100));
  }
}

/**
 * Resolves once another request has been in flight at two reads of /metrics 100 ms apart (each
 * read counts itself): a long poll the server holds, not a request passing through. `client` is
 * the CLI that should be holding it: should it end first, its exit and stderr are the error.
 */
async function heldRequest(s: Served, client: Promise<{ code: number | null; stderr: string }>): Promise<void> {
  let ended: { code: number | null; stderr: string } | null = null;
  void client.then((r) => (ended = r), () => undefined);
  const inFlight = async (): Promise<number> => Number(/^writ_http_requests_in_flight (\d+)$/m.exec(await (await fetch(`${s.banner.url}/metrics`)).text())?.[1] ?? 0);
  const deadline = Date.now() + 20_000;
  for (let seen = 0; seen < 2; ) {
    const e = ended as { code: number | null; stderr: string } | null;
    if (e !== null) throw new Error(`the client ended (exit ${String(e.code)}) before the server held its request: ${e.stderr}`);
    if (Date.now() > deadline) throw new Error("no request held by the server within 20 s");
    seen = (await inFlight()) >= 2 ? seen + 1 : 0;
    await new Promise((x) => setTimeout(x, 100));
  }
}

function refund(paymentId: string, amount: number): Record<string, unknown> {
  return { action: "payments.refund", actionVersion: "1", actor: { type: "agent", id: "support-bot" }, authorityRef: "support-bot", params: { paymentId, amount, currency: "EUR" }, idempotencyKey: `refund-${paymentId}` };
}

describe("writ serve with the example config", () => {
  it("bootstraps the demo, serves refunds and approvals, and stops gracefully on SIGTERM", async () => {
    const s = await serve();
    const { demo } = s.banner;
    expect(s.banner.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(demo).toMatchObject({ tenantId: "demo", spaceId: "default", created: true });
    expect(demo.adminKeyFile).toBe(join(ws.dir, ".writ", "demo-admin-key"));
    expect(readFileSync(demo.adminKeyFile, "utf8").trim()).toBe(demo.adminKey);
    expect(statSync(demo.adminKeyFile).mode & 0o777).toBe(0o600);
    expect(demo.curl).toContain(`${s.banner.url}/v1/spaces/default/invocations`);
    expect(demo.curl).toContain(demo.agentKey);
    for (const f of [demo.agentKeyFile, demo.approverKeyFile]) expect(statSync(f).mode & 0o777).toBe(0o600);
    // The console is served beside the API and its URL printed.
    expect(s.banner.console).toBe(`${s.banner.url}/console`);
    const signIn = await fetch(`${s.banner.console}/sign-in`);
    expect(signIn.status).toBe(200);
    expect(await signIn.text()).toContain("Sign in to the Writ console");

    // The agent submits with its own key; it may not approve (four eyes); the approver key does.
    const small = await api(s, "POST", "/invocations", refund("pay_1", 1200), demo.agentKey);
    expect(small.status).toBe(202);
    const smallId = (small.body.invocation as { invocationId: string }).invocationId;
    const large = await api(s, "POST", "/invocations", refund("pay_2", 25000), demo.agentKey);
    const largeId = (large.body.invocation as { invocationId: string }).invocationId;
    expect((await until(s, smallId, "succeeded")).result).toEqual({ refund: { ref: "re_1" } });
    const parked = await until(s, largeId, "awaiting_approval");
    expect((await api(s, "POST", `/approvals/${String(parked.approvalId)}/approve`, { note: "mine" }, demo.agentKey)).status).toBe(403);
    // `writ wait` through the server's long poll, started before the approval: it answers once the refund ran.
    const remote = ["--url", s.banner.url, "--key-file", demo.agentKeyFile, "--tenant", "demo", "--space", "default", "--json"];
    const waiting = writ(ws.dir, ["wait", largeId, "--until", "final", "--timeout", "30", ...remote]);
    await heldRequest(s, waiting); // the CLI's long poll is waiting at the server before the approval
    const approved = await api(s, "POST", `/approvals/${String(parked.approvalId)}/approve`, { note: "ok" });
    expect(approved.status).toBe(200);
    expect((approved.body.approval as { votes: Array<{ approver: unknown }> }).votes[0]?.approver).toEqual({ type: "user", id: "demo-approver" });
    const waited = await waiting;
    expect(waited.code, waited.stderr).toBe(0);
    expect(json(waited)).toMatchObject({ reached: true, invocation: { invocationId: largeId, status: "succeeded" } });
    await until(s, largeId, "succeeded");
    // A final state --until does not name ends the wait at once: exit 1, WAIT_TIMEOUT; a bad --until is a usage error (2).
    const missed = await writ(ws.dir, ["wait", largeId, "--until", "awaiting_approval", ...remote]);
    expect(missed.code).toBe(1);
    expect(missed.stderr).toMatch(/WAIT_TIMEOUT|ended succeeded, which --until awaiting_approval does not name/);
    expect((await writ(ws.dir, ["wait", largeId, "--until", "done", ...remote])).code).toBe(2);
    // Without --url it reads the local store (the demo's SQLite file, beside the running server).
    const local = await writ(ws.dir, ["wait", smallId, "--config", CONFIG, "--tenant", "demo", "--space", "default", "--json"], { env: { WRIT_DEMO_DIR: join(ws.dir, ".writ") } });
    expect(local.code, local.stderr).toBe(0);
    expect(json(local)).toMatchObject({ reached: true, invocation: { status: "succeeded" } });

    s.child.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(s.stderr()).toContain("[writ] SIGTERM: closing the HTTP server");
    expect(s.stderr()).toContain("[writ] stopped");

    // The next start prints the same key (kept in the 0600 file) and finds the work done.
    const again = await serve();
    expect(again.banner.demo).toMatchObject({ adminKey: demo.adminKey, agentKey: demo.agentKey, approverKey: demo.approverKey, created: false });
    expect(((await api(again, "GET", `/invocations/${largeId}`)).body.invocation as { status: string }).status).toBe("succeeded");
    again.child.kill("SIGINT");
    expect(await again.exited).toBe(0);
  });
});
