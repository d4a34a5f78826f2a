/** What route handlers share: the runtime, its ports, the app's options and metrics. */
import type { Clock, CryptoPort, Random } from "../core/ports.js";
import type { ActionRequest, Invocation, Json } from "../core/types.js";
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
}

/**
 * The complete request of a caller: tenant from the API key, space from the path. A body that
 * names another tenant is refused (403), another space than the path's is bad input (400).
 */
export function requestOf(body: ActionRequestBody, caller: Caller): ActionRequest {
  const { tenantId, spaceId } = caller.scope;
  if (body.tenantId !== undefined && body.tenantId !== tenantId) throw new ApiError("FORBIDDEN", "the request names another tenant than the API key's");
  if (body.spaceId !== undefined && body.spaceId !== spaceId) throw new ApiError("VALIDATION_FAILED", "the request's spaceId differs from the space in the path");
  return {
    tenantId,
    spaceId,
    action: body.action,
    actionVersion: body.actionVersion,
    actor: { type: body.actor.type, id: body.actor.id },
    authorityRef: body.authorityRef,
    params: body.params as { [k: string]: Json },
    idempotencyKey: body.idempotencyKey,
  };
}

/** An invocation as the API shows it: the lease token (a fencing credential) is never shown. */
export function invocationView(inv: Invocation): Omit<Invocation, "leaseToken"> {
  const { leaseToken: _token, ...rest } = inv;
  return rest;
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError("NOT_FOUND", `no ${what} ${id} in this space`);
}
