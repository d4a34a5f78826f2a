/**
 * HTTP submit throughput and latency (`npm run bench -- http`), measured side by side in one run:
 *
 * - `POST /v1/spaces/{spaceId}/invocations` (API key check, cached for the default `apiKeyCacheMs`
 *   as `writ serve` runs it (docs/security.md), JSON parse and validation, params
 *   schema, digest, one durable admission transaction with its journal entry) against the real
 *   server on SQLite (WAL, synchronous=FULL, group commit) with a started worker executing what is
 *   admitted — what `writ serve` runs — every request with a fresh idempotency key;
 * - a bare Hono hello-world JSON route on the same Node server library (`@hono/node-server`).
 *
 * autocannon drives both with 50 connections from a worker thread (medians of rounds). The submit
 * rounds run with the worker started; the hello rounds run in the second phase, with the worker
 * stopped, so that the bare route has the JavaScript thread to itself (run beside the worker, which
 * works through what the submit rounds admitted, it measured a busy thread at a third of its rate).
 * In that second phase, admission alone, interleaved in rounds: HTTP submit (autocannon,
 * 50 connections) against `host.submit` called in-process by 50 concurrent callers on the same
 * runtime and store (the same request body, a fresh idempotency key each), and the hello route.
 * Their ratio is what the HTTP layer (key check, body parse, route validation, JSON answer) costs on
 * top of admission.
 * The worker's transactions share the store's single serialized writer with admissions, which is
 * why admission alone is measured with it stopped. Results: bench/results/http.json.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { z } from "zod";
import { defineAction, defineConnector } from "../src/core/action.js";
import { functionPolicy } from "../src/core/policy.js";
import { defineConfig } from "../src/config/define-config.js";
import { createApiKey } from "../src/runtime/api-keys.js";
import { openRuntime, type Runtime } from "../src/runtime/runtime.js";
import { metricsFor } from "../src/server/metrics.js";
import { startServer, type RunningServer } from "../src/server/server.js";
import { submitterOf } from "../src/runtime/principals.js";
import { median, percentile } from "./lib.js";

const CONNECTIONS = 50;
const WORKER_CONCURRENCY = 16;
const SECONDS = { warmup: 2, hello: 2, submit: 4, admissionOnly: 3, hostSubmit: 3 };

export interface Run {
  perSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

interface Round {
  /** The bare route, measured in the round of the same index of the second phase (worker stopped). */
  hello: Run;
  /** Submit with the worker started. */
  submit: Run;
}

export interface HttpBenchResult {
  connections: number;
  secondsPerRun: typeof SECONDS;
  rounds: Round[];
  medians: { helloPerSec: number; helloP50Ms: number; helloP99Ms: number; submitPerSec: number; submitP50Ms: number; submitP99Ms: number };
  /** Submit throughput over bare Hono throughput (medians). */
  ratio: number;
  /** Submit with the worker stopped (median of interleaved rounds), and its ratio to bare Hono. */
  admissionOnly: Run & { ratio: number };
  /**
   * Admission alone, worker stopped, interleaved rounds: HTTP submit vs in-process `host.submit`
   * with as many concurrent callers as HTTP connections, same store. `ratio` = HTTP / host.submit.
   */
  httpOverHostSubmit: { rounds: { http: Run; host: Run }[]; httpPerSec: number; hostPerSec: number; hostP50Ms: number; ratio: number; goal: number };
  /** Invocations the worker ran to `succeeded` while the bench ran, and how many were admitted. */
  worker: { concurrency: number; succeeded: number; admitted: number };
  store: string;
}

async function fire(opts: autocannon.Options): Promise<Run> {
  const r = await autocannon({ connections: CONNECTIONS, workers: 1, ...opts });
  return { perSec: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99, requests: r.requests.total, non2xx: r.non2xx, errors: r.errors };
}

/** The runtime, server and drivers `benchHttp` (and bench/prof-http.ts) measure. */
export interface HttpBenchRig {
  runtime: Runtime;
  server: RunningServer;
  /** autocannon against the submit route for `seconds`, a fresh idempotency key per request. */
  submit: (seconds: number) => Promise<Run>;
  /**
   * `host.submit` in process for `seconds` by as many concurrent callers as autocannon has
   * connections: the request the route hands the host (the same body, actor and `submittedBy`).
   */
  hostSubmit: (seconds: number) => Promise<Run>;
  close: () => Promise<void>;
}

/** Opens the SQLite runtime, its API key and authority, and `writ serve`'s HTTP server over it. */
export async function openHttpBench(): Promise<HttpBenchRig> {
  const dir = mkdtempSync(join(tmpdir(), "writ-bench-http-"));
  const action = defineAction({ id: "payments.refund", version: "1", params: z.object({ amount: z.number().int(), currency: z.string() }), idempotent: true, steps: [{ name: "refund", connector: "payments", operation: "refund" }] });
  const payments = defineConnector({ id: "payments", operations: { refund: ({ idempotencyKey }) => ({ outcome: "success", externalRef: `re_${idempotencyKey.slice(-12)}` }) } });
  const config = defineConfig({ store: { kind: "sqlite", path: join(dir, "writ.db") }, keys: { dir: join(dir, "keys") }, actions: [action], connectors: [payments], policy: functionPolicy("bench:v1", () => "ALLOW") });
  const runtime = await openRuntime(config, { cwd: dir });
  const { crypto, random, clock } = runtime.host.context.o;
  const scope = { tenantId: "acme", spaceId: "prod" };
  await runtime.host.authorities.create(scope, { authorityRef: "auth-1", principal: { type: "agent", id: "bot" }, grantor: { type: "user", id: "root" }, actions: ["*"] });
  // The key acts as the agent it submits for (a key's principal is its actor); the per-key rate
  // limit is lifted, since the bench measures throughput, not the limiter.
  const { key, record } = await createApiKey(runtime.store, crypto, random, { tenantId: "acme", roles: ["submit"], name: "bench", principal: { type: "agent", id: "bot" } }, clock.now());
  const server = await startServer(runtime, { port: 0, rateLimit: { perSecond: 1_000_000, burst: 10_000_000 } });

  const body = JSON.stringify({ action: "payments.refund", actionVersion: "1", actor: { type: "agent", id: "bot" }, authorityRef: "auth-1", params: { amount: 100, currency: "EUR" }, idempotencyKey: "bench-[<id>]" });
  const submit = (duration: number): Promise<Run> =>
    fire({ url: `${server.url}/v1/spaces/prod/invocations`, method: "POST", duration, headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body, idReplacement: true });
  // What the route hands the host for that body and key: the same admission work (the
  // submitter is recorded on the invocation and its journal entry).
  const submittedBy = submitterOf(record);
  const hostSubmit = async (seconds: number): Promise<Run> => {
    const request = JSON.parse(body) as { idempotencyKey: string; [k: string]: unknown };
    const lat: number[] = [];
    let n = 0;
    let errors = 0;
    const end = performance.now() + seconds * 1000;
    const t0 = performance.now();
    const caller = async (c: number): Promise<void> => {
      while (performance.now() < end) {
        const s = performance.now();
        try {
          await runtime.host.submit({ ...request, tenantId: "acme", spaceId: "prod", idempotencyKey: `host-${c}-${n++}-${t0}` }, { submittedBy });
        } catch {
          errors++;
        }
        lat.push(performance.now() - s);
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => caller(c)));
    const secs = (performance.now() - t0) / 1000;
    return { perSec: lat.length / secs, p50Ms: percentile(lat, 50), p99Ms: percentile(lat, 99), requests: lat.length, non2xx: 0, errors };
  };
  return {
    runtime,
    server,
    submit,
    hostSubmit,
    close: async () => {
      await server.close();
      await runtime.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function benchHttp(rounds = 3): Promise<HttpBenchResult> {
  const { runtime, submit, hostSubmit: hostRun, close } = await openHttpBench();
  const worker = runtime.host.worker({ concurrency: WORKER_CONCURRENCY, pollMs: 50 });
  worker.start();

  const bare = new Hono();
  bare.get("/hello", (c) => c.json({ hello: "world" }));
  const bareServer = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: bare.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const barePort = (bareServer.address() as { port: number }).port;
  const hello = (duration: number): Promise<Run> => fire({ url: `http://127.0.0.1:${barePort}/hello`, duration });

  const metrics = metricsFor(runtime.host);
  try {
    await submit(SECONDS.warmup);
    const submits: Run[] = [];
    for (let i = 0; i < rounds; i++) submits.push(await submit(SECONDS.submit));
    await worker.stop({ drain: false });
    await hello(SECONDS.warmup);
    await hostRun(1);
    const adm: { http: Run; host: Run }[] = [];
    const hellos: Run[] = [];
    for (let i = 0; i < rounds; i++) {
      // Alternate the order so that no side always runs right after the same other.
      if (i % 2 === 0) {
        adm.push({ http: await submit(SECONDS.admissionOnly), host: await hostRun(SECONDS.hostSubmit) });
        hellos.push(await hello(SECONDS.hello));
      } else {
        hellos.push(await hello(SECONDS.hello));
        const h = await hostRun(SECONDS.hostSubmit);
        adm.push({ http: await submit(SECONDS.admissionOnly), host: h });
      }
    }
    const out: Round[] = submits.map((s, i) => ({ hello: hellos[i]!, submit: s }));
    const alone = adm.map((r) => r.http).sort((a, b) => a.perSec - b.perSec)[adm.length >> 1]!;
    for (const r of [...out.map((x) => x.submit), ...adm.flatMap((x) => [x.http, x.host])]) if (r.non2xx > 0 || r.errors > 0) throw new Error(`a submit run had ${r.non2xx} non-2xx answers and ${r.errors} errors`);
    const m = (f: (r: Round) => number): number => median(out.map(f));
    const medians = {
      helloPerSec: m((r) => r.hello.perSec),
      helloP50Ms: m((r) => r.hello.p50Ms),
      helloP99Ms: m((r) => r.hello.p99Ms),
      submitPerSec: m((r) => r.submit.perSec),
      submitP50Ms: m((r) => r.submit.p50Ms),
      submitP99Ms: m((r) => r.submit.p99Ms),
    };
    return {
      connections: CONNECTIONS,
      secondsPerRun: SECONDS,
      rounds: out,
      medians,
      ratio: medians.submitPerSec / medians.helloPerSec,
      admissionOnly: { ...alone, ratio: alone.perSec / medians.helloPerSec },
      httpOverHostSubmit: {
        rounds: adm,
        httpPerSec: median(adm.map((r) => r.http.perSec)),
        hostPerSec: median(adm.map((r) => r.host.perSec)),
        hostP50Ms: median(adm.map((r) => r.host.p50Ms)),
        ratio: median(adm.map((r) => r.http.perSec)) / median(adm.map((r) => r.host.perSec)),
        goal: 0.8,
      },
      worker: { concurrency: WORKER_CONCURRENCY, succeeded: metrics.count("transitions", { from: "running", to: "succeeded" }), admitted: metrics.count("requests", { method: "POST", route: "/v1/spaces/{spaceId}/invocations", status: "202" }) },
      store: runtime.store.kind,
    };
  } finally {
    await worker.stop({ drain: false });
    await new Promise<void>((resolve) => bareServer.close(() => resolve()));
    await close();
  }
}
