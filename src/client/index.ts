/**
 * `writ/client`: a typed client for Writ's HTTP API over `fetch` (no Node built-in), and the
 * governed tools the agent framework adapters (`writ/ai-sdk`, `writ/openai-agents`,
 * `writ/langchain`) are made from. docs/client.md.
 */
export { createClient, newIdempotencyKey, type CallOptions, type RetryOptions, type SubmitInput, type WaitOptions, type WaitUntil, type WritClient, type WritClientOptions } from "./client.js";
export { CLIENT_ERROR_CODES, WritApiError, isWritApiError, type ApiErrorCode, type ClientErrorCode, type WritErrorCode } from "./errors.js";
export type {
  ActionRequest,
  AnswerOf,
  Approval,
  Attempt,
  BodyOf,
  Breaker,
  EarlyCompletionList,
  GrantedAction,
  Health,
  Invocation,
  InvocationStatus,
  JournalEntry,
  JournalPage,
  JournalVerification,
  Jwks,
  KeyResolution,
  OperationId,
  Preview,
  QueryOf,
  Reconciliation,
  SignedDecision,
  UnknownKey,
} from "./types.js";
export type { components, operations, paths } from "./openapi.js";
export { STATUS_TOOL_NAME, governedTools, outcomeOf, toolCallKey, toolNameOf, type GovernedTool, type GovernedToolsOptions, type ToolCall, type ToolOutcome } from "./tools.js";
