/**
 * A worker process of the durable host bench (bench/host.ts), driven over IPC by the bench
 * process (`node --import tsx bench/host-worker-child.ts`, stdio with an `ipc` channel).
 *
 * On `start` it runs either a Writ host worker (createHost on the PostgreSQL store, full
 * governance: function policy, signed decision, boundary checks, journal) or a graphile-worker
 * runner with a no-op task, against the given database, each over a pool of its own that counts
 * statements and times them by name. It reports every completion with a system-wide monotonic
 * timestamp (`process.hrtime`, comparable across processes on one machine):
 *
 * - Writ: the `invocation.succeeded` event, which the host emits after the settlement commits;
 * - graphile-worker: the moment its `complete_job(s)` statement (an autocommit DELETE) returns,
 *   seen on the pool, since graphile-worker fires that statement without awaiting it.
 *
 * On `stop` it stops the worker (draining), closes its pool and answers with its counters and CPU
 * time. On `exit` it leaves (normally, so that `--cpu-prof` writes its profile).
 */
import type { FromChild, ToChild } from "./host.js";
import { startGraphile, startWrit, type Running } from "./host-workers.js";

const send = (m: FromChild): void => {
  if (process.connected) process.send?.(m);
};

let pending: Array<[string, number]> = [];
let flushing = false;
function completed(id: string, t: number): void {
  pending.push([id, t]);
  if (flushing) return;
  flushing = true;
  setImmediate(() => {
    flushing = false;
    const items = pending;
    pending = [];
    send({ type: "done", items });
  });
}

let current: Running | null = null;

async function handle(m: ToChild): Promise<void> {
  switch (m.type) {
    case "start": {
      if (current !== null) throw new Error("already started");
      current = m.system === "writ" ? await startWrit(m.url, m.concurrency, m.signingKey, m.journalKeys, completed, (message) => send({ type: "error", message })) : await startGraphile(m.url, m.concurrency, completed);
      send({ type: "ready" });
      return;
    }
    case "stop": {
      const c = current;
      if (c === null) throw new Error("not started");
      current = null;
      await c.stop();
      const cpu = process.cpuUsage(c.cpu);
      await new Promise((r) => setImmediate(r)); // the last completions go out first
      send({ type: "stopped", stats: c.stats, cpuMs: (cpu.user + cpu.system) / 1000 });
      return;
    }
    case "exit":
      process.disconnect?.();
      return;
  }
}

// The bench process is gone (or asked us to leave): stop and exit normally (--cpu-prof writes then).
process.on("disconnect", () => {
  const c = current;
  current = null;
  void (c?.stop() ?? Promise.resolve()).catch(() => undefined).finally(() => process.exit(0));
});

process.on("message", (m: ToChild) => {
  handle(m).catch((e: unknown) => send({ type: "error", message: e instanceof Error ? (e.stack ?? e.message) : String(e) }));
});
send({ type: "spawned" });
