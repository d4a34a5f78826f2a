/** `writ retention status|prune`: what ended work leaves the database, and a prune run for cron (docs/retention.md). */
import type { RetentionReport } from "../../core/retention.js";
import { flag, intFlag } from "../args.js";
import type { CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { time } from "../output.js";

const DAY = 86_400_000;

function days(ms: number): string {
  return ms % DAY === 0 ? `${ms / DAY} d` : `${ms} ms`;
}

/** Prints a report: what goes (or went), what is held and why, the oldest ended invocation. */
function show(ctx: CliContext, r: RetentionReport, settings: { invocationsMs: number; replayWindowMs: number }, verb: string): void {
  ctx.out.result({ ...r, settings }, () => {
    ctx.out.line(`retention: ended invocations stay ${days(settings.invocationsMs)}, keys replay for at least ${days(settings.replayWindowMs)} (docs/retention.md)`);
    const rows = Object.entries(r.pruned).filter(([, n]) => n > 0);
    if (rows.length === 0) ctx.out.line(`nothing ${verb}`);
    else ctx.out.table(rows, [
      { header: "kind", value: ([k]) => k },
      { header: verb, value: ([, n]) => String(n) },
    ]);
    const held = Object.entries(r.held).filter(([, n]) => n > 0);
    if (held.length > 0) {
      ctx.out.line(`held (old enough, kept): ${held.map(([k, n]) => `${n} ${k.replaceAll("_", " ")}`).join(", ")}`);
      ctx.out.table(r.heldSample, [
        { header: "invocation", value: (h) => `${h.tenantId}/${h.spaceId}/${h.invocationId}` },
        { header: "ended", value: (h) => time(h.endedAt) },
        { header: "reason", value: (h) => h.reason },
      ]);
    }
    ctx.out.line(r.oldestEndedAt === null ? "no ended invocation in the database" : `oldest ended invocation: ${time(r.oldestEndedAt)}`);
    if (!r.complete) ctx.out.line("(the run stopped at its batch bound: run it again to go on)");
  });
}

export const retentionStatus: CommandBody = {
  options: {},
  details: "A dry run of the pruner over every scope: deletes nothing.",
  async run(ctx) {
    const rt = await ctx.runtime();
    const r = await rt.host.retention.status();
    show(ctx, r, rt.host.retention.settings, "would be pruned");
  },
};

export const retentionPrune: CommandBody = {
  options: {
    "dry-run": { type: "boolean", description: "report what would be pruned; delete nothing" },
    "max-batches": { type: "string", value: "<n>", description: "stop after this many batches (a later run goes on)" },
  },
  details: "Runs the pruner once over every scope, in batches of retention.batchSize with retention.pauseMs between them (for cron; started workers also prune in the background).",
  async run(ctx) {
    const maxBatches = intFlag(ctx.values, "max-batches");
    const rt = await ctx.runtime();
    const r = await rt.host.retention.prune({ dryRun: flag(ctx.values, "dry-run"), ...(maxBatches !== undefined ? { maxBatches } : {}) });
    show(ctx, r, rt.host.retention.settings, r.dryRun ? "would be pruned" : "pruned");
  },
};
