/**
 * A Cedar policy set (and optional schema) parsed, validated and cached once, evaluated many times.
 *
 * `prepareCedarPolicySet` is the unit a versioned-per-scope engine holds: one prepared set per
 * policy version, keyed by its `policyRef`. `cedarPolicy` (cedar-engine.ts) wraps one of them.
 */
import { computeRequestDigest, digestOf } from "../core/digest.js";
import { WritError, errorMessage, isWritError } from "../core/errors.js";
import type { PolicyInput, PolicyResult } from "../core/policy.js";
import type { CryptoPort } from "../core/ports.js";
import type { Approval } from "../core/types.js";
import { mergeApprovalSpecs, readMeta, type ApprovalSpec, type PolicyMeta } from "./cedar-annotations.js";
import { actionEntity, actorEntity, approvalGranted, authorityBelongs, buildContext, scopeEntities, spaceEntity } from "./cedar-request.js";
import { MAX_REASON, fmtError, fmtParseError, invalid } from "./cedar-diagnostics.js";
import { checkSchemaDeclarations, normalSchema, type NormalSchema } from "./cedar-schema.js";
import { CedarValueError } from "./cedar-values.js";
import {
  cedarDefaultCrypto,
  policySetTextToParts,
  policyToJson,
  preparsePolicySet,
  preparseSchema,
  statefulIsAuthorized,
  validate,
  type EntityJson,
  type SchemaJson,
  type StatefulAuthorizationCall,
} from "./cedar-wasm.js";

/**
 * A Cedar schema: Cedar schema text, JSON schema text (a string starting with `{`), or the JSON
 * schema as an object. JSON text and the equal object give the same policyRef.
 */
export type CedarSchemaInput = string | SchemaJson<string>;

/** An entity passed to Cedar (Cedar's JSON entity format). */
export type CedarEntity = EntityJson;

export interface PrepareCedarPolicySetOptions {
  /** Cedar policy text (static policies; templates are refused). */
  policies: string;
  /**
   * Cedar schema. When given, policies are validated against it at construction (strict mode) and
   * every request is validated against it before evaluation (a mismatch denies).
   * @defaultValue none: no validation
   */
  schema?: CedarSchemaInput;
  /** Hashes the policyRef and request digests for approvals. @defaultValue the installed Cedar runtime's (Node: node:crypto) */
  crypto?: CryptoPort;
}

/** A parsed, validated policy set held in cedar-wasm's cache. */
export interface PreparedCedarPolicySet {
  /** `cedar:sha256:<base64url>` of the policy text and schema (see {@link policySetRef}). */
  readonly policyRef: string;
  /** Policy ids reasons use, in text order (`@id`, else `policy<N>`). */
  readonly policyIds: readonly string[];
  /** Validator warnings (e.g. a policy that can never apply), as `<policy id>: <message>`. */
  readonly warnings: readonly string[];
  /** Whether requests are validated against a schema. */
  readonly hasSchema: boolean;
  /** Keys of the prepared set and schema in cedar-wasm's cache (for benchmarks and diagnostics). */
  readonly cedar: { readonly policySetId: string; readonly schemaName?: string };
  /**
   * Evaluates synchronously; never throws: anything that prevents a clean evaluation denies, with
   * the problem as the reason. `entities` are added to the request's space and tenant.
   */
  evaluate(input: PolicyInput, entities?: readonly CedarEntity[]): PolicyResult;
}

function hashRef(crypto: CryptoPort, prefix: string, value: unknown): string {
  try {
    return prefix + digestOf(crypto, value);
  } catch (e) {
    if (isWritError(e, "CANONICAL_JSON")) throw new WritError("INVALID_OPTION", `cedar policy: schema is not plain JSON: ${e.message}`, { cause: e });
    throw e;
  }
}

/**
 * The policyRef of a policy set: `cedar:` + `sha256:<base64url>` over the RFC 8785 canonical form
 * of `{ policies, schema }` (`schema` null when absent; a JSON schema hashed as parsed JSON, so its
 * whitespace and key order do not matter; Cedar text is hashed as written). Stable across calls,
 * processes and machines.
 * @example
 * policySetRef('permit(principal, action, resource);') // "cedar:sha256:…"
 */
export function policySetRef(policies: string, schema?: CedarSchemaInput, crypto: CryptoPort = cedarDefaultCrypto()): string {
  return refOf(policies, normalSchema(schema), crypto);
}

function refOf(policies: unknown, schema: NormalSchema | null, crypto: CryptoPort): string {
  if (typeof policies !== "string") throw new WritError("INVALID_OPTION", "cedar policy: policies must be Cedar policy text (a string)");
  return hashRef(crypto, "cedar:", { policies, schema: schema?.hashed ?? null });
}

/** The ids Cedar assigns to a policy set's text: policy0, policy1, … in text order. */
function cedarAssignedIds(n: number): string[] {
  // policySetTextToParts returns the parts sorted by id, i.e. lexicographically: policy0,
  // policy1, policy10, policy11, …, policy2. Map each sorted position back to its id.
  return Array.from({ length: n }, (_, i) => `policy${i}`).sort();
}

function parsePolicies(policies: string): { texts: Record<string, string>; metas: PolicyMeta[] } {
  const parts = policySetTextToParts(policies);
  if (parts.type === "failure") invalid("policies do not parse", parts.errors.map((e) => fmtParseError(e, policies)));
  if (parts.policy_templates.length > 0) invalid("policies", [`${parts.policy_templates.length} template(s) found; only static policies are supported (no ?principal / ?resource slots)`]);
  const ids = cedarAssignedIds(parts.policies.length);
  const problems: string[] = [];
  const metas: PolicyMeta[] = [];
  const textsById = new Map<string, string>();
  parts.policies.forEach((text, k) => {
    const fallback = ids[k]!;
    const index = Number(fallback.slice("policy".length));
    const json = policyToJson(text);
    if (json.type === "failure") {
      problems.push(`${fallback}: ${json.errors.map(fmtError).join("; ")}`);
      return;
    }
    // Cedar reports a value-less annotation (`@approval`) as null, whatever its typings say.
    const meta = readMeta(json.json.annotations, json.json.effect, fallback, index, problems);
    metas.push(meta);
    textsById.set(`${index}`, text);
  });
  metas.sort((a, b) => a.index - b.index);
  const texts: Record<string, string> = {};
  const seen = new Map<string, number>();
  for (const m of metas) {
    const other = seen.get(m.id);
    if (other !== undefined) problems.push(`policy${other} and policy${m.index} (by position) share the id ${JSON.stringify(m.id)}; reasons need unique ids`);
    seen.set(m.id, m.index);
    texts[m.id] = textsById.get(`${m.index}`)!;
  }
  if (problems.length > 0) invalid("policy annotations", problems);
  return { texts, metas };
}

/**
 * Parses, validates and caches a policy set (and schema) once. Throws `WritError("INVALID_OPTION")`
 * naming every problem: policies that do not parse, templates, bad or duplicate annotations, a
 * schema that does not parse or lacks `Writ::Tenant` / `Writ::Space`, policies the schema rejects.
 * @example
 * const v3 = prepareCedarPolicySet({ policies: text, schema });
 * const verdict = v3.evaluate({ request, authority, approval }); // { result, reasons, policyRef }
 */
export function prepareCedarPolicySet(options: PrepareCedarPolicySetOptions): PreparedCedarPolicySet {
  if (typeof options !== "object" || options === null) throw new WritError("INVALID_OPTION", "cedar policy: options must be an object");
  const crypto = options.crypto ?? cedarDefaultCrypto();
  const schema = normalSchema(options.schema);
  const policyRef = refOf(options.policies, schema, crypto);
  const { texts, metas } = parsePolicies(options.policies);
  const warnings: string[] = [];
  let schemaName: string | undefined;
  if (schema) {
    checkSchemaDeclarations(schema.cedar);
    const v = validate({ schema: schema.cedar, policies: { staticPolicies: texts }, validationSettings: { mode: "strict" } });
    if (v.type === "failure") invalid("schema or policies do not parse", v.errors.map(fmtError));
    if (v.validationErrors.length > 0) invalid("policies do not validate against the schema", v.validationErrors.map((e) => `${e.policyId}: ${fmtError(e.error)}`));
    for (const w of v.validationWarnings) warnings.push(`${w.policyId}: ${fmtError(w.error)}`);
    for (const w of v.otherWarnings) warnings.push(fmtError(w));
    schemaName = hashRef(crypto, "cedar-schema:", schema.hashed);
    const s = preparseSchema(schemaName, schema.cedar);
    if (s.type === "failure") invalid("schema does not parse", s.errors.map(fmtError));
  }
  const p = preparsePolicySet(policyRef, { staticPolicies: texts });
  if (p.type === "failure") invalid("policies do not parse", p.errors.map(fmtError));

  const byId = new Map(metas.map((m) => [m.id, m]));
  const order = (id: string): number => byId.get(id)?.index ?? Number.MAX_SAFE_INTEGER;
  const sortIds = (ids: readonly string[]): string[] => [...ids].sort((a, b) => order(a) - order(b) || (a < b ? -1 : a > b ? 1 : 0));

  const evaluate = (input: PolicyInput, entities: readonly CedarEntity[] = []): PolicyResult => {
    const notes: string[] = [];
    const deny = (reasons: string[]): PolicyResult => ({ result: "DENY", reasons: [...reasons, ...notes], policyRef });
    try {
      const { request } = input;
      if (input.authority && !authorityBelongs(input.authority, input)) notes.push(`authority ${request.authorityRef} is not held by this actor in this scope; evaluated without it`);
      else if (!input.authority) notes.push(`authority ${request.authorityRef} not found; evaluated without it`);
      let digest: string | undefined;
      const approval: Approval | null = approvalGranted(input.approval, input, () => (digest ??= computeRequestDigest(crypto, request))) ? input.approval : null;
      let context;
      try {
        context = buildContext(input, approval);
      } catch (e) {
        if (e instanceof CedarValueError) return deny([`cannot evaluate: ${e.message}`]);
        throw e;
      }
      const call: StatefulAuthorizationCall = {
        principal: actorEntity(request.actor),
        action: actionEntity(request.action),
        resource: spaceEntity(request),
        context,
        preparsedPolicySetId: policyRef,
        entities: entities.length === 0 ? scopeEntities(request) : [...scopeEntities(request), ...entities],
      };
      if (schemaName !== undefined) {
        call.preparsedSchemaName = schemaName;
        call.validateRequest = true;
      }
      const answer = statefulIsAuthorized(call);
      if (answer.type === "failure") return deny(answer.errors.map((e) => `request rejected by Cedar: ${fmtError(e)}`));
      const { decision, diagnostics } = answer.response;
      if (diagnostics.errors.length > 0) {
        // Fail closed: an erroring policy (a forbid above all) must not let the others decide.
        const errs = [...diagnostics.errors].sort((a, b) => order(a.policyId) - order(b.policyId));
        const forbids = decision === "deny" ? sortIds(diagnostics.reason) : [];
        return deny([...forbids, ...errs.map((e) => `policy ${e.policyId} failed: ${fmtError(e.error)}`)]);
      }
      const determining = sortIds(diagnostics.reason);
      if (decision === "deny") {
        if (determining.length > 0) return deny(determining);
        return deny([`no policy permits ${request.actor.type} ${JSON.stringify(request.actor.id)} to do ${JSON.stringify(request.action)} in ${request.tenantId}/${request.spaceId}`]);
      }
      const needApproval = determining.filter((id) => byId.get(id)?.approval !== undefined);
      if (needApproval.length > 0 && !approval) {
        const specs: ApprovalSpec[] = needApproval.map((id) => byId.get(id)!.approval!);
        const spec = mergeApprovalSpecs(specs);
        const out: PolicyResult = { result: "REQUIRE_APPROVAL", reasons: needApproval, policyRef };
        if (Object.keys(spec).length > 0) out.approval = spec;
        return out;
      }
      return { result: "ALLOW", reasons: determining, policyRef };
    } catch (e) {
      return deny([`policy evaluation failed: ${errorMessage(e).slice(0, MAX_REASON)}`]);
    }
  };

  return Object.freeze({
    policyRef,
    policyIds: Object.freeze(metas.map((m) => m.id)),
    warnings: Object.freeze(warnings),
    hasSchema: schemaName !== undefined,
    cedar: Object.freeze(schemaName === undefined ? { policySetId: policyRef } : { policySetId: policyRef, schemaName }),
    evaluate,
  });
}
