/**
 * JSON Schemas of MCP tools: the input schema from an action's params schema (the Standard JSON
 * Schema interface where the library has it, zod 4 has), and one output schema for every Writ
 * tool result (docs/mcp.md, "What the agent sees").
 */
import type { ActionDefinition } from "../core/action.js";
import { INVOCATION_STATUSES } from "../core/types.js";

export type JsonSchemaObject = { type: "object"; properties?: Record<string, object>; required?: string[]; [k: string]: unknown };

interface StandardJsonSchema {
  jsonSchema?: { input?: (options: { target: string }) => unknown };
}

/**
 * The tool input schema of an action: JSON Schema (draft 2020-12) generated from its params
 * schema. A schema library without the Standard JSON Schema interface, or a params schema that is
 * not an object, gives `{ type: "object" }` with the action's description of it; Writ validates
 * the arguments with the params schema either way.
 */
export function inputSchemaOf(action: ActionDefinition<unknown>): JsonSchemaObject {
  const std = action.params["~standard"] as StandardJsonSchema;
  let generated: unknown;
  try {
    generated = std.jsonSchema?.input?.({ target: "draft-2020-12" });
  } catch {
    generated = undefined;
  }
  if (typeof generated === "object" && generated !== null && (generated as { type?: unknown }).type === "object") {
    return generated as JsonSchemaObject;
  }
  return { type: "object", description: "Parameters of the action (validated by Writ with the action's params schema)." };
}

const STRING = { type: "string" } as const;

/** The structured result of every Writ tool (action tools and `writ_invocation_status`). */
export const RESULT_SCHEMA: JsonSchemaObject = {
  type: "object",
  properties: {
    invocationId: { ...STRING, description: "The Writ invocation (also the MCP task id)." },
    action: STRING,
    status: { type: "string", enum: [...INVOCATION_STATUSES], description: "The invocation's state in Writ." },
    replayed: { type: "boolean", description: "True when this call matched an earlier one with the same idempotency key: nothing new was done." },
    outputs: { description: "Outputs of the action's steps by step name (succeeded only; sensitive values redacted)." },
    reasons: { type: "array", items: STRING, description: "Policy reasons (denied) or other reasons." },
    error: { ...STRING, description: "What went wrong (failed, reconciliation_required)." },
    approval: {
      type: "object",
      properties: {
        approvalId: STRING,
        approverRoles: { type: "array", items: STRING },
        quorum: { type: "integer" },
        votes: { type: "integer" },
        expiresAt: { ...STRING, description: "ISO 8601: after this the request is denied." },
      },
      required: ["approvalId", "approverRoles", "quorum", "expiresAt"],
    },
    reconciliationId: STRING,
    retry: {
      type: "string",
      enum: ["not_needed", "wait", "do_not_retry", "new_key_may_help", "fix_and_retry"],
      description: "not_needed: done. wait: still in progress, poll writ_invocation_status. do_not_retry: a retry cannot help or could repeat an effect. new_key_may_help: a later call with a new idempotency key may succeed. fix_and_retry: change the arguments.",
    },
    next: { ...STRING, description: "What the agent should do next, in words." },
  },
  required: ["invocationId", "action", "status", "retry", "next"],
};

/** Input schema of `writ_invocation_status`. */
export const STATUS_INPUT_SCHEMA: JsonSchemaObject = {
  type: "object",
  properties: {
    invocationId: { type: "string", minLength: 1, maxLength: 200, description: "The invocationId a Writ tool returned." },
    waitMs: { type: "integer", minimum: 0, maximum: 60000, description: "Wait up to this long for the invocation to change state before answering. Default 0." },
  },
  required: ["invocationId"],
  additionalProperties: false,
};
