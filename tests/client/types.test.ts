/**
 * The client's types follow the OpenAPI document: right calls compile, wrong calls do not. The
 * `@ts-expect-error` lines are checked by `npm run typecheck` (tsconfig includes tests/): if a
 * wrong call ever compiled, the directive would be unused and the typecheck would fail.
 */
import { describe, expectTypeOf, it } from "vitest";
import { createClient, type Invocation, type WritApiError, type WritClient, type WritErrorCode } from "../../src/client/index.js";

const writ: WritClient = createClient({ baseUrl: "http://127.0.0.1:1", apiKey: "writ_x_y", retry: { retries: 0 } });

/** Never called: the calls below exist for the compiler. */
async function wrongCalls(): Promise<void> {
  // @ts-expect-error params is required by the ActionRequest schema
  await writ.invocations.submit({ action: "payments.refund", actionVersion: "1", authorityRef: "a" });
  // @ts-expect-error status must be one of the invocation statuses
  await writ.invocations.list({ status: "done" });
  // @ts-expect-error limit is a number on the typed client
  await writ.invocations.list({ limit: "10" });
  // @ts-expect-error outcome is succeeded or failed
  await writ.reconciliations.resolve("rec_1", { outcome: "maybe", note: "n" });
  // @ts-expect-error a resolution needs a note
  await writ.reconciliations.resolve("rec_1", { outcome: "failed" });
  // @ts-expect-error until names statuses or final/settled
  await writ.invocations.wait("inv_1", { until: "finished" });
  // @ts-expect-error an approval vote takes a note, nothing else
  await writ.approvals.approve("apr_1", { reason: "x" });
  // @ts-expect-error there is no such operation
  await writ.invocations.delete("inv_1");
}

describe("client types", () => {
  it("answers and errors are typed from the document", () => {
    expectTypeOf(writ.invocations.get).returns.resolves.toEqualTypeOf<Invocation>();
    expectTypeOf<Invocation["status"]>().toEqualTypeOf<"queued" | "running" | "succeeded" | "failed" | "denied" | "cancelled" | "awaiting_approval" | "parked" | "reconciliation_required">();
    expectTypeOf(writ.invocations.submit).returns.resolves.toHaveProperty("replayed").toEqualTypeOf<boolean>();
    expectTypeOf(writ.reconciliations.list).returns.resolves.toHaveProperty("unknownKeys");
    expectTypeOf<WritApiError["code"]>().toEqualTypeOf<WritErrorCode>();
    expectTypeOf<"NOT_FOUND">().toMatchTypeOf<WritErrorCode>();
    expectTypeOf(wrongCalls).toBeFunction();
  });
});
