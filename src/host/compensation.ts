/**
 * Compensation (docs/host.md, Outcomes): after a permanent failure, the `compensate` steps of the steps that
 * succeeded run in reverse order. Each is its own governed execution through the boundary (a
 * derived single-step action `<action>:undo:<step>`, evaluated by policy, under a fresh decision and
 * a stable idempotency key), so a crash mid-way resumes without repeating a finished undo.
 */
import { defineAction, type ActionDefinition } from "../core/action.js";
import { signDecisionWith } from "../core/decision.js";
import { computeRequestDigest, stableId } from "../core/digest.js";
import type { StandardSchemaV1 } from "../core/standard-schema.js";
import { compensationInvocationId } from "../core/invocation.js";
import type { ActionRequest, Fence, Invocation, Json } from "../core/types.js";
import { scopeOf, type HostContext } from "./context.js";
import type { HostEvent } from "./events.js";
import { toReconciliation } from "./reconcile.js";

const anyObject: StandardSchemaV1<unknown, { [k: string]: Json }> = {
  "~standard": {
    version: 1,
    vendor: "writ",
    validate: (v) => (typeof v === "object" && v !== null && !Array.isArray(v) ? { value: v as { [k: string]: Json } } : { issues: [{ message: "expected an object" }] }),
  },
};

export function undoActionId(actionId: string, stepName: string): string {
  return `${actionId}:undo:${stepName}`;
}

/** The idempotency key of the compensation of step `stepName`: stable per (invocation key, step), within the 255-character key limit. */
export function undoKey(ctx: HostContext, inv: Invocation, stepName: string): string {
  return stableId(ctx.o.crypto, `undo:${stepName}:`, [inv.idempotencyKey]);
}

/** The derived single-step actions that run compensations (registered with the boundary). */
export function compensationActions(actions: ReadonlyArray<ActionDefinition<unknown>>): ActionDefinition<unknown>[] {
  const out: ActionDefinition<unknown>[] = [];
  for (const a of actions) {
    for (const s of a.steps) {
      const c = s.compensate;
      if (!c) continue;
      out.push(
        defineAction({
          id: undoActionId(a.id, s.name),
          version: a.version,
          params: anyObject,
          idempotent: true,
          steps: [
            {
              name: `undo-${s.name}`,
              connector: c.connector,
              operation: c.operation,
              input: ({ params }) => {
                const p = params as { params: never; outputs: { [k: string]: Json }; output: Json };
                return c.input ? c.input({ params: p.params, outputs: p.outputs, output: p.output }) : p.output;
              },
            },
          ],
          ...(a.sensitive ? { sensitive: a.sensitive.map((ptr) => ptr.replace(/^\/params/, "/params/params")) } : {}),
        }) as ActionDefinition<unknown>,
      );
    }
  }
  return out;
}

/** Runs pending compensations for `inv` (status running, compensating) and settles it. */
export async function compensate(ctx: HostContext, inv: Invocation, fence: Fence, events: HostEvent[]): Promise<Invocation> {
  const { o } = ctx;
  const store = o.store;
  const scope = scopeOf(inv);
  const action = ctx.actions.get(inv.action)!;
  const rows = await store.transact((tx) => tx.getSteps(scope, inv.invocationId));
  const outputs: { [k: string]: Json } = {};
  for (const r of rows) if (r.status === "succeeded") outputs[r.stepName] = r.output ?? null;
  for (let i = inv.nextStep - 1; i >= 0; i--) {
    const step = action.steps[i]!;
    if (!step.compensate || !(step.name in outputs)) continue;
    const request: ActionRequest = {
      ...scope,
      action: undoActionId(action.id, step.name),
      actionVersion: action.version,
      actor: inv.request.actor,
      authorityRef: inv.request.authorityRef,
      params: { params: inv.request.params, outputs, output: outputs[step.name]! },
      idempotencyKey: undoKey(ctx, inv, step.name),
    };
    const authority = await store.transact((tx) => tx.getAuthority(scope, request.authorityRef));
    const verdict = await o.policy.evaluate({ request, authority });
    if (verdict.result !== "ALLOW") {
      return store.transact((tx) => toReconciliation(ctx, tx, inv, fence, i, "COMPENSATION_NOT_ALLOWED", `compensation of step ${step.name} not allowed by policy: ${verdict.reasons.join("; ")}`, undefined, events));
    }
    const token = signDecisionWith(o.crypto, o.signingKey, {
      v: 1,
      decisionId: ctx.newId("dec_"),
      result: "ALLOW",
      requestDigest: computeRequestDigest(o.crypto, request),
      ...scope,
      authorityRef: request.authorityRef,
      policyRef: verdict.policyRef,
      issuedAt: o.clock.now(),
      reasons: verdict.reasons,
    });
    const a = await ctx.boundary.execute(request, token, { fence, invocationId: compensationInvocationId(inv.invocationId, i) });
    if (a.state === "SUCCEEDED" || a.state === "DUPLICATE") continue;
    const why = `compensation of step ${step.name} ended ${a.state}${a.reasonCode ? ` (${a.reasonCode})` : ""}: ${a.reason ?? ""}`;
    return store.transact((tx) => toReconciliation(ctx, tx, inv, fence, i, a.reasonCode ?? "COMPENSATION_FAILED", why, a.externalRef, events));
  }
  return store.transact((tx) => ctx.transition(tx, inv, "failed", { compensating: false }, { fence, events, data: { compensated: true } }));
}
