/**
 * The policy matrix: principals x actions x params x authority states, each row with its expected
 * result and determining @ids, run against the engine with the schema and without it (the same
 * policies must decide the same way). Then the authority cross-product: every row that is not
 * denied under an active authority is denied by "authority-required" under every other state.
 */
import { describe, expect, it } from "vitest";
import type { DecisionResult, Json, Scope } from "../../src/core/types.js";
import { cedarPolicy, type CedarPolicyEngine } from "../../src/policy/index.js";
import { ACME, ACTORS, AUTHORITY_STATES, ENTITIES, POLICIES, SCHEMA, input, request, type ActorName, type AuthorityState } from "./fixture.js";

interface Row {
  actor: ActorName;
  action: string;
  params: { [k: string]: Json };
  authority?: AuthorityState;
  scope?: Scope;
  result: DecisionResult;
  /** Determining policy ids, in policy text order; [] = no policy applied (default deny). */
  ids: string[];
}

const refund = (amount: number): { [k: string]: Json } => ({ amount, currency: "EUR" });
const OTHER_TENANT: Scope = { tenantId: "globex", spaceId: "prod" };

// prettier-ignore
const ROWS: Row[] = [
  // payments.refund: agents alone below 101, approval above, forbidden over the authority's limit.
  { actor: "bot",   action: "payments.refund", params: refund(50),   result: "ALLOW",            ids: ["refund-small"] },
  { actor: "bot",   action: "payments.refund", params: refund(100),  result: "ALLOW",            ids: ["refund-small"] },
  { actor: "bot",   action: "payments.refund", params: refund(101),  result: "REQUIRE_APPROVAL", ids: ["refund-large"] },
  { actor: "bot",   action: "payments.refund", params: refund(1000), result: "REQUIRE_APPROVAL", ids: ["refund-large"] },
  { actor: "bot",   action: "payments.refund", params: refund(1001), result: "DENY",             ids: ["refund-over-limit"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), scope: OTHER_TENANT, result: "DENY", ids: [] },
  { actor: "alice", action: "payments.refund", params: refund(50),   result: "DENY",             ids: [] },
  { actor: "alice", action: "payments.refund", params: refund(500),  result: "REQUIRE_APPROVAL", ids: ["refund-large"] },
  { actor: "cron",  action: "payments.refund", params: { amount: 5000, currency: "EUR", note: "n" }, result: "DENY", ids: ["refund-over-limit"] },
  // payments.charge: the billing role, in EUR or USD.
  { actor: "alice", action: "payments.charge", params: refund(20),   result: "ALLOW",            ids: ["charge-billing"] },
  { actor: "alice", action: "payments.charge", params: { amount: 20, currency: "GBP" }, result: "DENY", ids: [] },
  { actor: "cron",  action: "payments.charge", params: { amount: 20, currency: "USD" }, result: "ALLOW", ids: ["charge-billing"] },
  { actor: "bob",   action: "payments.charge", params: refund(20),   result: "DENY",             ids: [] },
  { actor: "bot",   action: "payments.charge", params: refund(20),   result: "DENY",             ids: [] },
  // repo.delete: users with approval; never prod-* (forbid beats the approval permit).
  { actor: "alice", action: "repo.delete",     params: { repo: "docs" },    result: "REQUIRE_APPROVAL", ids: ["repo-delete"] },
  { actor: "bob",   action: "repo.delete",     params: { repo: "docs" },    result: "REQUIRE_APPROVAL", ids: ["repo-delete"] },
  { actor: "alice", action: "repo.delete",     params: { repo: "prod-db" }, result: "DENY",             ids: ["no-prod-deletes"] },
  { actor: "bot",   action: "repo.delete",     params: { repo: "docs" },    result: "DENY",             ids: [] },
  { actor: "cron",  action: "repo.delete",     params: { repo: "prod-x" },  result: "DENY",             ids: ["no-prod-deletes"] },
  // reports.read: anyone, unless tagged secret.
  { actor: "bot",   action: "reports.read",    params: { report: "daily" }, result: "ALLOW", ids: ["reports-read"] },
  { actor: "bob",   action: "reports.read",    params: { report: "daily", tags: ["secret", "q3"] }, result: "DENY", ids: [] },
  { actor: "cron",  action: "reports.read",    params: { report: "daily", tags: ["public"] }, result: "ALLOW", ids: ["reports-read"] },
  // Authority states.
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "narrow",      result: "DENY",  ids: ["authority-required"] },
  { actor: "bot",   action: "reports.read",    params: { report: "daily" }, authority: "narrow", result: "ALLOW", ids: ["reports-read"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "suspended",   result: "DENY",  ids: ["authority-required"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "revoked",     result: "DENY",  ids: ["authority-required"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "missing",     result: "DENY",  ids: ["authority-required"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "foreign",     result: "DENY",  ids: ["authority-required"] },
  { actor: "bot",   action: "payments.refund", params: refund(50), authority: "other-scope", result: "DENY",  ids: ["authority-required"] },
  // Several forbids determine together, in policy text order.
  { actor: "bot",   action: "payments.refund", params: refund(5000), authority: "suspended", result: "DENY", ids: ["authority-required", "refund-over-limit"] },
  { actor: "alice", action: "repo.delete",     params: { repo: "prod-x" }, authority: "missing", result: "DENY", ids: ["authority-required", "no-prod-deletes"] },
];

const ENGINES: [string, CedarPolicyEngine][] = [
  ["with schema", cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES })],
  ["without schema", cedarPolicy({ policies: POLICIES, entities: ENTITIES })],
];

function label(r: Row): string {
  return `${r.actor} ${r.action} ${JSON.stringify(r.params)} authority=${r.authority ?? "active"}${r.scope ? ` in ${r.scope.tenantId}` : ""} -> ${r.result} [${r.ids.join(", ")}]`;
}

async function check(engine: CedarPolicyEngine, r: Row, authority: AuthorityState, expected: { result: DecisionResult; ids: string[] }): Promise<void> {
  const req = request(ACTORS[r.actor], r.action, r.params, r.scope ?? ACME);
  const out = await engine.evaluate(input(req, authority));
  const ids = new Set(engine.prepared.policyIds);
  expect(out.result).toBe(expected.result);
  expect(out.policyRef).toBe(engine.policyRef);
  // Reasons open with the determining policies, in policy text order.
  expect(out.reasons.slice(0, expected.ids.length)).toEqual(expected.ids);
  expect(out.reasons.filter((x) => ids.has(x))).toEqual(expected.ids);
  if (expected.ids.length === 0) expect(out.reasons[0]).toMatch(/^no policy permits /);
  if (expected.result === "REQUIRE_APPROVAL") expect(out.approval).toBeDefined();
  else expect(out.approval).toBeUndefined();
}

describe.each(ENGINES)("cedar policy matrix (%s)", (_name, engine) => {
  it.each(ROWS.map((r) => [label(r), r] as const))("%s", async (_l, r) => {
    await check(engine, r, r.authority ?? "active", r);
  });

  // Invariant: without an active authority covering the action, nothing is allowed or sent for approval.
  const notDenied = ROWS.filter((r) => (r.authority ?? "active") === "active" && r.result !== "DENY");
  const cross = notDenied.flatMap((r) => AUTHORITY_STATES.filter((s) => s !== "active" && !(s === "narrow" && r.action.startsWith("reports."))).map((s) => [`${label(r)} | under ${s}`, r, s] as const));
  it.each(cross)("%s -> DENY [authority-required]", async (_l, r, s) => {
    await check(engine, r, s, { result: "DENY", ids: ["authority-required"] });
  });

  it("covers every principal, action and authority state", () => {
    expect(new Set(ROWS.map((r) => r.actor))).toEqual(new Set(Object.keys(ACTORS)));
    expect(new Set(ROWS.map((r) => r.action)).size).toBe(4);
    expect(new Set(ROWS.map((r) => r.authority ?? "active"))).toEqual(new Set(AUTHORITY_STATES));
    expect(cross.length).toBeGreaterThan(40);
  });
});

describe("authority notes", () => {
  // Invariant: a DENY says when the authority was missing or not the request's, after the policy ids.
  it("a missing or foreign authority is named after the determining policies", async () => {
    const engine = ENGINES[0]![1];
    const req = request(ACTORS.bot, "payments.refund", refund(50));
    const missing = await engine.evaluate(input(req, "missing"));
    expect(missing.reasons).toEqual(["authority-required", "authority auth-1 not found; evaluated without it"]);
    const foreign = await engine.evaluate(input(req, "foreign"));
    expect(foreign.reasons[0]).toBe("authority-required");
    expect(foreign.reasons[1]).toMatch(/^authority auth-1 is not held by this actor/);
  });
});
