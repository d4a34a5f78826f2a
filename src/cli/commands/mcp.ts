/** `writ mcp`: the MCP gateway on stdio for local agents (docs/mcp.md). */
import { flag, str } from "../args.js";
import type { CommandBody } from "../command.js";
import { stderrLogger } from "../context.js";
import { usageError } from "../exit-codes.js";
import { waitForStop } from "../lifecycle.js";

export const mcp: CommandBody = {
  options: {
    key: { type: "string", value: "<api-key>", description: "the agent's API key (default: $WRIT_MCP_KEY; prefer the variable: flags show in process lists)" },
    "no-worker": { type: "boolean", description: "do not run a worker in this process (another `writ serve`/`writ worker` runs the invocations)" },
    "call-wait-ms": { type: "string", value: "<ms>", description: "how long a tool call waits at most; it answers earlier once waiting cannot help (default 20000)" },
  },
  details:
    "stdout carries MCP messages only; logs go to stderr. The space is --space (or $WRIT_SPACE), else the key's only space. The process ends when the client closes stdin, or on SIGINT/SIGTERM.",
  async run(ctx) {
    const key = str(ctx.values, "key") ?? ctx.env.WRIT_MCP_KEY;
    if (key === undefined || key.length === 0) throw usageError("an API key is required: --key <api-key> or $WRIT_MCP_KEY");
    const waitText = str(ctx.values, "call-wait-ms");
    const callWaitMs = waitText === undefined ? undefined : Number(waitText);
    if (callWaitMs !== undefined && !(Number.isInteger(callWaitMs) && callWaitMs >= 0 && callWaitMs <= 600_000)) throw usageError("--call-wait-ms must be an integer from 0 to 600000");
    const space = str(ctx.values, "space") ?? ctx.env.WRIT_SPACE;
    const logger = stderrLogger(ctx.io, { events: false, debug: ctx.env.WRIT_DEBUG === "1" });
    const rt = await ctx.runtime({ logger, eagerPolicy: true });
    const { serveMcpStdio } = await import("../../mcp/stdio.js");
    const stop = waitForStop();
    try {
      const served = await serveMcpStdio(rt, { ...(rt.config.mcp ?? {}), key, ...(space !== undefined ? { space } : {}), ...(callWaitMs !== undefined ? { callWaitMs } : {}), logger });
      const worker = flag(ctx.values, "no-worker") ? null : rt.host.worker(rt.config.worker ?? {});
      worker?.start();
      ctx.out.note(`[writ] MCP on stdio as ${served.caller.principal.type}:${served.caller.principal.id} in ${served.caller.scope.tenantId}/${served.caller.scope.spaceId}${worker ? `, worker ${worker.id}` : ""}`);
      await Promise.race([served.closed, stop.requested]);
      await served.close();
      await worker?.stop({ drain: true });
      await ctx.close();
    } finally {
      stop.dispose();
    }
  },
};
