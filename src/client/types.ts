/**
 * Names for the generated types (src/client/openapi.ts): the API's schemas, and each operation's
 * query, body and answer, so the client's signatures follow the OpenAPI document.
 */
import type { components, operations } from "./openapi.js";

type Schemas = components["schemas"];

export type Invocation = Schemas["Invocation"];
export type InvocationStatus = Invocation["status"];
export type ActionRequest = Schemas["ActionRequest"];
export type Approval = Schemas["Approval"];
export type Reconciliation = Schemas["Reconciliation"];
export type UnknownKey = Schemas["UnknownKey"];
export type GrantedAction = Schemas["GrantedAction"];
export type JournalEntry = Schemas["JournalEntry"];
export type JournalExportHeader = Schemas["JournalExportHeader"];
export type JournalCheckpoint = Schemas["JournalCheckpoint"];
export type JournalPage = Schemas["JournalPage"];
export type JournalVerification = Schemas["JournalVerification"];
export type Preview = Schemas["Preview"];
export type SignedDecision = Schemas["SignedDecision"];
export type Attempt = Schemas["Attempt"];
export type KeyResolution = Schemas["KeyResolution"];
export type Breaker = Schemas["BreakerList"]["items"][number];
export type EarlyCompletionList = Schemas["EarlyCompletionList"];
export type Jwks = Schemas["Jwks"];
export type Health = Schemas["Health"];

export type OperationId = keyof operations;

/** The JSON body of an operation's request. */
export type BodyOf<K extends OperationId> = NonNullable<operations[K]["requestBody"]> extends { content: { "application/json": infer B } } ? B : never;

/** The query parameters of an operation. */
export type QueryOf<K extends OperationId> = NonNullable<operations[K]["parameters"]["query"]>;

/** The JSON answer of an operation with status `S`. */
export type AnswerOf<K extends OperationId, S extends keyof operations[K]["responses"]> = operations[K]["responses"][S] extends { content: { "application/json": infer B } } ? B : never;
