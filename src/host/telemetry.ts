/**
 * OpenTelemetry spans and metrics (docs/host.md, Redaction and telemetry) through the OpenTelemetry API: no-ops unless the
 * application installs an SDK. Span and metric names are stable: `writ.invocation.process`,
 * `writ.worker.claim`; `writ.invocation.transitions` (counter, by `to` status).
 */
import { SpanStatusCode, metrics, trace, type Span } from "@opentelemetry/api";
import type { HostEvent } from "./events.js";

const tracer = trace.getTracer("writ");
const meter = metrics.getMeter("writ");
const transitions = meter.createCounter("writ.invocation.transitions", { description: "Invocation state transitions, by target status" });
const claimed = meter.createCounter("writ.worker.claimed", { description: "Invocations claimed by workers" });

/** Runs `fn` inside a span; records an exception and error status when it throws. */
export async function withSpan<T>(name: string, attributes: Record<string, string | number>, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      const out = await fn(span);
      return out;
    } catch (e) {
      span.recordException(e instanceof Error ? e : String(e));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw e;
    } finally {
      span.end();
    }
  });
}

export function countEvent(e: HostEvent): void {
  if (e.type === "invocation.claimed") claimed.add(1);
  else if (e.status) transitions.add(1, { to: e.status });
}
