/** What route handlers share: the runtime, its ports, the app's options and metrics. */
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import type { ActionRequest, Actor, Invocation, Json } from "../core/types.js";
import { resolveActor } from "../runtime/principals.js";
import type { Logger } from "../host/options.js";
import type { Runtime } from "../runtime/runtime.js";
import type { Caller } from "./auth.js";
import { ApiError } from "./errors.js";
import type { ServerMetrics } from "./metrics.js";
import type { ActionRequestBody } from "./schemas.js";

export interface ServerContext {
  runtime: Runtime;
  /** The host's ports: the server reads time, entropy and crypto where the host does. */
  clock: Clock;
  crypto: CryptoPort;
  random: Random;
  metrics: ServerMetrics;
  log: Logger;
  healthTimeoutMs: number;
  /** Aborts when the server closes: long polls answer at once instead of holding the close up. */
  closing: AbortSignal;
}

/**
 * The complete request of a caller: tenant from the API key, space from the path. A body that
 * names another tenant is refused (403), another space than the path's is bad input (400). The
 * actor is the key's principal when the body names none; a named actor must be the principal or
 * on the key's delegation list (403 otherwise), unless `actor: "named"`: a request whose decision
 * is minted by a policy service (admin) or elsewhere, whose signature binds its actor; there the
 * actor is required and taken as named.
 */
export function requestOf(body: ActionRequestBody, caller: Caller, o: { actor?: "principal" | "named" } = {}): ActionRequest {
  const { tenantId, spaceId } = caller.scope;
  if (body.tenantId !== undefined && body.tenantId !== tenantId) throw new ApiError("FORBIDDEN", "the request names another tenant than the API key's");
  if (body.spaceId !== undefined && body.spaceId !== spaceId) throw new ApiError("VALIDATION_FAILED", "the request's spaceId differs from the space in the path");
  return {
    tenantId,
    spaceId,
    action: body.action,
    actionVersion: body.actionVersion,
    actor: actorOf(body, caller, o.actor ?? "principal"),
    authorityRef: body.authorityRef,
    params: body.params as { [k: string]: Json },
    idempotencyKey: body.idempotencyKey,
  };
}

function actorOf(body: ActionRequestBody, caller: Caller, mode: "principal" | "named"): Actor {
  if (mode === "named") {
    if (body.actor === undefined) throw new ApiError("VALIDATION_FAILED", "the request must name its actor here (the decision's digest covers it)");
    return { type: body.actor.type, id: body.actor.id };
  }
  return resolveActor(caller.key, body.actor);
}

/** An invocation as the API shows it: the lease token (a fencing credential) is never shown. */
export function invocationView(inv: Invocation): Omit<Invocation, "leaseToken"> {
  const { leaseToken: _token, ...rest } = inv;
  return rest;
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError("NOT_FOUND", `no ${what} ${id} in this space`);
}
