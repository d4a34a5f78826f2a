/** `writ doctor`: what is wrong with this setup and how to fix it. */
import type { CommandBody } from "../command.js";

const MARK = { ok: "ok", warning: "warn", problem: "FAIL" } as const;

export const doctor: CommandBody = {
  options: {},
  details: "Prints the effective settings `writ serve` would run with (config and defaults; secrets never shown). Exit 0 when healthy (warnings allowed), 3 when the config does not load, 4 when the store cannot be reached, 1 for any other problem. Changes nothing.",
  async run(ctx) {
    const { diagnose } = await import("../doctor-checks.js");
    const { settingsLines } = await import("../settings.js");
    const report = await diagnose({ findConfigPath: () => ctx.configPath() });
    ctx.out.result(report, () => {
      for (const c of report.checks) {
        ctx.out.line(`${MARK[c.status].padEnd(4)}  ${c.name.padEnd(10)}  ${c.detail}`);
        if (c.fix && c.status !== "ok") ctx.out.line(`${"".padEnd(16)}fix: ${c.fix}`);
      }
      if (report.settings) {
        ctx.out.line("\neffective settings (config and defaults; secrets never shown):");
        for (const l of settingsLines(report.settings)) ctx.out.line(`  ${l}`);
      }
      const problems = report.checks.filter((c) => c.status === "problem").length;
      ctx.out.line(problems === 0 ? "\nall checks passed" : `\n${problems} problem(s) found`);
    });
    return report.exitCode;
  },
};
