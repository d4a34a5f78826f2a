/** `writ serve` (HTTP API and workers in one process) and `writ worker` (workers only). */
import type { Logger } from "../../host/options.js";
import type { Worker, WorkerOptions } from "../../host/worker.js";
import type { Runtime } from "../../runtime/runtime.js";
import { flag, intFlag, str } from "../args.js";
import type { CommandBody } from "../command.js";
import { stderrLogger, type CliContext } from "../context.js";
import { demoCurl, demoOf, ensureDemo, type DemoState } from "../demo.js";
import { CliError, EXIT, usageError } from "../exit-codes.js";
import { waitForStop } from "../lifecycle.js";
import type { RunningServer } from "../../server/index.js";
import { resolveServerConfig } from "../../config/server-options.js";

const WORKER_OPTIONS = {
  concurrency: { type: "string", value: "<n>", description: "invocations processed at once (default: the config's worker.concurrency, else 4)" },
  quiet: { type: "boolean", description: "do not print a line per invocation transition on stderr" },
  "log-json": { type: "boolean", description: "structured JSON logs (pino) on stderr instead of human lines; also WRIT_LOG=json" },
} as const;

function workerOptions(ctx: CliContext, rt: Runtime): WorkerOptions {
  const concurrency = intFlag(ctx.values, "concurrency");
  return { ...(rt.config.worker ?? {}), ...(concurrency !== undefined ? { concurrency } : {}) };
}

async function openForWork(ctx: CliContext): Promise<Runtime> {
  const debug = ctx.env.WRIT_DEBUG === "1";
  let logger: Logger;
  if (flag(ctx.values, "log-json") || ctx.env.WRIT_LOG === "json") {
    // pino is imported only when JSON logs are asked for: other commands start without it.
    const { pino } = await import("pino");
    logger = pino({ name: "writ", level: debug || !flag(ctx.values, "quiet") ? "debug" : "info" }, pino.destination(2));
  } else logger = stderrLogger(ctx.io, { events: !flag(ctx.values, "quiet"), debug });
  return ctx.runtime({ logger, eagerPolicy: true });
}

/** Stops the worker (draining; a second signal aborts in-flight work) and reports it. */
async function drain(ctx: CliContext, worker: Worker, stop: ReturnType<typeof waitForStop>, signal: string): Promise<void> {
  const n = worker.inFlight();
  ctx.out.note(`[writ] ${signal}: stopping${n > 0 ? `, draining ${n} in-flight invocation(s) (send it again to abort them)` : ""}`);
  stop.onForce(() => {
    ctx.out.note("[writ] aborting in-flight invocations (recovery resumes them from their checkpoints)");
    void worker.stop({ drain: false });
  });
  await worker.stop({ drain: true });
}

function printBanner(ctx: CliContext, rt: Runtime, url: string, worker: Worker, demo: DemoState | null): void {
  const demoSetup = demoOf(rt.config);
  const curl = demo && demoSetup ? demoCurl(url, demoSetup, demo.agent.key) : null;
  ctx.out.result(
    {
      url,
      ...(rt.config.console?.enabled !== false ? { console: `${url}/console` } : {}),
      worker: worker.id,
      store: rt.store.kind,
      signingKey: rt.signingKey.kid,
      ...(demo
        ? {
            demo: {
              tenantId: demo.scope.tenantId,
              spaceId: demo.scope.spaceId,
              adminKey: demo.adminKey,
              adminKeyFile: demo.adminKeyFile,
              created: demo.created,
              agentKey: demo.agent.key,
              agentKeyFile: demo.agent.file,
              agentPrincipal: demo.agent.principal,
              approverKey: demo.approver.key,
              approverKeyFile: demo.approver.file,
              approverPrincipal: demo.approver.principal,
              curl,
            },
          }
        : {}),
    },
    () => {
      ctx.out.line(`Writ is serving on ${url}`);
      ctx.out.line(`  store ${rt.store.kind}, ${rt.config.actions.length} action(s), signing key ${rt.signingKey.kid}, worker ${worker.id}`);
      ctx.out.line(`  OpenAPI: ${url}/openapi.json   health: ${url}/healthz`);
      if (rt.config.console?.enabled !== false) ctx.out.line(`  Console: ${url}/console   (sign in with an API key)`);
      if (demo) {
        ctx.out.line("");
        ctx.out.line(`LOCAL DEMO ONLY — API keys of tenant "${demo.scope.tenantId}" (kept in mode 0600 files; created on first start):`);
        ctx.out.line(`  agent    (submit, acts as ${demo.agent.principal.type}:${demo.agent.principal.id}; ${demo.agent.file}):`);
        ctx.out.line(`    ${demo.agent.key}`);
        ctx.out.line(`  approver (approve, operate, acts as ${demo.approver.principal.type}:${demo.approver.principal.id}; ${demo.approver.file}):`);
        ctx.out.line(`    ${demo.approver.key}`);
        ctx.out.line(`  admin    (${demo.adminKeyFile}):`);
        ctx.out.line(`    ${demo.adminKey}`);
        if (demo.authoritiesCreated.length > 0) ctx.out.line(`  demo authorities created: ${demo.authoritiesCreated.join(", ")}`);
        if (curl) {
          ctx.out.line("");
          ctx.out.line("Submit an action (space " + demo.scope.spaceId + "):");
          ctx.out.line(`  ${curl}`);
        }
        ctx.out.line("");
        ctx.out.line("README.md, \"From npm start to an approval and a reconciliation\", walks on from here.");
      }
      ctx.out.line("Ctrl-C stops (drains in-flight work first).");
    },
  );
}

export const serve: CommandBody = {
  options: {
    port: { type: "string", value: "<port>", description: "listen on this port (default: the config's server.port, else 8787; 0 picks a free one)" },
    host: { type: "string", value: "<address>", description: "listen on this address (default: the config's server.host, else 127.0.0.1)" },
    ...WORKER_OPTIONS,
  },
  details: "A config with a `demo` section (examples/writ.config.ts) also bootstraps the local demo: an agent key (.writ/demo-agent-key), an approver key (.writ/demo-approver-key), an admin key (.writ/demo-admin-key) and the demo authorities. SIGINT/SIGTERM stop gracefully: the server stops accepting, workers drain, the store closes; a second signal aborts in-flight work.",
  async run(ctx) {
    const portFlag = intFlag(ctx.values, "port", 0);
    if (portFlag !== undefined && portFlag > 65535) throw usageError("--port must be at most 65535");
    const stop = waitForStop();
    try {
      const rt = await openForWork(ctx);
      const demoSetup = demoOf(rt.config);
      const configDir = await ctx.configDir();
      const { configRelative } = await import("../../runtime/store-from-config.js");
      // The demo's key files, like every path of the config, resolve against the config's directory.
      const demo = demoSetup ? await ensureDemo(rt, demoSetup, (x) => configRelative(x, configDir)) : null;
      // Imported here, not at the top: only `writ serve` needs the HTTP stack.
      const { startServer } = await import("../../server/index.js");
      const settings = resolveServerConfig(rt.config.server, "server.");
      const port = portFlag ?? settings.port;
      const host = str(ctx.values, "host") ?? settings.host;
      let server: RunningServer;
      try {
        const log = stderrLogger(ctx.io, { events: false, debug: false });
        // Server faults (5xx) are logged with their detail; per-request lines stay off.
        // The demo's space is the console's default space (a config's console.spaces wins).
        const consoleOptions = demo ? { spaces: [demo.scope.spaceId], ...(rt.config.console ?? {}) } : rt.config.console;
        server = await startServer(rt, { port, host, logger: { ...log, info: () => {} }, ...(consoleOptions ? { console: consoleOptions } : {}) });
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === "EADDRINUSE") throw new CliError(EXIT.FAILED, "ADDRESS_IN_USE", `${host}:${port} is already in use: stop what listens there or pass --port <port>`);
        if (code === "EADDRNOTAVAIL" || code === "EACCES") throw new CliError(EXIT.FAILED, "LISTEN_FAILED", `cannot listen on ${host}:${port} (${code}): pass another --host/--port`);
        throw e;
      }
      const worker = rt.host.worker(workerOptions(ctx, rt));
      worker.start();
      printBanner(ctx, rt, server.url, worker, demo);
      const signal = await stop.requested;
      ctx.out.note(`[writ] ${signal}: closing the HTTP server`);
      await server.close();
      await drain(ctx, worker, stop, signal);
      await ctx.close();
      ctx.out.note("[writ] stopped");
    } finally {
      stop.dispose();
    }
  },
};

export const worker: CommandBody = {
  options: {
    once: { type: "boolean", description: "claim and process until nothing is runnable, then exit (scripts, tests, cron)" },
    ...WORKER_OPTIONS,
  },
  details: "Several `writ worker` processes (and `writ serve`) can share one store: leases keep each invocation with one worker.",
  async run(ctx) {
    const rt = await openForWork(ctx);
    const w = rt.host.worker(workerOptions(ctx, rt));
    if (flag(ctx.values, "once")) {
      const counts: Record<string, number> = {};
      for (;;) {
        const results = await w.runOnce();
        if (results.length === 0) break;
        for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
      }
      // And a few passes of the notification dispatcher: what is due now is sent (docs/notifications.md).
      for (let pass = 0; pass < 10 && (await rt.host.notifications.dispatchOnce()) > 0; pass++);
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      ctx.out.result({ processed: total, results: counts }, () =>
        ctx.out.line(total === 0 ? "nothing to run" : `processed ${total}: ${Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ")}`),
      );
      return;
    }
    const stop = waitForStop();
    try {
      w.start();
      ctx.out.result({ worker: w.id, store: rt.store.kind }, () => ctx.out.line(`worker ${w.id} running on the ${rt.store.kind} store; Ctrl-C stops (drains in-flight work first)`));
      const signal = await stop.requested;
      await drain(ctx, w, stop, signal);
      await ctx.close();
      ctx.out.note("[writ] stopped");
    } finally {
      stop.dispose();
    }
  },
};
