/**
 * Prometheus metrics (text exposition format 0.0.4), with no dependency: HTTP requests by route
 * template and status, request durations, and host events by type and transition — fed by the
 * host's `onEvent` hook. Labels are bounded (route templates, statuses, event types), never ids.
 */
import type { BreakerTransition } from "../host/breaker.js";
import type { HostEvent } from "../host/events.js";
import type { ArchiveStats } from "../host/archiver.js";
import type { Host } from "../host/host.js";
import type { RetentionSignal } from "../host/retention.js";

type Labels = Readonly<Record<string, string>>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

function formatNumber(n: number): string {
  if (n === Infinity) return "+Inf";
  return Number.isInteger(n) ? String(n) : n.toPrecision(6).replace(/\.?0+$/, "");
}

interface Metric {
  render(out: string[]): void;
}

interface Counter extends Metric {
  inc(labels: Labels, by?: number): void;
  value(labels: Labels): number;
}

/** Series keyed by their label values joined (cheap per observation); label text built once per series. */
function seriesKey(labels: Labels): string {
  let k = "";
  for (const name in labels) k += labels[name] + "\u0000";
  return k;
}

function counter(name: string, help: string): Counter {
  const series = new Map<string, { text: string; value: number }>();
  return {
    inc(labels, by = 1) {
      const key = seriesKey(labels);
      const s = series.get(key);
      if (s) s.value += by;
      else series.set(key, { text: labelText(labels), value: by });
    },
    value: (labels) => series.get(seriesKey(labels))?.value ?? 0,
    render(out) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
      for (const s of series.values()) out.push(`${name}${s.text} ${formatNumber(s.value)}`);
    },
  };
}

interface Gauge extends Metric {
  add(delta: number): void;
  set(value: number): void;
}

function gauge(name: string, help: string): Gauge {
  let current = 0;
  return {
    add(delta) {
      current += delta;
    },
    set(value) {
      current = value;
    },
    render(out) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${formatNumber(current)}`);
    },
  };
}

interface LabeledGauge extends Metric {
  set(labels: Labels, value: number): void;
}

function labeledGauge(name: string, help: string): LabeledGauge {
  const series = new Map<string, { text: string; value: number }>();
  return {
    set(labels, value) {
      series.set(seriesKey(labels), { text: labelText(labels), value });
    },
    render(out) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
      for (const s of series.values()) out.push(`${name}${s.text} ${formatNumber(s.value)}`);
    },
  };
}

interface Histogram extends Metric {
  observe(labels: Labels, v: number): void;
}

function histogram(name: string, help: string, buckets: readonly number[]): Histogram {
  const series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  return {
    observe(labels, v) {
      const key = seriesKey(labels);
      let s = series.get(key);
      if (!s) series.set(key, (s = { labels, counts: buckets.map(() => 0), sum: 0, count: 0 }));
      for (let i = 0; i < buckets.length; i++) if (v <= buckets[i]!) s.counts[i]!++;
      s.sum += v;
      s.count++;
    },
    render(out) {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} histogram`);
      for (const s of series.values()) {
        buckets.forEach((b, i) => out.push(`${name}_bucket${labelText({ ...s.labels, le: formatNumber(b) })} ${s.counts[i]!}`));
        out.push(`${name}_bucket${labelText({ ...s.labels, le: "+Inf" })} ${s.count}`);
        out.push(`${name}_sum${labelText(s.labels)} ${formatNumber(s.sum)}`, `${name}_count${labelText(s.labels)} ${s.count}`);
      }
    },
  };
}

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

export interface ServerMetrics {
  /** One finished HTTP request; `route` is the template (or `unmatched`). */
  request(method: string, route: string, status: number, seconds: number): void;
  inFlight(delta: 1 | -1): void;
  /** One host event (what `onEvent` receives). */
  event(e: HostEvent): void;
  /** A circuit breaker state change this process wrote. */
  breaker(t: BreakerTransition): void;
  /** Retention (docs/retention.md): rows one pruner batch deleted, or a finished run's state. */
  retention(s: RetentionSignal, now: number): void;
  /** The text exposition. */
  render(): string;
  /** A counter's current value (tests). */
  count(name: "requests" | "events" | "transitions" | "breakers" | "pruned", labels: Labels): number;
}

export function createMetrics(): ServerMetrics {
  const requests = counter("writ_http_requests_total", "HTTP requests answered, by method, route template and status.");
  const duration = histogram("writ_http_request_duration_seconds", "HTTP request duration in seconds, by method and route template.", [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]);
  const inflight = gauge("writ_http_requests_in_flight", "HTTP requests being answered now.");
  const events = counter("writ_host_events_total", "Host events (onEvent), by type.");
  const transitions = counter("writ_invocation_transitions_total", "Invocation state transitions, by source and target status.");
  const breakers = counter("writ_breaker_transitions_total", "Circuit breaker state changes this process wrote, by connector, operation and new state (closed, open, half_open).");
  const pruned = counter("writ_retention_pruned_rows_total", "Rows the retention pruner of this process deleted, by kind (docs/retention.md).");
  const oldest = gauge("writ_retention_oldest_ended_invocation_age_seconds", "Age of the oldest ended invocation still in the database at the last pruner run (0 when none).");
  const held = labeledGauge("writ_retention_held_invocations", "Ended invocations old enough to prune that the last pruner run kept, by reason (not_archived, open_reconciliation, pending_approval).");
  return {
    request(method, route, status, seconds) {
      const m = METHODS.has(method) ? method : "OTHER";
      requests.inc({ method: m, route, status: String(status) });
      duration.observe({ method: m, route }, seconds);
    },
    inFlight(delta) {
      inflight.add(delta);
    },
    event(e) {
      events.inc({ type: e.type });
      if (e.status !== undefined && e.from !== undefined) transitions.inc({ from: e.from, to: e.status });
      else if (e.type === "invocation.submitted") transitions.inc({ from: "none", to: "queued" });
    },
    breaker(t) {
      breakers.inc({ connector: t.connector, operation: t.operation, to: t.to });
    },
    retention(s, now) {
      if (s.kind === "batch") {
        for (const [kind, n] of Object.entries(s.pruned)) if (n !== undefined && n > 0) pruned.inc({ kind }, n);
        return;
      }
      if (s.report.dryRun) return;
      oldest.set(s.report.oldestEndedAt === null ? 0 : Math.max(0, (now - s.report.oldestEndedAt) / 1000));
      for (const [reason, n] of Object.entries(s.report.held)) held.set({ reason }, n);
    },
    render() {
      const out: string[] = [];
      for (const m of [requests, duration, inflight, events, transitions, breakers, pruned, oldest, held]) m.render(out);
      return out.join("\n") + "\n";
    },
    count(name, labels) {
      return (name === "requests" ? requests : name === "events" ? events : name === "breakers" ? breakers : name === "pruned" ? pruned : transitions).value(labels);
    },
  };
}

/**
 * The journal archiver's gauges and counters (docs/archives.md): this process's bytes, entries and
 * segments archived, entries pruned, checkpoints published to witnesses and witness failures; as of its last pass over every scope, the archive lag (sealed
 * entries not archived yet, summed over scopes) and the age of the oldest entry still in the database.
 */
export function archiveMetricLines(s: ArchiveStats, now: number): string {
  const out: string[] = [];
  const one = (name: string, type: "counter" | "gauge", help: string, v: number): void => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${formatNumber(v)}`);
  };
  one("writ_journal_archived_bytes_total", "counter", "Bytes of journal segments this process wrote to the archive.", s.bytesArchived);
  one("writ_journal_archived_entries_total", "counter", "Journal entries this process archived.", s.entriesArchived);
  one("writ_journal_archive_segments_total", "counter", "Journal segments this process wrote to the archive.", s.segmentsWritten);
  one("writ_journal_pruned_entries_total", "counter", "Archived journal entries this process dropped from the database.", s.entriesPruned);
  one("writ_journal_witness_published_total", "counter", "Signed journal checkpoints this process's archiver published to a configured witness (each witness counted).", s.witnessPublished);
  one("writ_journal_witness_failures_total", "counter", "Times a configured checkpoint witness could not be read or did not take a checkpoint (per witness and scope in an archiver pass; retried at the next pass).", s.witnessFailures);
  if (s.lag !== null) one("writ_journal_archive_lag_entries", "gauge", "Sealed journal entries not archived yet (sealed head minus archive watermark, summed over scopes), as of the last archiver pass.", s.lag);
  if (s.oldestLiveAt !== null) one("writ_journal_oldest_live_entry_age_seconds", "gauge", "Age of the oldest journal entry still in the database, as of the last archiver pass.", Math.max(0, (now - s.oldestLiveAt) / 1000));
  return out.join("\n") + "\n";
}

const byHost = new WeakMap<Host, ServerMetrics>();

/**
 * The metrics of a host, created once and fed by its `onEvent` hook. The runtime builds the host
 * before the server exists and `openRuntime` takes no `onEvent`, so the hook is chained onto the
 * host's options here (any hook already there keeps running, first).
 */
export function metricsFor(host: Host): ServerMetrics {
  const existing = byHost.get(host);
  if (existing) return existing;
  const m = createMetrics();
  const o = host.context.o;
  const previous = o.onEvent;
  o.onEvent = previous
    ? (e) => {
        try {
          previous(e);
        } finally {
          m.event(e);
        }
      }
    : (e) => m.event(e);
  host.context.breakers.onChange((t) => m.breaker(t));
  host.retention.onSignal((s) => m.retention(s, o.clock.now()));
  const render = m.render.bind(m);
  m.render = () => render() + archiveMetricLines(host.archive.stats(), o.clock.now());
  byHost.set(host, m);
  return m;
}
