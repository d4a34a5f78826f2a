/**
 * Resolving a key a bare boundary execution left unknown, over HTTP
 * (POST /v1/spaces/{spaceId}/boundary/keys/resolve; docs/http-api.md). Invariants: the resolution
 * is journaled with the API key's identity; `succeeded` makes replays answer the resolved result,
 * `failed` lets a later decision retry; bad input is a 4xx with a stable code and changes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealJournalNow } from "../../src/index.js";
import { ACME, call, refund, startRig, type Rig } from "./fixture.js";

let rig: Rig;
beforeAll(async () => {
  rig = await startRig();
});
afterAll(async () => {
  await rig?.close();
});

async function mint(request: Record<string, unknown>): Promise<string> {
  const r = await call(rig, "POST", "/v1/spaces/prod/decisions/evaluate-and-sign", { key: "acme.admin", body: { request } });
  expect(r.status).toBe(200);
  return r.json.decision as string;
}

/** A key whose bare execution answered ambiguously: unknown, refusing RECONCILIATION_PENDING. */
async function unknownKey(): Promise<Record<string, unknown>> {
  const request = refund(7, { mode: "ambiguous" });
  const first = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: await mint(request) } });
  expect(first.json.attempt).toMatchObject({ state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS" });
  const blocked = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: await mint(request) } });
  expect(blocked.json.attempt).toMatchObject({ state: "REFUSED", reasonCode: "RECONCILIATION_PENDING" });
  return request;
}

const keyState = async (request: Record<string, unknown>) => rig.runtime.store.transact((tx) => tx.getIdempotency(ACME, request.action as string, request.idempotencyKey as string));

describe("POST /v1/spaces/{spaceId}/boundary/keys/resolve", () => {
  it("succeeded: journaled with the operator, replays answer the resolved externalRef", async () => {
    const request = await unknownKey();
    const r = await call(rig, "POST", "/v1/spaces/prod/boundary/keys/resolve", {
      key: "acme.operate",
      body: { action: request.action, idempotencyKey: request.idempotencyKey, outcome: "succeeded", externalRef: "re_by_hand", note: "refund seen in the provider console" },
    });
    expect(r.status).toBe(200);
    expect(r.json.idempotency).toMatchObject({ state: "succeeded", action: "payments.refund", idempotencyKey: request.idempotencyKey });
    expect(r.json.attempt).toMatchObject({ state: "UNKNOWN" });
    const replay = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: await mint(request) } });
    expect(replay.json.attempt).toMatchObject({ state: "DUPLICATE", externalRef: "re_by_hand", originalAttemptId: r.json.attempt.attemptId });
    await sealJournalNow(rig.runtime.store, ACME);
    const entries = await rig.runtime.store.transact((tx) => tx.readJournal(ACME, { limit: 10_000 }));
    const e = entries.find((x) => x.type === "key.resolved" && (x.data as { idempotencyKey?: string }).idempotencyKey === request.idempotencyKey);
    expect(e?.data).toMatchObject({ outcome: "succeeded", note: "refund seen in the provider console", by: { type: "user" } });
    // Resolved once: a second resolution is a conflict.
    const again = await call(rig, "POST", "/v1/spaces/prod/boundary/keys/resolve", { key: "acme.operate", body: { action: request.action, idempotencyKey: request.idempotencyKey, outcome: "failed", note: "x" } });
    expect(again.status).toBe(409);
    expect(again.json.error.code).toBe("INVALID_STATE");
  });

  // Invariant: a key a bare execution left unknown is in the reconciliation queue's unknownKeys
  // (not among the invocations' reconciliations) until it is resolved, and never with status=resolved.
  it("an unknown key is listed in GET …/reconciliations until it is resolved", async () => {
    const request = await unknownKey();
    const listed = async (q = ""): Promise<Array<{ idempotencyKey: string; action: string; attemptId: string }>> => {
      const r = await call(rig, "GET", `/v1/spaces/prod/reconciliations${q}`, { key: "acme.operate" });
      expect(r.status).toBe(200);
      return r.json.unknownKeys;
    };
    const mine = (ks: Array<{ idempotencyKey: string }>) => ks.filter((k) => k.idempotencyKey === request.idempotencyKey);
    expect(mine(await listed())).toEqual([expect.objectContaining({ action: "payments.refund", idempotencyKey: request.idempotencyKey, attemptId: expect.stringMatching(/^att_/) })]);
    expect(mine(await listed("?status=open"))).toHaveLength(1);
    expect(await listed("?status=resolved")).toEqual([]);
    const r = await call(rig, "POST", "/v1/spaces/prod/boundary/keys/resolve", { key: "acme.operate", body: { action: request.action, idempotencyKey: request.idempotencyKey, outcome: "failed", note: "nothing at the provider" } });
    expect(r.status).toBe(200);
    expect(mine(await listed())).toEqual([]);
  });

  it("failed: a later decision retries the key", async () => {
    const request = await unknownKey();
    const r = await call(rig, "POST", "/v1/spaces/prod/boundary/keys/resolve", { key: "acme.operate", body: { action: request.action, idempotencyKey: request.idempotencyKey, outcome: "failed", note: "nothing at the provider" } });
    expect(r.status).toBe(200);
    expect(r.json.idempotency.state).toBe("failed");
    // The connector still answers ambiguously for this request: the retry ran (a new attempt, not a refusal).
    const retry = await call(rig, "POST", "/v1/spaces/prod/boundary/execute", { key: "acme.operate", body: { request, decision: await mint(request) } });
    expect(retry.json.attempt).toMatchObject({ state: "UNKNOWN", reasonCode: "OUTCOME_AMBIGUOUS" });
  });

  it("bad input is refused with a stable code and changes nothing", async () => {
    const request = await unknownKey();
    const before = await keyState(request);
    const k = { action: request.action, idempotencyKey: request.idempotencyKey };
    const cases: Array<[string, unknown, number, string]> = [
      ["acme.operate", { ...k, outcome: "maybe", note: "x" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { ...k, outcome: "failed" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { ...k, outcome: "failed", note: " \t" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { ...k, outcome: "failed", note: "x", externalRef: "" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { ...k, outcome: "failed", note: "x", by: "me" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { action: request.action, outcome: "failed", note: "x" }, 400, "VALIDATION_FAILED"],
      ["acme.operate", { ...k, outcome: "succeeded", note: "no reference" }, 400, "INVALID_ARGUMENT"],
      ["acme.operate", { ...k, idempotencyKey: "never-used", outcome: "failed", note: "x" }, 404, "NOT_FOUND"],
      ["acme.submit", { ...k, outcome: "failed", note: "x" }, 403, "FORBIDDEN"],
    ];
    for (const [key, body, status, code] of cases) {
      const r = await call(rig, "POST", "/v1/spaces/prod/boundary/keys/resolve", { key, body });
      expect([r.status, r.json?.error?.code], JSON.stringify(body)).toEqual([status, code]);
    }
    expect(await keyState(request)).toEqual(before);
  });
});
