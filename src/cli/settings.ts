/**
 * The settings `writ serve` runs with, as `writ doctor` prints them: the config's values with the
 * defaults filled in. Secrets never appear: a store URL's password is masked, completion secrets
 * are counted, not shown, and API keys are not part of the config.
 */
import type { WritConfig } from "../config/define-config.js";
import { resolveServerConfig, type ResolvedServerConfig } from "../config/server-options.js";
import { resolveConsoleOptions, type ResolvedConsoleOptions } from "../console/options.js";
import { resolveMcpHttpOptions, type ResolvedMcpHttpOptions } from "../mcp/options.js";

export interface EffectiveSettings {
  /** A PostgreSQL URL with its password masked; `poolSize`, `queryTimeoutMs` and `keepAliveMs` when the config sets them. */
  store: { kind: string; path?: string; url?: string; poolSize?: number; queryTimeoutMs?: number; keepAliveMs?: number };
  server: ResolvedServerConfig;
  console: ResolvedConsoleOptions;
  /** The MCP endpoint's options with their defaults (docs/mcp.md). */
  mcp: ResolvedMcpHttpOptions & { demoSpace?: string };
  worker: Record<string, unknown>;
  host: Record<string, unknown>;
  /** How many completion secrets the config holds (the secrets themselves are never shown). */
  completionSecrets: number;
}

/** A URL with its password (and a `password` query parameter) replaced by `***`. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const k of [...u.searchParams.keys()]) if (/pass|secret|token|key/i.test(k)) u.searchParams.set(k, "***");
    return u.toString();
  } catch {
    // Not a URL we can parse: show its scheme at most, never the rest (it may hold a password).
    return `${/^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? ""}//***`;
  }
}

/** Only plain values: functions (loggers, hooks) are shown by name, nothing is called. */
function plain(o: object | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o ?? {}).map(([k, v]) => [k, typeof v === "function" ? "(function)" : v]));
}

/** The effective settings of a loaded (checked) config. */
export function effectiveSettings(config: WritConfig): EffectiveSettings {
  const s = config.store ?? { kind: "sqlite" as const };
  const store: EffectiveSettings["store"] =
    s.kind === "sqlite" ? { kind: "sqlite", path: s.path ?? ".writ/writ.db" } : s.kind === "postgres" ? { kind: "postgres", url: maskUrl(s.url), ...(s.poolSize !== undefined ? { poolSize: s.poolSize } : {}), ...(s.queryTimeoutMs !== undefined ? { queryTimeoutMs: s.queryTimeoutMs } : {}), ...(s.keepAliveMs !== undefined ? { keepAliveMs: s.keepAliveMs } : {}) } : { kind: s.kind };
  return {
    store,
    server: resolveServerConfig(config.server, "server."),
    console: resolveConsoleOptions(config.console),
    mcp: { ...resolveMcpHttpOptions(config.mcp), ...(config.mcp?.demoSpace !== undefined ? { demoSpace: config.mcp.demoSpace } : {}) },
    worker: plain(config.worker),
    host: plain(config.host),
    completionSecrets: (config.completionSecrets ?? []).reduce((n, c) => n + c.secrets.length, 0),
  };
}

/** One line per setting, `name  value`, for a terminal. */
export function settingsLines(s: EffectiveSettings): string[] {
  const lines: string[] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (v !== null && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length > 0) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else lines.push(`${prefix.padEnd(30)}  ${JSON.stringify(v)}`);
  };
  walk("", s);
  return lines;
}
