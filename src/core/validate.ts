/** Validation of requests and other outside input, with messages that name the problem. */
import { RESERVED_ID_PREFIX, isReservedId } from "./reserved.js";
import { ACTOR_TYPES, type ActionRequest, type Actor } from "./types.js";

export const LIMITS = {
  idempotencyKey: 255,
  id: 200,
  params: 64 * 1024,
} as const;

export type Check<T> = { ok: true; value: T } | { ok: false; message: string };

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const p: unknown = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

function str(o: Record<string, unknown>, k: string, max: number, problems: string[]): void {
  const v = o[k];
  if (typeof v !== "string" || v.length === 0) problems.push(`${k} must be a non-empty string`);
  else if (v.length > max) problems.push(`${k} is longer than ${max} characters`);
}

export function checkActor(v: unknown, path = "actor"): string[] {
  if (!isPlainObject(v)) return [`${path} must be an object { type, id }`];
  const problems: string[] = [];
  if (typeof v.type !== "string" || !(ACTOR_TYPES as readonly string[]).includes(v.type)) {
    problems.push(`${path}.type must be one of ${ACTOR_TYPES.join(", ")}`);
  }
  if (typeof v.id !== "string" || v.id.length === 0 || v.id.length > LIMITS.id) {
    problems.push(`${path}.id must be a non-empty string of at most ${LIMITS.id} characters`);
  }
  for (const k of Object.keys(v)) if (k !== "type" && k !== "id") problems.push(`${path}.${k} is not a known field`);
  return problems;
}

const REQUEST_FIELDS = ["tenantId", "spaceId", "action", "actionVersion", "actor", "authorityRef", "params", "idempotencyKey"];

/** Structural check of a request (not its params schema). Copies the fields it accepts. */
export function checkRequest(v: unknown): Check<ActionRequest> {
  if (!isPlainObject(v)) return { ok: false, message: "request must be a JSON object" };
  const problems: string[] = [];
  let o: Record<string, unknown>;
  try {
    o = { ...v };
  } catch {
    return { ok: false, message: "request could not be read" };
  }
  for (const k of ["tenantId", "spaceId", "action", "actionVersion", "authorityRef"]) str(o, k, LIMITS.id, problems);
  for (const k of ["tenantId", "spaceId"]) {
    const v = o[k];
    if (typeof v === "string" && isReservedId(v)) problems.push(`${k} must not start with ${RESERVED_ID_PREFIX} (reserved for Writ's own journals)`);
  }
  str(o, "idempotencyKey", LIMITS.idempotencyKey, problems);
  problems.push(...checkActor(o.actor));
  if (!isPlainObject(o.params)) problems.push("params must be a JSON object");
  for (const k of Object.keys(o)) if (!REQUEST_FIELDS.includes(k)) problems.push(`${k} is not a known request field`);
  if (problems.length > 0) return { ok: false, message: `malformed request: ${problems.join("; ")}` };
  const actor = o.actor as Actor;
  return {
    ok: true,
    value: {
      tenantId: o.tenantId as string,
      spaceId: o.spaceId as string,
      action: o.action as string,
      actionVersion: o.actionVersion as string,
      actor: { type: actor.type, id: actor.id },
      authorityRef: o.authorityRef as string,
      params: o.params as ActionRequest["params"],
      idempotencyKey: o.idempotencyKey as string,
    },
  };
}
