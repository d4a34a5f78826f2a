/**
 * Telemetry (SPEC 4.9): the host opens an OpenTelemetry span per processed invocation through the
 * OpenTelemetry API (a no-op unless an SDK is installed) and reports every transition to `onEvent`.
 * A minimal recording TracerProvider stands in for an SDK here.
 */
import { trace, type Span, type SpanOptions, type TracerProvider } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { memoryStore } from "../../src/stores/memory/index.js";
import { grantAuthority, makeHostBench } from "./fixture.js";

interface Recorded {
  name: string;
  attributes: Record<string, unknown>;
  ended: boolean;
  status?: unknown;
}

const spans: Recorded[] = [];
function recordingSpan(name: string, options?: SpanOptions): Span {
  const rec: Recorded = { name, attributes: { ...(options?.attributes ?? {}) }, ended: false };
  spans.push(rec);
  const span = {
    setAttribute: (k: string, v: unknown) => ((rec.attributes[k] = v), span),
    setAttributes: (a: Record<string, unknown>) => (Object.assign(rec.attributes, a), span),
    addEvent: () => span,
    addLink: () => span,
    addLinks: () => span,
    setStatus: (s: unknown) => ((rec.status = s), span),
    updateName: () => span,
    end: () => void (rec.ended = true),
    isRecording: () => true,
    recordException: () => undefined,
    spanContext: () => ({ traceId: "0".repeat(31) + "1", spanId: "0".repeat(15) + "1", traceFlags: 1 }),
  };
  return span;
}
const tracer = {
  startSpan: (name: string, options?: SpanOptions) => recordingSpan(name, options),
  startActiveSpan: (name: string, ...args: unknown[]) => {
    const fn = args.at(-1) as (s: Span) => unknown;
    const options = (args.length > 1 ? args[0] : undefined) as SpanOptions | undefined;
    return fn(recordingSpan(name, options));
  },
};
const provider: TracerProvider = { getTracer: () => tracer };

describe("telemetry", () => {
  trace.setGlobalTracerProvider(provider);
  afterAll(() => trace.disable());

  it("a span per processed invocation, ended, with its result; onEvent sees every transition", async () => {
    const store = memoryStore();
    const b = makeHostBench(store);
    await grantAuthority(b);
    const { invocation } = await b.host.submit(b.request());
    await b.host.worker().runOnce();
    const span = spans.find((s) => s.name === "writ.invocation.process" && s.attributes["writ.invocation_id"] === invocation.invocationId);
    expect(span).toMatchObject({ ended: true, attributes: { "writ.action": "one.idem", "writ.result": "succeeded" } });
    expect(b.events.filter((e) => e.invocationId === invocation.invocationId).map((e) => e.type)).toEqual(["invocation.submitted", "invocation.claimed", "invocation.succeeded"]);
    await store.close();
  });
});
