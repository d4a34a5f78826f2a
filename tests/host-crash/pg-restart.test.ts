/**
 * PostgreSQL goes away under load and comes back: worker processes and `writ serve` ride it out.
 *
 * A private PostgreSQL instance (tests/helpers/pg-instance.ts: the machine's binaries, initdb in a
 * temporary directory, production defaults) is stopped with `pg_ctl -m immediate` (no shutdown
 * checkpoint: crash recovery at the next start) or has its postmaster SIGKILLed, while three worker
 * processes run invocations with 16 in flight, and is started again 3 s later.
 *
 * Invariants checked (fixtures/invariants.ts, plus this file's own):
 * - no worker process exits: a broken connection fails the statement that used it, never the process;
 * - nothing is lost: every request the test made is admitted (a submit that failed during the outage
 *   is retried with the same idempotency key, as a client would) and ends settled;
 * - no non-idempotent effect twice, idempotent effects once per step key, unknown outcomes have an
 *   open reconciliation, every scope's journal verifies;
 * - the cluster recovers: invocations submitted after the restart succeed (the time from the
 *   restart to the first one is printed; the liveness bound asserted is generous on purpose).
 *
 * And `writ serve` on a PostgreSQL config answers 503 while the database is down, and serves a
 * refund after it is back, in the same process.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ActionRequest } from "../../src/core/types.js";
import { postgresBinaries, startPgInstance } from "../helpers/pg-instance.js";
import { killChild, reapChildren, sleep, spawnChild, type Child } from "./fixtures/children.js";
import { SETTLED, summary } from "./fixtures/invariants.js";
import { requestFor, type ActionName } from "./fixtures/scenario.js";
import { makeWorld, type World } from "./fixtures/world.js";

const bins = postgresBinaries();
// Never skipped silently: where no binaries exist the reason is printed (and CI fails, see below).
if (bins.dir === null) console.warn(`[pg-restart] skipped: ${bins.reason}`);
const ci = process.env.CI === "true";
const suite = bins.dir === null && !ci ? describe.skip : describe;

afterAll(async () => expect(await reapChildren()).toBe(0));

const ACTIONS: ActionName[] = ["idem1", "once1", "idem2", "once2"];
const readyLine = (l: unknown): boolean => (l as { type?: string }).type === "ready";

/** Submits `req` until it is admitted (same idempotency key each time); returns the invocation id. */
async function admit(world: World, req: ActionRequest, deadline: number): Promise<string> {
  for (;;) {
    try {
      return (await world.host.submit(req)).invocation.invocationId;
    } catch (e) {
      if (Date.now() > deadline) throw new Error(`request ${req.idempotencyKey} never admitted: ${(e as Error).message}`);
      await sleep(100);
    }
  }
}

/** Waits until the invocation is settled; store errors (the outage) are retried. */
async function settle(world: World, req: ActionRequest, id: string, deadline: number): Promise<string> {
  for (;;) {
    const inv = await world.store.transact((tx) => tx.getInvocation(req, id)).catch(() => null);
    if (inv !== null && SETTLED.includes(inv.status)) return inv.status;
    if (Date.now() > deadline) throw new Error(`invocation ${id} not settled (last seen ${inv?.status ?? "unreadable"})`);
    await sleep(25);
  }
}

suite("PostgreSQL restarts under load", () => {
  for (const how of ["pg_ctl stop -m immediate", "SIGKILL of the postmaster"] as const) {
    it(`three worker processes, 16 in flight, ${how}, started again 3 s later`, async () => {
      const inst = await startPgInstance();
      const children: Child[] = [];
      let world: World | undefined;
      try {
        await inst.createDatabase("writ");
        world = await makeWorld("postgres", { pgUrl: inst.url("writ") });
        const w = world;
        for (let i = 0; i < 3; i++) {
          children.push(spawnChild(`w${i}`, w.childEnv(`w${i}`, { WRIT_LEASE_MS: "1500", WRIT_POLL_MS: "100", WRIT_CONCURRENCY: "8", WRIT_DELAY_MS: "20" })));
        }
        await Promise.all(children.map((c) => c.waitForLine(readyLine, 30_000, "ready")));

        const total = 240;
        const deadline = Date.now() + 100_000;
        let next = 0;
        const ids: string[] = [];
        const doneAt: number[] = [];
        const lane = async (): Promise<void> => {
          while (next < total) {
            const dead = children.find((c) => !c.alive());
            if (dead !== undefined) throw new Error(`worker ${dead.name} exited: ${dead.stderr().slice(-800)}`);
            const n = next++;
            const req = requestFor(n, ACTIONS[n % ACTIONS.length]!);
            const id = await admit(w, req, deadline);
            ids.push(id);
            await settle(w, req, id, deadline);
            doneAt.push(Date.now());
          }
        };
        const lanes = Array.from({ length: 16 }, lane);
        // The outage lands on work in flight: a third of the invocations done first.
        while (doneAt.length < total / 3) await sleep(20);
        const downAt = Date.now();
        if (how === "SIGKILL of the postmaster") await inst.kill();
        else await inst.stop("immediate");
        await sleep(3_000);
        await inst.start();
        const upAt = Date.now();
        const doneBeforeUp = doneAt.filter((t) => t <= upAt).length;
        await Promise.all(lanes);
        const firstAfter = doneAt.filter((t) => t > upAt).sort((a, b) => a - b)[0];
        expect(firstAfter, "an invocation settled after the restart").toBeDefined();
        const recoveryMs = firstAfter! - upAt;
        const report = await w.check(ids);
        const logs = children.flatMap((c) => c.lines.filter((l) => (l as { type?: string }).type === "log")) as Array<{ level: string; msg: string }>;
        console.log(
          `[pg-restart] ${how}: ${total} invocations, ${doneBeforeUp} settled before the server was back (down ${upAt - downAt} ms), ` +
            `first settled ${recoveryMs} ms after it was back; ${summary(report)}; ${logs.filter((l) => l.level !== "info").length} warnings/errors and ` +
            `${logs.filter((l) => l.level === "info").length} recoveries logged by the workers`,
        );
        for (const c of children) expect(c.alive(), `${c.name} is still running (stderr: ${c.stderr().slice(-400)})`).toBe(true);
        expect(report.violations).toEqual([]);
        expect(report.invocations).toBe(total);
        // Liveness, not speed: the workers poll every 100 ms and reconnect on their next statement.
        expect(recoveryMs).toBeLessThan(15_000);
        expect(logs.some((l) => l.level === "info" && l.msg === "claim works again"), "a worker logged that claims work again").toBe(true);
      } finally {
        for (const c of children) await killChild(c);
        await world?.close();
        await inst.close();
      }
    }, 150_000);
  }

  it("writ serve on PostgreSQL answers 503 while the database is down and serves again after it restarts", async () => {
    const inst = await startPgInstance();
    const dir = mkdtempSync(join(tmpdir(), "writ-pg-serve-"));
    symlinkSync(join(process.cwd(), "node_modules"), join(dir, "node_modules"), "dir");
    writeFileSync(
      join(dir, "writ.config.ts"),
      `import base from ${JSON.stringify(join(process.cwd(), "examples", "writ.config.ts"))};\n` +
        `export default { ...base, store: { kind: "postgres", url: ${JSON.stringify(inst.url("writ"))} } };\n`,
    );
    await inst.createDatabase("writ");
    const child = spawn(process.execPath, [join(process.cwd(), "bin", "writ.js"), "serve", "--config", "writ.config.ts", "--port", "0", "--json", "--quiet"], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let exitCode: number | null | undefined;
    child.on("close", (code) => (exitCode = code));
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    try {
      let banner: { url: string; demo: { agentKey: string } } | undefined;
      const until = Date.now() + 60_000;
      while (banner === undefined && Date.now() < until && exitCode === undefined) {
        try {
          banner = JSON.parse(stdout) as typeof banner;
        } catch {
          await sleep(50);
        }
      }
      if (banner === undefined) throw new Error(`writ serve did not start (exit ${exitCode}):\n${stdout}\n${stderr}`);
      const api = `${banner.url}/v1/spaces/default`;
      const refund = (n: number): Promise<Response> =>
        fetch(`${api}/invocations`, {
          method: "POST",
          headers: { authorization: `Bearer ${banner.demo.agentKey}`, "content-type": "application/json" },
          body: JSON.stringify({
            action: "payments.refund",
            actionVersion: "1",
            actor: { type: "agent", id: "support-bot" },
            authorityRef: "support-bot",
            params: { paymentId: `pay_${n}`, amount: 1200, currency: "EUR" },
            idempotencyKey: `refund-${n}`,
          }),
        });
      const succeeded = async (id: string): Promise<void> => {
        const end = Date.now() + 20_000;
        for (;;) {
          const r = await fetch(`${api}/invocations/${id}`, { headers: { authorization: `Bearer ${banner.demo.agentKey}` } });
          const body = (await r.json()) as { invocation?: { status: string }; status?: string };
          const status = body.invocation?.status ?? body.status;
          if (status === "succeeded") return;
          if (Date.now() > end) throw new Error(`refund ${id} not succeeded: ${JSON.stringify(body)}`);
          await sleep(100);
        }
      };
      const first = await refund(1);
      expect(first.status).toBe(202);
      await succeeded(((await first.json()) as { invocation: { invocationId: string } }).invocation.invocationId);

      // Stopped while refunds are being submitted and run (a pooled connection checked out between
      // two statements is what used to take the process down), then started 3 s later.
      const burst = Array.from({ length: 40 }, (_, i) => refund(100 + i).then((r) => r.status));
      await sleep(30);
      await inst.stop("immediate");
      const statuses = await Promise.all(burst);
      expect(statuses.filter((s) => s !== 202 && s !== 503), "answers to the refunds submitted as the database went away").toEqual([]);
      const during = await refund(2);
      expect(during.status, "a submit while the database is down").toBe(503);
      await sleep(3_000);
      await inst.start();
      await sleep(2_000);
      expect(exitCode, `writ serve exited during the outage:\n${stderr.slice(-1500)}`).toBeUndefined();

      // The same request again (its key) is admitted now; the pool reconnects on its own.
      let again: Response | undefined;
      const end = Date.now() + 15_000;
      while (Date.now() < end) {
        again = await refund(2);
        if (again.status !== 503) break;
        await sleep(200);
      }
      expect(again?.status).toBe(202);
      await succeeded(((await again!.json()) as { invocation: { invocationId: string } }).invocation.invocationId);
      expect(exitCode).toBeUndefined();
    } finally {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
      await inst.close();
    }
  }, 120_000);
});
