/** `writ mcp`: the MCP gateway on stdio for local agents (docs/mcp.md). */
import { flag, str } from "../args.js";
import type { CommandBody } from "../command.js";
import { stderrLogger } from "../context.js";
import { isWritError } from "../../core/errors.js";
import type { Store } from "../../core/store.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import { waitForStop } from "../lifecycle.js";

export const mcp: CommandBody = {
  options: {
    key: { type: "string", value: "<api-key>", description: "the agent's API key (default: $WRIT_MCP_KEY; prefer the variable: flags show in process lists)" },
    "no-worker": { type: "boolean", description: "do not run a worker in this process (another `writ serve`/`writ worker` runs the invocations)" },
    "call-wait-ms": { type: "string", value: "<ms>", description: "how long a tool call waits at most; it answers earlier once waiting cannot help (default 20000)" },
  },
  details:
    "stdout carries MCP messages only; logs go to stderr. The space is --space (or $WRIT_SPACE), else the key's only space, else the tenant's only space, else the config's demo space. Relative paths in the config resolve against the config's directory, wherever the client starts writ. The process ends when the client closes stdin, or on SIGINT/SIGTERM.",
  async run(ctx) {
    const key = str(ctx.values, "key") ?? ctx.env.WRIT_MCP_KEY;
    if (key === undefined || key.length === 0) throw usageError("an API key is required: --key <api-key> or $WRIT_MCP_KEY");
    const waitText = str(ctx.values, "call-wait-ms");
    const callWaitMs = waitText === undefined ? undefined : Number(waitText);
    if (callWaitMs !== undefined && !(Number.isInteger(callWaitMs) && callWaitMs >= 0 && callWaitMs <= 600_000)) throw usageError("--call-wait-ms must be an integer from 0 to 600000");
    const spaceText = str(ctx.values, "space") ?? ctx.env.WRIT_SPACE;
    const space = spaceText !== undefined && spaceText.length > 0 ? spaceText : undefined;
    const logger = stderrLogger(ctx.io, { events: false, debug: ctx.env.WRIT_DEBUG === "1" });
    const { path, config } = await ctx.config();
    const base = await ctx.configDir();
    const { describeStore, storeExists } = await import("../../runtime/store-from-config.js");
    // No store yet: no key can be valid, and creating an empty one would only hide the mistake.
    if (!storeExists(config, base)) throw new CliError(EXIT.STORE, "NO_STORE", `no Writ store: ${describeStore(config, base)} does not exist, so no API key can be valid. Run \`writ serve\` (or \`writ migrate\`) with ${path} first; relative paths in a config resolve against the config's directory.`);
    const rt = await ctx.runtime({ logger, eagerPolicy: true });
    const { serveMcpStdio } = await import("../../mcp/stdio.js");
    const { configDemoSpace } = await import("../../runtime/default-space.js");
    const demoSpace = configDemoSpace(config);
    const stop = waitForStop();
    try {
      const served = await serveMcpStdio(rt, { ...(rt.config.mcp ?? {}), key, ...(space !== undefined ? { space } : {}), ...(demoSpace !== undefined ? { demoSpace } : {}), ...(callWaitMs !== undefined ? { callWaitMs } : {}), logger }).catch(async (e: unknown) => {
        throw await explainUnknownKey(e, rt.store, describeStore(config, base));
      });
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

/**
 * An unknown key in a store that holds no API key at all says so, and where the store is: the
 * usual cause is a config whose store is not the one meant. Never the key itself.
 */
async function explainUnknownKey(e: unknown, store: Store, where: string): Promise<unknown> {
  if (!isWritError(e, "FORBIDDEN") || (e.details as { reason?: unknown } | undefined)?.reason !== "KEY_UNKNOWN") return e;
  const { storeHoldsApiKeys } = await import("../../runtime/api-keys.js");
  if ((await storeHoldsApiKeys(store)) !== false) return e;
  return new CliError(EXIT.FAILED, "FORBIDDEN", `${e.message}: the store is empty (${where} holds no API keys). Is this the store you meant? Create a key with \`writ api-keys create\` there, or point the config at the store that holds it.`);
}
