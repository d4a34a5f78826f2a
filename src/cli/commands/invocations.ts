/** `writ submit`, `writ get`, `writ ls`, `writ cancel`: invocations through the host. */
import type { ActionDefinition } from "../../core/action.js";
import { base64url } from "../../core/encoding.js";
import { readCommitted } from "../../core/store.js";
import { WritError } from "../../core/errors.js";
import { redactFor } from "../../core/redact.js";
import { INVOCATION_STATUSES, TERMINAL_INVOCATION_STATUSES, type Invocation, type InvocationStatus, type Json, type Scope, type StepCheckpoint } from "../../core/types.js";
import { systemRandom } from "../../node/clock.js";
import type { Runtime } from "../../runtime/runtime.js";
import type { Invocation as ApiInvocation, WaitUntil } from "../../client/index.js";
import type { CliContext } from "../context.js";
import { flag, intFlag, oneOf, parseActor, str } from "../args.js";
import { AS_OPTION, LIMIT_OPTION, QUIET_OPTION, printList, type CommandBody } from "../command.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import { jsonObject, readInput } from "../files.js";
import { brief, time, type Printer } from "../output.js";


export const submit: CommandBody = {
  options: {
    file: { type: "string", short: "f", value: "<file>", description: "the request as JSON (\"-\" reads stdin); flags below override its fields" },
    action: { type: "string", value: "<id>", description: "action id, e.g. payments.refund" },
    "action-version": { type: "string", value: "<v>", description: "action version (default: the version the config defines)" },
    actor: { type: "string", value: "<type:id>", description: "who asks, e.g. agent:support-bot" },
    authority: { type: "string", value: "<ref>", description: "the authority the actor acts under" },
    params: { type: "string", value: "<json>", description: "the action's params as a JSON object" },
    "idempotency-key": { type: "string", value: "<key>", description: "dedupe key (default: a new random key, printed; reuse it to retry safely)" },
    wait: { type: "boolean", description: "wait until a worker settles it (succeeded, failed, awaiting approval, ...)" },
    timeout: { type: "string", value: "<seconds>", description: "with --wait: give up after this long (default 30)" },
    ...AS_OPTION,
  },
  details: "Tenant and space come from --tenant/--space unless the file names them. A worker (writ serve or writ worker) runs what is submitted. The operator (--as) is recorded as the submitter and can never approve or deny the request (four eyes).",
  async run(ctx) {
    const v = ctx.values;
    const file = str(v, "file");
    const base: Record<string, unknown> = file !== undefined ? jsonObject(readInput(file, "file"), `--file ${file}`) : {};
    const scope = await ctx.scope();
    const explicitScope = str(v, "tenant") !== undefined || str(v, "space") !== undefined;
    const req: Record<string, unknown> = { ...base };
    if (explicitScope || req.tenantId === undefined) req.tenantId = scope.tenantId;
    if (explicitScope || req.spaceId === undefined) req.spaceId = scope.spaceId;
    const action = str(v, "action");
    if (action !== undefined) req.action = action;
    const actor = str(v, "actor");
    if (actor !== undefined) req.actor = parseActor(actor, "actor");
    const authority = str(v, "authority");
    if (authority !== undefined) req.authorityRef = authority;
    const params = str(v, "params");
    if (params !== undefined) req.params = jsonObject(params, "--params");
    const key = str(v, "idempotency-key");
    if (key !== undefined) req.idempotencyKey = key;
    if (typeof req.action !== "string") throw usageError("`writ submit` needs --action (or a file with an action)");
    if (req.actor === undefined) throw usageError("`writ submit` needs --actor <type:id> (or a file with an actor)");
    if (req.authorityRef === undefined) throw usageError("`writ submit` needs --authority <ref> (or a file with an authorityRef)");
    if (req.params === undefined) req.params = {};
    const timeoutS = intFlag(v, "timeout") ?? 30;
    const rt = await ctx.runtime();
    const version = str(v, "action-version");
    if (version !== undefined) req.actionVersion = version;
    else if (req.actionVersion === undefined) {
      const def = rt.config.actions.find((a) => a.id === req.action);
      if (!def) throw usageError(`unknown action ${String(req.action)}: the config defines ${rt.config.actions.map((a) => a.id).join(", ") || "no actions"}`);
      req.actionVersion = def.version;
    }
    if (req.idempotencyKey === undefined) {
      req.idempotencyKey = `cli-${base64url(systemRandom.bytes(12))}`;
      if (!ctx.out.json) ctx.out.note(`idempotency key: ${req.idempotencyKey as string} (pass it with --idempotency-key to retry this request safely)`);
    }
    // The local operator (--as, $WRIT_ACTOR, the login name) is recorded as the submitter: four eyes.
    const submitted = await rt.host.submit(req, { submittedBy: { principal: ctx.operator() } });
    let inv = submitted.invocation;
    if (flag(v, "wait")) inv = await waitSettled(rt, inv, timeoutS * 1000);
    ctx.out.result({ invocation: inv, replayed: submitted.replayed }, () => {
      printInvocationSummary(ctx.out, inv);
      if (submitted.replayed) ctx.out.line("replayed: yes (the same key and request were admitted before; nothing new was stored)");
    });
  },
};

/** Waits (woken by this process's events, reading the store every 150 ms) until the invocation needs no worker any more; a timeout is a failure (exit 1) naming the likely cause. */
async function waitSettled(rt: Runtime, inv: Invocation, timeoutMs: number): Promise<Invocation> {
  const scope: Scope = { tenantId: inv.tenantId, spaceId: inv.spaceId };
  const { WAIT_GROUPS, waitForInvocation } = await import("../../host/wait.js");
  const r = await waitForInvocation(rt.host, scope, inv.invocationId, { until: new Set(WAIT_GROUPS.settled), ms: timeoutMs, pollMs: LOCAL_POLL_MS });
  const cur = r?.invocation ?? inv;
  if (!r?.reached) {
    throw new CliError(EXIT.FAILED, "WAIT_TIMEOUT", `invocation ${cur.invocationId} is still ${cur.status} after ${Math.round(timeoutMs / 1000)}s: is a worker running (writ serve or writ worker)?`);
  }
  return cur;
}

/** How often a wait on the local store reads it again: the worker that moves the invocation runs in another process. */
const LOCAL_POLL_MS = 150;

export const wait: CommandBody = {
  options: {
    until: { type: "string", value: "<states>", description: "final, settled (the default: final, or waiting for a person or a callback), or statuses, comma-separated (awaiting_approval,final)" },
    timeout: { type: "string", value: "<seconds>", description: "give up after this long: exit 1 with WAIT_TIMEOUT (default 30)" },
    url: { type: "string", value: "<url>", description: "wait through a Writ server's long poll (default $WRIT_URL); needs an API key: --key-file or $WRIT_API_KEY" },
    "key-file": { type: "string", value: "<file>", description: "with --url: a file holding the API key (e.g. .writ/demo-agent-key)" },
  },
  details:
    "Answers as soon as the invocation is in a state --until names (exit 0) or a final state it does not name, or the time runs out (exit 1, WAIT_TIMEOUT). With --url (or $WRIT_URL) it waits through the server's long poll (GET …/invocations/{id}?wait=&until=), which answers the moment the server's worker moves the invocation; otherwise it reads the local store.",
  async run(ctx, p) {
    const id = p[0]!;
    const { DEFAULT_UNTIL, untilStatuses } = await import("../../host/wait.js");
    const untilText = str(ctx.values, "until") ?? DEFAULT_UNTIL;
    const until = untilStatuses(untilText);
    if (typeof until === "string") throw usageError(`--until: ${until}`);
    const timeoutS = intFlag(ctx.values, "timeout", 0) ?? 30;
    const url = str(ctx.values, "url") ?? ctx.env.WRIT_URL;
    const r = url !== undefined && url.length > 0 ? await waitRemote(ctx, url, id, untilText, timeoutS) : await waitLocal(ctx, id, until, timeoutS);
    ctx.out.result(r, () => printInvocationSummary(ctx.out, r.invocation));
    if (!r.reached) {
      const why = TERMINAL_INVOCATION_STATUSES.includes(r.invocation.status) ? `ended ${r.invocation.status}, which --until ${untilText} does not name` : `is still ${r.invocation.status} after ${timeoutS}s`;
      throw new CliError(EXIT.FAILED, "WAIT_TIMEOUT", `invocation ${id} ${why}`);
    }
  },
};

async function waitLocal(ctx: CliContext, id: string, until: ReadonlySet<InvocationStatus>, timeoutS: number): Promise<{ invocation: Invocation; reached: boolean }> {
  const scope = await ctx.scope();
  const rt = await ctx.runtime();
  const { waitForInvocation } = await import("../../host/wait.js");
  const r = await waitForInvocation(rt.host, scope, id, { until, ms: timeoutS * 1000, pollMs: LOCAL_POLL_MS });
  if (!r) throw new WritError("NOT_FOUND", `no invocation ${id} in ${scope.tenantId}/${scope.spaceId}`);
  return r;
}

async function waitRemote(ctx: CliContext, url: string, id: string, until: string, timeoutS: number): Promise<{ invocation: ApiInvocation; reached: boolean }> {
  const keyFile = str(ctx.values, "key-file");
  const apiKey = keyFile !== undefined ? readInput(keyFile, "key-file").trim() : ctx.env.WRIT_API_KEY;
  if (apiKey === undefined || apiKey.length === 0) throw usageError("waiting through a server needs an API key: --key-file <file> or $WRIT_API_KEY");
  const { createClient, isWritApiError } = await import("../../client/index.js");
  try {
    const client = createClient({ baseUrl: url, apiKey, space: (await ctx.scope()).spaceId });
    return await client.invocations.wait(id, { until: until.split(",") as WaitUntil[], timeoutMs: timeoutS * 1000 });
  } catch (e) {
    if (!isWritApiError(e)) throw e;
    const exit = e.code === "VALIDATION_FAILED" || e.code === "INVALID_OPTION" ? EXIT.USAGE : e.code === "NETWORK_ERROR" || e.code === "SERVICE_UNAVAILABLE" ? EXIT.STORE : EXIT.FAILED;
    throw new CliError(exit, e.code, `${e.message}${e.requestId ? ` (request ${e.requestId})` : ""}`);
  }
}

function printInvocationSummary(out: Printer, inv: Pick<Invocation, "invocationId" | "status" | "action" | "actionVersion" | "tenantId" | "spaceId" | "idempotencyKey" | "approvalId" | "reasons" | "lastError"> & { result?: unknown }, more: ReadonlyArray<readonly [string, string | undefined]> = []): void {
  out.record([
    ["invocation", inv.invocationId],
    ["status", inv.status],
    ["action", `${inv.action}@${inv.actionVersion}`],
    ["scope", `${inv.tenantId}/${inv.spaceId}`],
    ["idempotency key", inv.idempotencyKey],
    ["approval", inv.approvalId],
    ["reasons", inv.reasons && inv.reasons.length > 0 ? inv.reasons.join("; ") : undefined],
    ["last error", inv.lastError],
    ["result", inv.result !== undefined ? brief(inv.result, 200) : undefined],
    ...more,
  ]);
}

export const get: CommandBody = {
  options: {},
  async run(ctx, p) {
    const id = p[0]!;
    const scope = await ctx.scope();
    // Reads only: the host, the policy engine and the keys stay unloaded (docs/cli.md, Start-up).
    const { config, reads, store } = await ctx.reads();
    const inv = await reads.get(scope, id);
    if (!inv) throw new WritError("NOT_FOUND", `no invocation ${id} in ${scope.tenantId}/${scope.spaceId}`);
    const action = config.actions.find((a) => a.id === inv.action) as ActionDefinition<unknown> | undefined;
    const approvalId = inv.approvalId;
    const { steps, reconciliations, approval } = await readCommitted(store, async (tx) => ({
      steps: (await tx.getSteps(scope, id)).map((s) => redactStep(s, action)),
      reconciliations: await tx.listReconciliations(scope, { invocationId: id }),
      approval: approvalId ? await tx.getApproval(scope, approvalId) : null,
    }));
    ctx.out.result({ invocation: inv, steps, approval, reconciliations }, () => {
      printInvocationSummary(ctx.out, inv, [
        ["actor", `${inv.request.actor.type}:${inv.request.actor.id}`],
        ["authority", inv.request.authorityRef],
        ["params", brief(inv.request.params, 200)],
        ["digest", inv.requestDigest],
        ["created", time(inv.createdAt)],
        ["updated", time(inv.updatedAt)],
      ]);
      ctx.out.line();
      ctx.out.line("steps:");
      ctx.out.table(steps, [
        { header: "#", value: (s) => String(s.stepIndex) },
        { header: "step", value: (s) => s.stepName },
        { header: "status", value: (s) => s.status },
        { header: "external ref", value: (s) => s.externalRef ?? "-" },
        { header: "reason", value: (s) => brief(s.reason ?? s.reasonCode, 80) },
      ]);
      if (approval) {
        ctx.out.line();
        ctx.out.line(`approval ${approval.approvalId}: ${approval.status} (${approval.votes.filter((x) => x.verdict === "approve").length}/${approval.quorum} approvals, roles ${approval.approverRoles.join(", ")}, expires ${time(approval.expiresAt)})`);
        ctx.out.table(approval.votes, [
          { header: "vote", value: (x) => x.verdict },
          { header: "by", value: (x) => `${x.approver.type}:${x.approver.id}` },
          { header: "at", value: (x) => time(x.at) },
          { header: "key", value: (x) => x.keyId ?? "-" },
          { header: "note", value: (x) => x.note ?? "-" },
        ], "  (no votes yet)");
      }
      for (const r of reconciliations) {
        ctx.out.line();
        ctx.out.line(`reconciliation ${r.reconciliationId}: ${r.status} (step ${r.stepIndex}, ${r.reasonCode}: ${r.reason})`);
        if (r.resolution) ctx.out.line(`  resolved ${r.resolution.outcome} by ${r.resolution.by.type}:${r.resolution.by.id}: ${r.resolution.note}`);
      }
    });
  },
};

function redactStep(s: StepCheckpoint, action: ActionDefinition<unknown> | undefined): StepCheckpoint {
  if (s.output === undefined || ((action?.sensitive ?? []).length === 0 && action?.redact === undefined)) return s;
  const outputs = (redactFor(action, { outputs: { [s.stepName]: s.output } }, "outputs") as { outputs: { [k: string]: Json } }).outputs;
  return { ...s, output: outputs[s.stepName]! };
}

/** Statuses whose reasons or last error say why it ended or waits for a person (denied, failed, ...). */
const EXPLAINED = new Set<InvocationStatus>(["denied", "failed", "cancelled", "awaiting_approval", "parked", "reconciliation_required"]);

/** Why an invocation is where it is, for a table cell: its reasons, else its last error; "-" when it succeeded or waits normally. */
export function reasonOf(inv: Invocation): string {
  if (!EXPLAINED.has(inv.status)) return "-";
  const reasons = inv.reasons && inv.reasons.length > 0 ? inv.reasons.join("; ") : undefined;
  return reasons ?? inv.lastError ?? "-";
}

export const ls: CommandBody = {
  options: {
    status: { type: "string", value: "<status>", description: `only this status (${INVOCATION_STATUSES.join(", ")})` },
    after: { type: "string", value: "<invocation-id>", description: "page: invocations older than this one" },
    ...LIMIT_OPTION,
    ...QUIET_OPTION,
  },
  async run(ctx) {
    const status = oneOf(ctx.values, "status", INVOCATION_STATUSES);
    const limit = intFlag(ctx.values, "limit") ?? 50;
    const after = str(ctx.values, "after");
    // Reads only: the host, the policy engine and the keys stay unloaded (docs/cli.md, Start-up).
    const { reads } = await ctx.reads();
    const items = await reads.list(await ctx.scope(), { limit, ...(status ? { status } : {}), ...(after ? { after } : {}) });
    printList(ctx, { items }, items, (i) => i.invocationId, () =>
      ctx.out.table(items, [
        { header: "invocation", value: (i) => i.invocationId },
        { header: "status", value: (i) => i.status },
        { header: "action", value: (i) => i.action },
        { header: "actor", value: (i) => `${i.request.actor.type}:${i.request.actor.id}` },
        { header: "created", value: (i) => time(i.createdAt) },
        { header: "params", value: (i) => brief(i.request.params, 50) },
        { header: "reason", value: (i) => brief(reasonOf(i), 80) },
      ]),
    );
    if (items.length === 0 && after === undefined) await ctx.explainEmpty(status ? `${status} invocations` : "invocations");
  },
};

export const cancel: CommandBody = {
  options: { ...AS_OPTION },
  async run(ctx, p) {
    const id = p[0]!;
    const by = ctx.operator();
    const rt = await ctx.runtime();
    const inv = await rt.host.cancel(await ctx.scope(), id, by);
    ctx.out.result({ invocation: inv }, () => printInvocationSummary(ctx.out, inv));
  },
};
