/**
 * writ/client against a running server (the rig of tests/server: a real listener on SQLite, a
 * worker pass on demand): every operation, its typed answers (each checked against the served
 * OpenAPI document), its typed errors, the long-poll wait and the retries.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WritApiError, isWritApiError, type Invocation } from "../../src/client/index.js";
import { AGENT, call, refund, startRig, type Rig } from "../server/fixture.js";
import { checkedFetch, clientOf } from "./helpers.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

let n = 0;
/** A refund as the client submits it: no actor (the key's principal), no key unless given. */
function refundInput(amount: number, o: { mode?: "ok" | "ambiguous"; key?: string } = {}) {
  return { action: "payments.refund", actionVersion: "1", authorityRef: "auth-1", params: { amount, currency: "EUR", ...(o.mode ? { mode: o.mode } : {}) }, ...(o.key ? { idempotencyKey: o.key } : {}) };
}
const uniqueKey = (): string => `client-test-${process.pid}-${++n}`;

describe("invocations", () => {
  it("submit (actor = the key's principal), replay, get, list with a cursor, wait until final", async () => {
    const writ = clientOf(rig, "acme.submit");
    const key = uniqueKey();
    const first = await writ.invocations.submit(refundInput(40, { key }));
    expect(first.replayed).toBe(false);
    expect(first.invocation.request.actor).toEqual(AGENT);
    expect(first.invocation.idempotencyKey).toBe(key);
    const again = await writ.invocations.submit(refundInput(40, { key }));
    expect(again).toMatchObject({ replayed: true, invocation: { invocationId: first.invocation.invocationId } });

    const id = first.invocation.invocationId;
    expect((await writ.invocations.get(id)).status).toBe("queued");
    const second = await writ.invocations.submit(refundInput(41));
    expect(second.invocation.idempotencyKey).toMatch(/^client-[0-9a-f]{32}$/);
    const page1 = await writ.invocations.list({ status: "queued", limit: 1 });
    expect(page1.items).toHaveLength(1);
    expect(page1.nextCursor).not.toBeNull();
    const page2 = await writ.invocations.list({ status: "queued", limit: 1, cursor: page1.nextCursor! });
    expect(new Set([...page1.items, ...page2.items].map((i) => i.invocationId))).toEqual(new Set([id, second.invocation.invocationId]));

    const waiting = writ.invocations.wait(id, { until: "final", timeoutMs: 20_000 });
    await rig.work();
    const done = await waiting;
    expect(done.reached).toBe(true);
    expect(done.invocation.status).toBe("succeeded");
    expect(done.invocation.result).toEqual({ refund: { refunded: true } });
  });

  it("wait is a long poll woken by the worker's events: it answers the moment the invocation moves, not at the timeout", async () => {
    const writ = clientOf(rig, "acme.submit");
    const { invocation } = await writ.invocations.submit(refundInput(42));
    const t0 = Date.now();
    const waiting = writ.invocations.wait(invocation.invocationId, { until: "final", timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 300));
    await rig.work();
    const done = await waiting;
    const ms = Date.now() - t0;
    // Invariant: the answer follows the change (well under the 30 s asked for, and under the 1 s re-read too: an event woke it).
    expect(done).toMatchObject({ reached: true, invocation: { status: "succeeded" } });
    expect(ms).toBeLessThan(3_000);
  });

  it("a wait that runs out answers reached: false with the invocation as it is, after about the time asked", async () => {
    const writ = clientOf(rig, "acme.submit");
    const { invocation } = await writ.invocations.submit(refundInput(43));
    const t0 = Date.now();
    const r = await writ.invocations.wait(invocation.invocationId, { until: "final", timeoutMs: 1_500 });
    expect(r).toMatchObject({ reached: false, invocation: { status: "queued" } });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_400);
    await rig.work();
  });

  it("cancel, and its typed 409 once it ended", async () => {
    const writ = clientOf(rig, "acme.submit");
    const { invocation } = await writ.invocations.submit(refundInput(44));
    expect((await writ.invocations.cancel(invocation.invocationId)).status).toBe("cancelled");
    const e = await writ.invocations.cancel(invocation.invocationId).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(WritApiError);
    expect(e).toMatchObject({ code: "INVALID_STATE", status: 409 });
    expect((e as WritApiError).requestId).toMatch(/^req_/);
  });
});

describe("approvals", () => {
  it("a large refund waits for approval (wait until awaiting_approval), is approved through the API and completes", async () => {
    const agent = clientOf(rig, "acme.submit");
    const approver = clientOf(rig, "acme.approve");
    const { invocation } = await agent.invocations.submit(refundInput(5000));
    const waiting = agent.invocations.wait(invocation.invocationId, { until: "awaiting_approval", timeoutMs: 20_000 });
    await rig.work();
    const parked = await waiting;
    expect(parked).toMatchObject({ reached: true, invocation: { status: "awaiting_approval" } });
    const approvalId = parked.invocation.approvalId!;
    const pending = await approver.approvals.list({ status: "pending" });
    expect(pending.map((a) => a.approvalId)).toContain(approvalId);
    expect((await approver.approvals.get(approvalId)).invocationId).toBe(invocation.invocationId);
    const voted = await approver.approvals.approve(approvalId, { note: "checked" });
    expect(voted.status).toBe("approved");
    const final = agent.invocations.wait(invocation.invocationId, { until: "final", timeoutMs: 20_000 });
    await rig.work();
    expect((await final).invocation.status).toBe("succeeded");
  });

  it("deny ends the invocation denied; revoke revokes a pending approval", async () => {
    const agent = clientOf(rig, "acme.submit");
    const approver = clientOf(rig, "acme.approve");
    const a = (await agent.invocations.submit(refundInput(5001))).invocation;
    const b = (await agent.invocations.submit(refundInput(5002))).invocation;
    await rig.work();
    const [ia, ib] = [await agent.invocations.get(a.invocationId), await agent.invocations.get(b.invocationId)];
    expect((await approver.approvals.deny(ia.approvalId!, { note: "no" })).status).toBe("denied");
    expect((await agent.invocations.get(a.invocationId)).status).toBe("denied");
    expect((await approver.approvals.revoke(ib.approvalId!, {})).status).toBe("revoked");
  });

  it("the agent's key cannot vote: FORBIDDEN, typed", async () => {
    const agent = clientOf(rig, "acme.submit");
    const e = await agent.approvals.approve("apr_x").catch((x: unknown) => x);
    expect(isWritApiError(e, "FORBIDDEN")).toBe(true);
    expect((e as WritApiError).status).toBe(403);
  });
});

describe("reconciliations, unknown keys, the boundary", () => {
  it("an ambiguous outcome is listed and resolved; a bare execution's unknown key is listed and resolved", async () => {
    const agent = clientOf(rig, "acme.submit");
    const operator = clientOf(rig, "acme.operate");
    const admin = clientOf(rig, "acme.admin");
    const { invocation } = await agent.invocations.submit(refundInput(9, { mode: "ambiguous" }));
    await rig.work();
    expect((await agent.invocations.get(invocation.invocationId)).status).toBe("reconciliation_required");

    const request = refund(8, { mode: "ambiguous" });
    const minted = await admin.decisions.evaluateAndSign({ request: request as never });
    expect(minted.result).toBe("ALLOW");
    const attempt = await operator.boundary.execute({ request: request as never, decision: minted.decision });
    expect(attempt.state).toBe("UNKNOWN");

    const queue = await operator.reconciliations.list({ status: "open" });
    const rec = queue.items.find((r) => r.invocationId === invocation.invocationId)!;
    expect(rec.status).toBe("open");
    expect(queue.unknownKeys.map((k) => k.idempotencyKey)).toContain(request.idempotencyKey);

    const resolved = await operator.reconciliations.resolve(rec.reconciliationId, { outcome: "succeeded", note: "seen at the provider", externalRef: "re_1" });
    expect(resolved.status).toBe("succeeded");
    const key = await operator.boundary.resolveKey({ action: "payments.refund", idempotencyKey: request.idempotencyKey as string, outcome: "failed", note: "nothing at the provider" });
    expect(key.idempotency.state).toBe("failed");
    expect((await operator.reconciliations.list({ status: "open" })).unknownKeys.map((k) => k.idempotencyKey)).not.toContain(request.idempotencyKey);
  });

  it("preview answers the policy without running anything", async () => {
    const agent = clientOf(rig, "acme.submit");
    const p = await agent.decisions.preview({ ...refundInput(-1), idempotencyKey: uniqueKey() });
    expect(p).toMatchObject({ result: "DENY", reasons: ["negative amounts are refused"] });
  });
});

describe("journal, breakers, completions, system, actions", () => {
  it("journal read, export and verify agree", async () => {
    const operator = clientOf(rig, "acme.operate");
    const page = await operator.journal.read({ limit: 5 });
    expect(page.entries.length).toBeGreaterThan(0);
    expect(page.entries[0]!.seq).toBe(1);
    const exported = await operator.journal.export();
    expect(exported.head).toBe(exported.entries.at(-1)!.seq);
    expect(exported.entries.slice(0, page.entries.length)).toEqual(page.entries);
    // The header line comes apart from the entries: the range it states is what follows.
    expect(exported.header).toMatchObject({ format: "writ-journal/1", kind: "export", tenantId: "acme", fromSeq: 1, throughSeq: exported.head, entries: exported.entries.length });
    expect(exported.text.split("\n")[0]).toBe(JSON.stringify(exported.header));
    const v = await operator.journal.verify();
    expect(v.ok).toBe(true);
    expect(v.headSeq).toBeGreaterThanOrEqual(exported.head!);
  });

  it("breakers, early completions, health, JWKS and the document", async () => {
    const operator = clientOf(rig, "acme.operate");
    expect(Array.isArray(await operator.breakers.list())).toBe(true);
    expect(await operator.completions.early({ limit: 10 })).toMatchObject({ items: [], retentionMs: expect.any(Number) });
    expect(await operator.system.health()).toEqual({ status: "ok", store: "sqlite" });
    expect((await operator.system.jwks()).keys[0]).toMatchObject({ kty: "OKP", crv: "Ed25519" });
    expect((await operator.system.openapi()).openapi).toBe("3.1.0");
  });

  it("actions lists what the key's principal may ask for, with its authority, params schema and annotations", async () => {
    const actions = await clientOf(rig, "acme.submit").actions.list();
    expect(actions.map((a) => a.action)).toEqual(["payments.refund", "deploy.run"]);
    const refundAction = actions[0]!;
    expect(refundAction).toMatchObject({ version: "1", authorityRef: "auth-1", annotations: { readOnly: false, destructive: true, idempotent: true, openWorld: true } });
    expect(refundAction.inputSchema).toMatchObject({ type: "object", properties: { amount: { type: "integer" } }, required: ["amount", "currency"] });
    // A principal with no authority sees none (the operator key's principal holds none).
    const e = await clientOf(rig, "acme.operate").actions.list().catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "FORBIDDEN", status: 403 });
    expect(await clientOf(rig, "acme.admin").actions.list()).toEqual([]);
  });
});

describe("errors and bad input", () => {
  it("the API's codes come back typed: NOT_FOUND, VALIDATION_FAILED with details, UNAUTHORIZED", async () => {
    const writ = clientOf(rig, "acme.submit");
    await expect(writ.invocations.get("inv_missing")).rejects.toMatchObject({ code: "NOT_FOUND", status: 404 });
    const bad = await writ.invocations.submit({ ...refundInput(1), params: { amount: "ten" } }).catch((x: unknown) => x);
    expect(bad).toMatchObject({ code: "VALIDATION_FAILED", status: 400 });
    expect((bad as WritApiError).details).toMatchObject({ issues: expect.any(Array) });
    await expect(clientOf(rig, "acme.submit", { apiKey: "writ_nope_nope" }).invocations.list()).rejects.toMatchObject({ code: "UNAUTHORIZED", status: 401 });
  });

  it("a bad wait or until is a 400 naming the parameter; until needs wait (checked against the document)", async () => {
    const { invocation } = await clientOf(rig, "acme.submit").invocations.submit(refundInput(45));
    const at = `/v1/spaces/prod/invocations/${invocation.invocationId}`;
    const cases: Array<[string, RegExp]> = [
      ["?wait=61", /query\.wait: must be an integer from 0 to 60/],
      ["?wait=-1", /query\.wait: must be an integer from 0 to 60/],
      ["?wait=1.5", /query\.wait/],
      ["?wait=1&until=finished", /query\.until: "finished" is not a status or group/],
      ["?wait=1&until=final,", /query\.until: "" is not a status or group/],
      ["?until=final", /query\.until: needs wait/],
    ];
    for (const [q, message] of cases) {
      const r = await call(rig, "GET", at + q, { key: "acme.submit" });
      expect(r.status, q).toBe(400);
      expect(r.json.error.code, q).toBe("VALIDATION_FAILED");
      expect(r.json.error.message, q).toMatch(message);
    }
    // A list of statuses and groups is fine; wait=0 reads once.
    const ok = await call(rig, "GET", at + "?wait=0&until=awaiting_approval,final", { key: "acme.submit" });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ reached: false, invocation: { status: "queued" } });
    await rig.work();
  });

  it("createClient refuses bad options with INVALID_OPTION naming the option", async () => {
    const { createClient } = await import("../../src/client/index.js");
    expect(() => createClient({ baseUrl: "ftp://x", apiKey: "k" })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringMatching(/baseUrl/) }));
    expect(() => createClient({ baseUrl: "http://x", apiKey: "" })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringMatching(/apiKey/) }));
    expect(() => createClient({ baseUrl: "http://x", apiKey: "k", retry: { retries: -1 } })).toThrow(expect.objectContaining({ code: "INVALID_OPTION", message: expect.stringMatching(/retry\.retries/) }));
  });
});

describe("retries", () => {
  /** A fetch that passes requests to the server and loses the answers of the first `lose` (the server did the work). */
  function losingFetch(lose: number, seen: string[]): typeof fetch {
    const inner = checkedFetch(rig, seen);
    let lost = 0;
    return async (input, init) => {
      const res = await inner(input, init);
      if (lost < lose) {
        lost++;
        await res.body?.cancel();
        throw new TypeError("fetch failed: connection reset");
      }
      return res;
    };
  }

  it("a submit whose answer is lost is retried under the same idempotency key: one invocation, one refund", async () => {
    const seen: string[] = [];
    const writ = clientOf(rig, "acme.submit", { fetch: losingFetch(2, seen), retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    const r = await writ.invocations.submit(refundInput(46));
    // Invariant: three requests reached the server, all one request: the last answer is the replay of the first.
    expect(seen.filter((s) => s.startsWith("POST"))).toHaveLength(3);
    expect(r.replayed).toBe(true);
    const all = (await clientOf(rig, "acme.submit").invocations.list({ limit: 500 })).items.filter((i: Invocation) => i.idempotencyKey === r.invocation.idempotencyKey);
    expect(all).toHaveLength(1);
    await rig.work();
    expect((await clientOf(rig, "acme.submit").invocations.get(r.invocation.invocationId)).status).toBe("succeeded");
  });

  it("a vote is not retried: a lost answer surfaces as NETWORK_ERROR after one request", async () => {
    const seen: string[] = [];
    const writ = clientOf(rig, "acme.approve", { fetch: losingFetch(5, seen), retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 5 } });
    await expect(writ.approvals.approve("apr_missing")).rejects.toMatchObject({ code: "NETWORK_ERROR", status: 0 });
    expect(seen).toHaveLength(1);
  });

  it("a 503 is retried a bounded number of times with backoff, honouring Retry-After, then surfaces typed", async () => {
    let calls = 0;
    const unavailable: typeof fetch = async () => {
      calls++;
      return new Response(JSON.stringify({ error: { code: "SERVICE_UNAVAILABLE", message: "store unreachable" } }), { status: 503, headers: { "content-type": "application/json", "retry-after": "0.01" } });
    };
    const writ = clientOf(rig, "acme.submit", { fetch: unavailable, retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 50 } });
    await expect(writ.invocations.list()).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE", status: 503 });
    expect(calls).toBe(3);
  });

  it("an AbortSignal ends a call waiting between retries with ABORTED", async () => {
    let calls = 0;
    const down: typeof fetch = async () => {
      calls++;
      throw new TypeError("fetch failed");
    };
    const writ = clientOf(rig, "acme.submit", { fetch: down, retry: { retries: 5, baseDelayMs: 10_000, maxDelayMs: 10_000 } });
    // The backoff has full jitter: with Math.random() below 0.005 it would end before the abort at
    // 50 ms and a second call would come first (it did, once in a full run). Pin it near the top.
    const random = vi.spyOn(Math, "random").mockReturnValue(0.9);
    try {
      const ac = new AbortController();
      const t0 = Date.now();
      const p = writ.invocations.list({}, { signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await expect(p).rejects.toMatchObject({ code: "ABORTED" });
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(calls).toBe(1);
    } finally {
      random.mockRestore();
    }
  });
});

describe("the long poll's bounds", () => {
  it("is woken by the host's events, not by its re-read: with the re-read an hour away it still answers when a worker moves the invocation", async () => {
    const { waitForInvocation } = await import("../../src/host/wait.js");
    const { invocation } = await clientOf(rig, "acme.submit").invocations.submit(refundInput(47));
    const scope = { tenantId: "acme", spaceId: "prod" };
    const waiting = waitForInvocation(rig.runtime.host, scope, invocation.invocationId, { until: new Set(["succeeded" as const]), ms: 30_000, pollMs: 3_600_000 });
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    await rig.work();
    const r = await waiting;
    expect(r).toMatchObject({ reached: true, invocation: { status: "succeeded" } });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it("a server that closes answers its pending long polls at once (reached: false) instead of waiting them out", async () => {
    const other = await startRig();
    try {
      const { invocation } = await clientOf(other, "acme.submit").invocations.submit(refundInput(48));
      const polled = fetch(`${other.url}/v1/spaces/prod/invocations/${invocation.invocationId}?wait=60&until=final`, { headers: { authorization: `Bearer ${other.keys["acme.submit"]!}` } });
      await new Promise((r) => setTimeout(r, 300));
      const t0 = Date.now();
      const closing = other.server.close();
      const res = await polled;
      await closing;
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ reached: false, invocation: { status: "queued" } });
    } finally {
      await other.close();
    }
  });
});

describe("notifications", () => {
  it("an admin key creates, reads, pauses and deletes a subscription; deliveries list; an unknown delivery is NOT_FOUND", async () => {
    const admin = clientOf(rig, "acme.admin");
    const created = await admin.notifications.subscriptions.create({ url: "https://hooks.example.com/writ", events: ["approval.requested", "invocation.ended"] });
    expect(created.secret).toMatch(/^whsec_/);
    const subId = created.subscription.subscriptionId;
    expect((await admin.notifications.subscriptions.list()).map((s) => s.subscriptionId)).toContain(subId);
    expect((await admin.notifications.subscriptions.get(subId)).events).toEqual(["approval.requested", "invocation.ended"]);
    expect((await admin.notifications.subscriptions.update(subId, { enabled: false })).enabled).toBe(false);
    expect(Array.isArray((await admin.notifications.deliveries.list({ subscriptionId: subId })).items)).toBe(true);
    const missing = await admin.notifications.deliveries.redeliver("dlv_missing").catch((e: unknown) => e);
    expect(isWritApiError(missing, "NOT_FOUND")).toBe(true);
    await admin.notifications.subscriptions.delete(subId);
    const gone = await admin.notifications.subscriptions.get(subId).catch((e: unknown) => e);
    expect(isWritApiError(gone, "NOT_FOUND")).toBe(true);
    // Not an admin: refused, and nothing is created.
    const agent = await clientOf(rig, "acme.submit").notifications.subscriptions.list().catch((e: unknown) => e);
    expect(isWritApiError(agent, "FORBIDDEN")).toBe(true);
  });
});
