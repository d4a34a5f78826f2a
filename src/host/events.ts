/** Host events: one per transition, to `onEvent`, the logger and (via telemetry) spans. */
import type { InvocationStatus, Json, Scope } from "../core/types.js";

export interface HostEvent {
  type: string;
  scope: Scope;
  invocationId: string;
  at: number;
  status?: InvocationStatus;
  from?: InvocationStatus;
  data?: Json;
}
