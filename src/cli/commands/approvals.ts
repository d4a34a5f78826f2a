/** `writ approvals ls|approve|deny|revoke`, `writ reconcile ls|resolve|resolve-key` and `writ completions early`: the operator's queues. */
import { APPROVAL_STATUSES, RECONCILIATION_STATUSES, type Approval, type ReconciliationRecord } from "../../core/types.js";
import { intFlag, list, oneOf, required, str } from "../args.js";
import { AS_OPTION, LIMIT_OPTION, QUIET_OPTION, printList, type CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { usageError } from "../exit-codes.js";
import { WritError } from "../../core/errors.js";
import { readCommitted } from "../../core/store.js";
import { brief, time } from "../output.js";
import type { ResolveInput } from "../../host/key-resolution.js";
import { unknownKeyView } from "../../host/reads.js";

function printApprovals(ctx: CliContext, items: readonly Approval[]): void {
  ctx.out.table(items, [
    { header: "approval", value: (a) => a.approvalId },
    { header: "status", value: (a) => (a.status === "closed" && a.closed ? `closed (invocation ${a.closed.invocationStatus})` : a.status) },
    { header: "invocation", value: (a) => a.invocationId ?? "-" },
    { header: "requested by", value: (a) => `${a.requestedBy.type}:${a.requestedBy.id}` },
    { header: "votes", value: (a) => `${a.votes.filter((v) => v.verdict === "approve").length}/${a.quorum}` },
    { header: "roles", value: (a) => a.approverRoles.join(",") },
    // Only an open approval can still expire; a decided one shows when it was decided.
    { header: "expires", value: (a) => (a.status === "pending" ? time(a.expiresAt) : `- (${a.status} ${time(a.updatedAt)})`) },
  ]);
}

export const approvalsLs: CommandBody = {
  options: {
    status: { type: "string", value: "<status>", description: `${APPROVAL_STATUSES.join(", ")} or all (default pending)` },
    invocation: { type: "string", value: "<invocation-id>", description: "only the approval of this invocation" },
    ...LIMIT_OPTION,
    ...QUIET_OPTION,
  },
  details: "With -q and --invocation the output is at most one id, safe for APPROVAL=$(writ approvals ls -q --invocation $INV).",
  async run(ctx) {
    const status = oneOf(ctx.values, "status", [...APPROVAL_STATUSES, "all"]) ?? "pending";
    const limit = intFlag(ctx.values, "limit") ?? 50;
    const invocationId = str(ctx.values, "invocation");
    // Reads only: nothing is created where no store exists yet (docs/cli.md, Start-up).
    const { reads, store } = await ctx.reads();
    const scope = await ctx.scope();
    let items: Approval[];
    if (invocationId !== undefined) {
      const inv = await reads.get(scope, invocationId);
      if (!inv) throw new WritError("NOT_FOUND", `no invocation ${invocationId} in ${scope.tenantId}/${scope.spaceId}`);
      const approvalId = inv.approvalId;
      const approval = approvalId ? await readCommitted(store, (tx) => tx.getApproval(scope, approvalId)) : null;
      items = approval && (status === "all" || approval.status === status) ? [approval] : [];
    } else {
      items = await readCommitted(store, (tx) => tx.listApprovals(scope, { limit, ...(status !== "all" ? { status } : {}) }));
    }
    printList(ctx, { items }, items, (a) => a.approvalId, () => printApprovals(ctx, items));
    if (items.length === 0) await ctx.explainEmpty(`${status === "all" ? "" : `${status} `}approvals${invocationId !== undefined ? ` of ${invocationId}` : ""}`);
  },
};

const VOTE_OPTIONS = {
  ...AS_OPTION,
  role: { type: "string", multiple: true, value: "<role>", description: "a role the operator holds in this scope; repeatable (default: approve)" },
  note: { type: "string", value: "<text>", description: "journaled with the vote" },
} as const;

function vote(verb: "approve" | "deny" | "revoke"): CommandBody {
  return {
    options: VOTE_OPTIONS,
    details: "The CLI talks to the store directly: whoever can run it holds the roles it names. Approvers cannot approve or deny their own request.",
    async run(ctx, p) {
      const id = p[0]!;
      const roles = list(ctx.values, "role");
      const note = str(ctx.values, "note");
      const approver = { actor: ctx.operator(), roles: roles.length > 0 ? roles : ["approve"], ...(note !== undefined ? { note } : {}) };
      const rt = await ctx.runtime();
      const scope = await ctx.scope();
      const ap = await rt.host.approvals[verb](scope, id, approver);
      const inv = ap.invocationId ? await rt.host.get(scope, ap.invocationId) : null;
      ctx.out.result({ approval: ap, invocation: inv }, () => {
        ctx.out.record([
          ["approval", ap.approvalId],
          ["status", ap.status],
          ["votes", `${ap.votes.filter((v) => v.verdict === "approve").length}/${ap.quorum} approvals`],
          ["invocation", inv ? `${inv.invocationId} (now ${inv.status})` : undefined],
        ]);
      });
    },
  };
}

export const approvalsApprove = vote("approve");
export const approvalsDeny = vote("deny");
export const approvalsRevoke = vote("revoke");

function printReconciliations(ctx: CliContext, items: readonly ReconciliationRecord[]): void {
  ctx.out.table(items, [
    { header: "reconciliation", value: (r) => r.reconciliationId },
    { header: "status", value: (r) => r.status },
    { header: "invocation", value: (r) => r.invocationId },
    { header: "step", value: (r) => String(r.stepIndex) },
    { header: "code", value: (r) => r.reasonCode },
    { header: "external ref", value: (r) => r.externalRef ?? "-" },
    { header: "reason", value: (r) => brief(r.reason, 60) },
  ]);
}

export const reconcileLs: CommandBody = {
  options: {
    status: { type: "string", value: "<status>", description: `${RECONCILIATION_STATUSES.join(", ")} or all (default open)` },
    invocation: { type: "string", value: "<invocation-id>", description: "only the reconciliations of this invocation" },
    ...LIMIT_OPTION,
    ...QUIET_OPTION,
  },
  details: "An invocation has at most one open reconciliation: with -q and --invocation the output is at most one id, safe for RECON=$(writ reconcile ls -q --invocation $INV).",
  async run(ctx) {
    const status = oneOf(ctx.values, "status", [...RECONCILIATION_STATUSES, "all"]) ?? "open";
    const limit = intFlag(ctx.values, "limit") ?? 50;
    const invocationId = str(ctx.values, "invocation");
    // Reads only: nothing is created where no store exists yet (docs/cli.md, Start-up).
    const { store } = await ctx.reads();
    const scope = await ctx.scope();
    const filter = { limit, ...(status !== "all" ? { status } : {}), ...(invocationId !== undefined ? { invocationId } : {}) };
    const items = await readCommitted(store, (tx) => tx.listReconciliations(scope, filter));
    // Keys bare boundary executions left unknown belong to the same queue (resolve-key settles them);
    // -q prints reconciliation ids only, so scripts reading one id stay safe.
    const keys = invocationId === undefined && status !== "resolved" ? await readCommitted(store, (tx) => tx.listUnknownKeys(scope, { limit })) : [];
    const unknownKeys = keys.map(unknownKeyView);
    printList(ctx, { items, unknownKeys }, items, (r) => r.reconciliationId, () => {
      if (items.length > 0) printReconciliations(ctx, items);
      if (unknownKeys.length === 0) return;
      if (items.length > 0) ctx.out.line();
      ctx.out.line(`keys left unknown by bare boundary executions (settle with writ reconcile resolve-key --action <action> --key <key> ...):`);
      ctx.out.table(unknownKeys, [
        { header: "action", value: (k) => k.action },
        { header: "key", value: (k) => k.idempotencyKey },
        { header: "attempt", value: (k) => k.attemptId },
        { header: "since", value: (k) => time(k.updatedAt) },
      ]);
    });
    if (items.length === 0 && unknownKeys.length === 0) await ctx.explainEmpty(`${status === "all" ? "" : `${status} `}reconciliations${invocationId !== undefined ? ` of ${invocationId}` : ""}`);
  },
};

const VERDICT_OPTIONS = {
  outcome: { type: "string", value: "succeeded|failed", description: "what really happened at the provider" },
  note: { type: "string", value: "<text>", description: "why you know (required)" },
  "external-ref": { type: "string", value: "<ref>", description: "the provider's reference for the effect, when it succeeded" },
  ...AS_OPTION,
} as const;

/** The operator's verdict from the flags (`reconcile resolve` and `reconcile resolve-key`). */
function verdictOf(ctx: CliContext, where: string): ResolveInput {
  const outcome = oneOf(ctx.values, "outcome", ["succeeded", "failed"] as const);
  if (!outcome) throw usageError(`\`${where}\` needs --outcome succeeded|failed`);
  const note = required(ctx.values, "note", where);
  const externalRef = str(ctx.values, "external-ref");
  return { outcome, note, by: ctx.operator(), ...(externalRef !== undefined ? { externalRef } : {}) };
}

export const completionsEarly: CommandBody = {
  options: { ...LIMIT_OPTION, ...QUIET_OPTION },
  details: "Results are withheld. An early completion is applied when its step parks, or expired (journaled) by the sweep after the host's earlyCompletionRetentionMs (default 7 days).",
  async run(ctx) {
    const limit = intFlag(ctx.values, "limit") ?? 50;
    const rt = await ctx.runtime();
    const items = await rt.host.earlyCompletions(await ctx.scope(), { limit });
    printList(ctx, { items }, items, (c) => c.completionId, () =>
      ctx.out.table(items, [
        { header: "completion", value: (c) => c.completionId },
        { header: "connector", value: (c) => c.connector },
        { header: "reference", value: (c) => brief(c.externalRef, 40) },
        { header: "outcome", value: (c) => c.outcome },
        { header: "received", value: (c) => time(c.receivedAt) },
      ]),
    );
    if (items.length === 0) await ctx.explainEmpty("early completions");
  },
};

export const reconcileResolve: CommandBody = {
  options: VERDICT_OPTIONS,
  async run(ctx, p) {
    const id = p[0]!;
    const verdict = verdictOf(ctx, "writ reconcile resolve");
    const rt = await ctx.runtime();
    const inv = await rt.host.reconcile.resolve(await ctx.scope(), id, verdict);
    ctx.out.result({ invocation: inv }, () =>
      ctx.out.record([
        ["reconciliation", `${id} resolved ${verdict.outcome}`],
        ["invocation", `${inv.invocationId} (now ${inv.status})`],
      ]),
    );
  },
};

export const reconcileResolveKey: CommandBody = {
  options: {
    action: { type: "string", value: "<action>", description: "the key's action (required)" },
    key: { type: "string", value: "<idempotency-key>", description: "the idempotency key (required)" },
    ...VERDICT_OPTIONS,
  },
  details: "succeeded needs --external-ref (what a replay of the key returns); failed lets a new decision retry the key. A key an invocation holds is resolved with `writ reconcile resolve`.",
  async run(ctx) {
    const where = "writ reconcile resolve-key";
    const action = required(ctx.values, "action", where);
    const idempotencyKey = required(ctx.values, "key", where);
    const verdict = verdictOf(ctx, where);
    if (verdict.outcome === "succeeded" && verdict.externalRef === undefined) throw usageError(`\`${where} --outcome succeeded\` needs --external-ref (what a replay of the key returns)`);
    const rt = await ctx.runtime();
    const r = await rt.host.reconcile.resolveKey(await ctx.scope(), { action, idempotencyKey }, verdict);
    ctx.out.result(r, () =>
      ctx.out.record([
        ["key", `${action}/${idempotencyKey} resolved ${verdict.outcome}`],
        ["state", r.idempotency.state],
        ["attempt", r.idempotency.attemptId],
      ]),
    );
  },
};
