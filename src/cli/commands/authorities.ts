/** `writ authorities create|ls|suspend|reinstate|revoke`: standing grants actors act under (docs/approvals.md). */
import { readCommitted } from "../../core/store.js";
import type { Authority, Json } from "../../core/types.js";
import { intFlag, list, parseActor, required, str } from "../args.js";
import { AS_OPTION, LIMIT_OPTION, QUIET_OPTION, printList, type CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { usageError } from "../exit-codes.js";
import { jsonObject } from "../files.js";
import { time } from "../output.js";

function printAuthority(ctx: CliContext, a: Authority): void {
  ctx.out.record([
    ["authority", a.authorityRef],
    ["status", a.status],
    ["principal", `${a.principal.type}:${a.principal.id}`],
    ["actions", a.actions.join(", ")],
    ["constraints", JSON.stringify(a.constraints)],
    ["grantor", `${a.grantor.type}:${a.grantor.id}`],
    ["expires", a.expiresAt !== undefined ? time(a.expiresAt) : undefined],
  ]);
}

/** An ISO time or epoch milliseconds. */
function parseTime(text: string, flagName: string): number {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (!Number.isSafeInteger(ms)) throw usageError(`--${flagName} must be an ISO time (2030-01-01T00:00:00Z) or epoch milliseconds, not ${JSON.stringify(text)}`);
  return ms;
}

export const authoritiesCreate: CommandBody = {
  options: {
    principal: { type: "string", value: "<type:id>", description: "the actor who acts under it, e.g. agent:support-bot (required)" },
    action: { type: "string", multiple: true, value: "<glob>", description: "action ids or globs it covers, e.g. 'payments.*'; repeatable (required)" },
    constraints: { type: "string", value: "<json>", description: "a JSON object passed to policy (e.g. {\"maxAmount\":50000})" },
    expires: { type: "string", value: "<time>", description: "ISO time or epoch ms after which it no longer holds" },
    ...AS_OPTION,
  },
  details: "--as names the grantor.",
  async run(ctx, p) {
    const where = "writ authorities create";
    const ref = p[0]!;
    const principal = parseActor(required(ctx.values, "principal", where), "principal");
    const actions = list(ctx.values, "action");
    if (actions.length === 0) throw usageError(`\`${where}\` needs at least one --action`);
    const c = str(ctx.values, "constraints");
    const e = str(ctx.values, "expires");
    const grantor = ctx.operator();
    const rt = await ctx.runtime();
    const a = await rt.host.authorities.create(await ctx.scope(), {
      authorityRef: ref,
      principal,
      grantor,
      actions,
      ...(c !== undefined ? { constraints: jsonObject(c, "--constraints") as { [k: string]: Json } } : {}),
      ...(e !== undefined ? { expiresAt: parseTime(e, "expires") } : {}),
    });
    ctx.out.result({ authority: a }, () => printAuthority(ctx, a));
  },
};

export const authoritiesLs: CommandBody = {
  options: { ...LIMIT_OPTION, ...QUIET_OPTION },
  async run(ctx) {
    const limit = intFlag(ctx.values, "limit") ?? 50;
    // Reads only: nothing is created where no store exists yet (docs/cli.md, Start-up).
    const { store } = await ctx.reads();
    const scope = await ctx.scope();
    const items = await readCommitted(store, (tx) => tx.listAuthorities(scope, { limit }));
    printList(ctx, { items }, items, (a) => a.authorityRef, () =>
      ctx.out.table(items, [
        { header: "authority", value: (a) => a.authorityRef },
        { header: "status", value: (a) => a.status },
        { header: "principal", value: (a) => `${a.principal.type}:${a.principal.id}` },
        { header: "actions", value: (a) => a.actions.join(",") },
        { header: "expires", value: (a) => time(a.expiresAt) },
      ]),
    );
    if (items.length === 0) await ctx.explainEmpty("authorities");
  },
};

function change(verb: "suspend" | "reinstate" | "revoke"): CommandBody {
  return {
    options: { ...AS_OPTION },
    async run(ctx, p) {
      const ref = p[0]!;
      const by = ctx.operator();
      const rt = await ctx.runtime();
      const a = await rt.host.authorities[verb](await ctx.scope(), ref, by);
      ctx.out.result({ authority: a }, () => printAuthority(ctx, a));
    },
  };
}

export const authoritiesSuspend = change("suspend");
export const authoritiesReinstate = change("reinstate");
export const authoritiesRevoke = change("revoke");
