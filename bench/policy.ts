/**
 * Cedar policy engine throughput, measured side by side in interleaved rounds (medians):
 *
 * - raw: one `statefulIsAuthorized` call against the pre-parsed set (the cedar-wasm floor);
 * - engine: `cedarPolicy(...).evaluate` alone (mapping, conversion, diagnostics, reasons);
 * - engine + sign: `evaluate` and `signDecision` (Ed25519 JWS) per decision, what the host pays;
 * - re-parse: `isAuthorized` given the policy text and schema on every call (no pre-parsing).
 */
import { isAuthorized, statefulIsAuthorized, type StatefulAuthorizationCall } from "@cedar-policy/cedar-wasm/nodejs";
import { generateSigningKey, requestDigest, signDecision } from "../src/index.js";
import { cedarPolicy } from "../src/policy/index.js";
import { actionEntity, actorEntity, buildContext, scopeEntities, spaceEntity } from "../src/policy/cedar-request.js";
import type { PolicyInput, PolicyResult } from "../src/core/policy.js";
import { ACTORS, ENTITIES, POLICIES, SCHEMA, input, request } from "../tests/policy/fixture.js";
import { median, rateSync } from "./lib.js";

export interface PolicyBenchResult {
  rawPerSec: number;
  evaluatePerSec: number;
  evaluateSignPerSec: number;
  reparsePerSec: number;
  /** engine + sign / raw cedar call. */
  ratio: number;
  /** engine evaluate alone / raw cedar call. */
  evaluateRatio: number;
  /** raw (pre-parsed) / re-parse per call. */
  preparseSpeedup: number;
  policies: number;
  rounds: { raw: number; evaluate: number; evaluateSign: number; reparse: number }[];
}

export async function benchPolicy(rounds: number): Promise<PolicyBenchResult> {
  // The reference policy set of the tests (8 policies, schema, role entities).
  const engine = cedarPolicy({ policies: POLICIES, schema: SCHEMA, entities: ENTITIES });
  const key = generateSigningKey({ kid: "bench" });
  // Four refunds cycled, all ALLOW (the path the host signs); digests are computed at admission, outside the timing.
  const inputs: PolicyInput[] = [5, 40, 99, 100].map((amount) => input(request(ACTORS.bot, "payments.refund", { amount, currency: "EUR" })));
  const digests = inputs.map((i) => requestDigest(i.request));
  for (const i of inputs) {
    const v = await engine.evaluate(i);
    if (v.result !== "ALLOW") throw new Error(`bench input not allowed: ${v.reasons.join("; ")}`);
  }
  // The same Cedar requests the engine builds, prebuilt: the raw call pays only cedar-wasm.
  const rawCalls: StatefulAuthorizationCall[] = inputs.map((i) => ({
    principal: actorEntity(i.request.actor),
    action: actionEntity(i.request.action),
    resource: spaceEntity(i.request),
    context: buildContext(i, null),
    entities: [...scopeEntities(i.request), ...ENTITIES],
    preparsedPolicySetId: engine.prepared.cedar.policySetId,
    preparsedSchemaName: engine.prepared.cedar.schemaName!,
    validateRequest: true,
  }));
  for (const c of rawCalls) {
    const a = statefulIsAuthorized(c);
    if (a.type !== "success" || a.response.decision !== "allow") throw new Error("raw bench call not allowed");
  }

  // With static entities, evaluate answers synchronously: no promise hop on the host's hot path.
  const evaluateSync = (i: PolicyInput): PolicyResult => {
    const v = engine.evaluate(i);
    if (v instanceof Promise) throw new Error("expected a synchronous evaluate");
    return v;
  };
  let k = 0;
  const raw = (): void => {
    const a = statefulIsAuthorized(rawCalls[k++ & 3]!);
    if (a.type !== "success") throw new Error("raw call failed");
  };
  const evaluate = (): void => {
    const v = evaluateSync(inputs[k++ & 3]!);
    if (v.result !== "ALLOW") throw new Error("evaluate did not allow");
  };
  const evaluateSign = (): void => {
    const i = k++ & 3;
    const v = evaluateSync(inputs[i]!);
    const r = inputs[i]!.request;
    const token = signDecision(key, { result: v.result, requestDigest: digests[i]!, tenantId: r.tenantId, spaceId: r.spaceId, authorityRef: r.authorityRef, policyRef: v.policyRef, reasons: v.reasons });
    if (token.length < 100) throw new Error("no token");
  };
  const reparse = (): void => {
    const c = rawCalls[k++ & 3]!;
    const a = isAuthorized({ principal: c.principal, action: c.action, resource: c.resource, context: c.context, entities: c.entities, policies: { staticPolicies: POLICIES }, schema: SCHEMA, validateRequest: true });
    if (a.type !== "success") throw new Error("re-parse call failed");
  };

  for (const f of [raw, evaluate, evaluateSign, reparse]) rateSync(f, 300); // warm-up (JIT, wasm)
  const out: PolicyBenchResult["rounds"] = [];
  for (let r = 0; r < rounds; r++) {
    out.push({ raw: rateSync(raw, 600), evaluate: rateSync(evaluate, 600), evaluateSign: rateSync(evaluateSign, 600), reparse: rateSync(reparse, 600) });
  }
  return {
    rawPerSec: median(out.map((r) => r.raw)),
    evaluatePerSec: median(out.map((r) => r.evaluate)),
    evaluateSignPerSec: median(out.map((r) => r.evaluateSign)),
    reparsePerSec: median(out.map((r) => r.reparse)),
    ratio: median(out.map((r) => r.evaluateSign / r.raw)),
    evaluateRatio: median(out.map((r) => r.evaluate / r.raw)),
    preparseSpeedup: median(out.map((r) => r.raw / r.reparse)),
    policies: engine.prepared.policyIds.length,
    rounds: out,
  };
}
