/**
 * Request admission, written once (docs/boundary.md, check 1): shape, known action and version,
 * request digest, params against the action's Standard Schema. The boundary refuses with
 * `REQUEST_MALFORMED` and the message; the host and the HTTP server answer `VALIDATION_FAILED`.
 */
import type { ActionDefinition } from "./action.js";
import { canonicalizeFields } from "./canonical.js";
import { base64url } from "./encoding.js";
import { errorMessage } from "./errors.js";
import type { CryptoPort } from "./ports.js";
import { validateStandard } from "./standard-schema.js";
import type { ActionRequest } from "./types.js";
import { checkRequest } from "./validate.js";

/** Why a request was not admitted; `message` is the boundary's refusal text. */
export type AdmissionProblem =
  | { ok: false; problem: "shape"; message: string }
  | { ok: false; problem: "action" | "version"; message: string; req: ActionRequest }
  | { ok: false; problem: "digest"; message: string; req: ActionRequest }
  | { ok: false; problem: "params"; message: string; issues: string[]; req: ActionRequest; action: ActionDefinition<unknown>; digest: string };

export type Admission = { ok: true; req: ActionRequest; action: ActionDefinition<unknown>; digest: string } | AdmissionProblem;

/**
 * The request digest of a value `checkRequest` returned. Its deep frozen plain-JSON snapshot has
 * already refused everything the strict canonicaliser refuses (getters, symbols, holes,
 * `__proto__`, non-finite numbers, undefined, depth beyond 128), so the canonical form of trusted
 * data gives the same text as `computeRequestDigest`, at a fraction of the cost.
 */
function checkedRequestDigest(crypto: CryptoPort, req: ActionRequest): string {
  // `checkRequest` builds the snapshot with exactly these fields: they are written in canonical order, unsorted.
  const text = canonicalizeFields(REQUEST_KEYS, [req.action, req.actionVersion, req.actor, req.authorityRef, req.idempotencyKey, req.params, req.spaceId, req.tenantId]);
  return "sha256:" + base64url(crypto.sha256(text));
}

/** A request's fields in canonical (UTF-16 code unit) order. */
const REQUEST_KEYS = ["action", "actionVersion", "actor", "authorityRef", "idempotencyKey", "params", "spaceId", "tenantId"] as const;

/**
 * Admits `input` as a request for one of `actions`: never throws (a throwing params schema is an
 * issue). The request returned is the frozen snapshot that was checked; the digest is over it.
 * @example
 * const a = await admitRequest(crypto, input, actions);
 * if (!a.ok) throw new WritError("VALIDATION_FAILED", a.message);
 */
export async function admitRequest(crypto: CryptoPort, input: unknown, actions: ReadonlyMap<string, ActionDefinition<unknown>>): Promise<Admission> {
  const rq = checkRequest(input);
  if (!rq.ok) return { ok: false, problem: "shape", message: rq.message };
  const req = rq.value;
  const action = actions.get(req.action);
  if (!action) return { ok: false, problem: "action", message: `unknown action ${req.action}`, req };
  if (action.version !== req.actionVersion) {
    return { ok: false, problem: "version", message: `action ${req.action} is at version ${action.version}, not ${req.actionVersion}`, req };
  }
  let digest: string;
  try {
    digest = checkedRequestDigest(crypto, req);
  } catch (e) {
    return { ok: false, problem: "digest", message: errorMessage(e), req };
  }
  let issues: string[] | null;
  try {
    const v = await validateStandard(action.params, req.params);
    issues = v.ok ? null : v.issues;
  } catch (e) {
    issues = [`params schema threw: ${errorMessage(e)}`];
  }
  if (issues !== null) return { ok: false, problem: "params", message: `invalid params: ${issues.join("; ")}`, issues, req, action, digest };
  return { ok: true, req, action, digest };
}
