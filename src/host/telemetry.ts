/**
 * OpenTelemetry spans and metrics (docs/host.md, Redaction and telemetry) through the OpenTelemetry API: no-ops unless the
 * application installs an SDK. Span and metric names are stable: `writ.invocation.process`,
 * `writ.worker.claim`; `writ.invocation.transitions` (counter, by `to` status).
 */
import type { Counter, Span, Tracer } from "@opentelemetry/api";
import type { HostEvent } from "./events.js";

type Api = typeof import("@opentelemetry/api");

interface Instruments {
  api: Api;
  tracer: Tracer;
  transitions: Counter;
  claimed: Counter;
}

let instruments: Instruments | undefined;
let loading: Promise<Instruments> | undefined;
/** Events counted before the API module finished loading; replayed once it has, in order. */
const pending: HostEvent[] = [];

function count(i: Instruments, e: HostEvent): void {
  if (e.type === "invocation.claimed") i.claimed.add(1);
  else if (e.status) i.transitions.add(1, { to: e.status });
}

/**
 * The OpenTelemetry API, imported on the first span or event (a CLI command that processes nothing,
 * such as `writ ls`, never loads it).
 */
function load(): Promise<Instruments> {
  loading ??= import("@opentelemetry/api").then((api) => {
    const meter = api.metrics.getMeter("writ");
    const loaded: Instruments = {
      api,
      tracer: api.trace.getTracer("writ"),
      transitions: meter.createCounter("writ.invocation.transitions", { description: "Invocation state transitions, by target status" }),
      claimed: meter.createCounter("writ.worker.claimed", { description: "Invocations claimed by workers" }),
    };
    for (const e of pending.splice(0)) count(loaded, e);
    instruments = loaded;
    return loaded;
  });
  return loading;
}

/** Runs `fn` inside a span; records an exception and error status when it throws. */
export async function withSpan<T>(name: string, attributes: Record<string, string | number>, fn: (span: Span) => Promise<T>): Promise<T> {
  const { api, tracer } = instruments ?? (await load());
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      const out = await fn(span);
      return out;
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: api.SpanStatusCode.ERROR });
      throw e;
    } finally {
      span.end();
    }
  });
}

export function countEvent(e: HostEvent): void {
  if (instruments) return count(instruments, e);
  pending.push(e);
  void load().catch(() => undefined);
}
