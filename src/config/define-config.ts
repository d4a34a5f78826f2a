/**
 * `writ.config.ts`: one typed object that says which store, actions, connectors, policy and keys a
 * Writ process uses.
 *
 * @example
 * // writ.config.ts
 * import { defineConfig } from "writ";
 * export default defineConfig({ store: { kind: "sqlite" }, actions: [refund], connectors: [payments],
 *   policy: { cedar: { policies: readFileSync("policies.cedar", "utf8") } } });
 */
import type { ActionDefinition, Connector } from "../core/action.js";
import { WritError } from "../core/errors.js";
import type { PolicyEngine } from "../core/policy.js";
import type { Store } from "../core/store.js";
import type { CompletionSecret } from "../host/completions.js";
import type { HostOptions } from "../host/options.js";
import { resolveArchiveOptions, type ArchiveHostOptions } from "../core/archive-options.js";
import { isCheckpointWitness, NOT_A_WITNESS, witnessSpecProblem, type CheckpointWitness } from "../core/witness.js";
import { resolveMcpHttpOptions, type McpHttpOptions } from "../mcp/options.js";
import type { WorkerOptions } from "../host/worker.js";
import { resolveConsoleOptions, type ConsoleOptions } from "../console/options.js";
import { resolveServerConfig, type ServerConfig } from "./server-options.js";

export type StoreConfig =
  | { kind: "sqlite"; /** @defaultValue ".writ/writ.db" */ path?: string }
  | {
      kind: "postgres";
      url: string;
      /** @defaultValue 10 */
      poolSize?: number;
      /**
       * How long (ms) a statement may go unanswered before it fails and its connection is discarded:
       * what finds a database that vanished silently mid-statement (docs/deploying-postgres.md,
       * "A database that vanishes silently"). 0 waits forever. @defaultValue 30000
       */
      queryTimeoutMs?: number;
      /** TCP keepalive on idle connections (ms before the kernel probes the peer); 0 turns it off. @defaultValue 10000 */
      keepAliveMs?: number;
    }
  | { kind: "memory" }
  | { kind: "custom"; store: Store };

export interface WritConfig {
  /** @defaultValue { kind: "sqlite" } (the embedded default, `.writ/writ.db`) */
  store?: StoreConfig;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  actions: ReadonlyArray<ActionDefinition<any>>;
  connectors: readonly Connector[];
  /** A PolicyEngine, or Cedar policies the runtime turns into one. */
  policy: PolicyEngine | { cedar: { policies: string; schema?: string } };
  /** Where signing keys live (private keys 0600). @defaultValue ".writ/keys" */
  keys?: { dir?: string };
  /** The HTTP server of `writ serve`: where it listens, body limits, per-key rate limit, API key cache, timeouts (./server-options.ts). */
  server?: ServerConfig;
  /** Worker settings used by `writ serve` and `writ worker`. */
  worker?: WorkerOptions;
  completionSecrets?: CompletionSecret[];
  /** The operator console `writ serve` serves at /console, with its proxy trust (`trustProxy`) and sessions (docs/console.md). */
  console?: ConsoleOptions;
  /** The MCP gateway (`/mcp` on `writ serve`, `writ mcp` on stdio): waits, limits, allowed origins, sessions (docs/mcp.md). */
  mcp?: McpHttpOptions;
  /**
   * Journal archives (docs/archives.md): on by default, into a local directory
   * (`<state dir>/archives`, the state dir being the parent of keys.dir, e.g. `.writ/archives`);
   * `enabled: false` turns archiving (and pruning) off. `dir` resolves against the config's directory.
   * `witnesses`: where the archiver publishes each checkpoint it signs, each a file path (against
   * the config's directory), an http(s) URL, or a `CheckpointWitness` (`httpWitness(url, { headers })`
   * for one that needs credentials).
   */
  archive?: { enabled?: boolean; dir?: string; witnesses?: ReadonlyArray<string | CheckpointWitness> } & Omit<ArchiveHostOptions, "target" | "witnesses">;
  /** Host tuning (timeouts, retries, breakers, recovery). */
  host?: Pick<HostOptions, "timeoutMs" | "inProgressTimeoutMs" | "maxDecisionAgeSeconds" | "recoveryMaxAttempts" | "retry" | "breaker" | "approvalTtlMs" | "earlyCompletionRetentionMs" | "sweepMs" | "sealWithinMs" | "redactErrorText" | "notifications" | "retention">;
}

/** The longest deadline Node's timers keep (about 24 days): `NO_DEADLINE_MS` of the PostgreSQL store, not imported so a SQLite process never loads its modules. */
const NO_DEADLINE_MS = 2_147_483_647;
/** The numeric options of a PostgreSQL store in the config: name, least, greatest, what the number means. */
const POSTGRES_INT_OPTIONS = [
  ["poolSize", 1, 10_000, ""],
  ["queryTimeoutMs", 0, NO_DEADLINE_MS, " (ms; 0 waits forever)"],
  ["keepAliveMs", 0, NO_DEADLINE_MS, " (ms; 0 turns keepalive off)"],
] as const;
const POSTGRES_KEYS: readonly string[] = ["kind", "url", ...POSTGRES_INT_OPTIONS.map(([n]) => n)];

/** Declares a config with types; checks its shape so a mistake is named at load time. */
export function defineConfig(config: WritConfig): WritConfig {
  checkConfig(config, "defineConfig");
  return config;
}

export function checkConfig(c: unknown, where: string): asserts c is WritConfig {
  const bad = (msg: string): never => {
    throw new WritError("INVALID_OPTION", `${where}: ${msg}`);
  };
  if (typeof c !== "object" || c === null) bad("the config must be an object (export default defineConfig({...}))");
  const o = c as Record<string, unknown>;
  if (!Array.isArray(o.actions)) bad("actions must be a list of defineAction(...) results");
  if (!Array.isArray(o.connectors)) bad("connectors must be a list of defineConnector(...) results");
  const p = o.policy as Record<string, unknown> | undefined;
  if (!p || (typeof p.evaluate !== "function" && (typeof p.cedar !== "object" || p.cedar === null))) bad("policy must be a PolicyEngine or { cedar: { policies } }");
  if (o.store !== undefined) {
    const s = o.store as Record<string, unknown>;
    if (!["sqlite", "postgres", "memory", "custom"].includes(s.kind as string)) bad("store.kind must be sqlite, postgres, memory or custom");
    if (s.kind === "postgres") {
      if (typeof s.url !== "string") bad("store.url is required for postgres");
      for (const [name, min, max, unit] of POSTGRES_INT_OPTIONS) {
        const v = s[name];
        if (v !== undefined && (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max)) bad(`store.${name} must be an integer from ${min} to ${max}${unit}`);
      }
      const unknown = Object.keys(s).filter((k) => !POSTGRES_KEYS.includes(k));
      if (unknown.length > 0) bad(`store has no option ${unknown.map((k) => `\`${k}\``).join(", ")} for postgres (it takes ${POSTGRES_KEYS.join(", ")})`);
    }
  }
  if (o.archive !== undefined) {
    const a = o.archive as Record<string, unknown>;
    if (typeof a !== "object" || a === null) bad("archive must be an object");
    if (a.enabled !== undefined && typeof a.enabled !== "boolean") bad("archive.enabled must be true or false");
    if (a.dir !== undefined && (typeof a.dir !== "string" || a.dir.length === 0)) bad("archive.dir must be a non-empty path");
    const { enabled: _e, dir: _d, witnesses, ...rest } = a;
    if (witnesses !== undefined) {
      if (!Array.isArray(witnesses)) bad("archive.witnesses must be a list of witnesses (file paths, http(s) URLs or CheckpointWitness objects)");
      for (const [i, w] of (witnesses as unknown[]).entries()) {
        const why = typeof w === "string" ? witnessSpecProblem(w) : isCheckpointWitness(w) ? null : NOT_A_WITNESS;
        if (why !== null) bad(`archive.witnesses[${i}] ${why}`);
      }
      if (a.enabled === false && (witnesses as unknown[]).length > 0) bad("archive.witnesses need archiving on: archive.enabled is false, so nothing signs checkpoints to publish");
    }
    try {
      resolveArchiveOptions(rest);
    } catch (e) {
      bad((e as Error).message.replace("createHost: ", ""));
    }
  }
  // Named in the error as the config spells them: `<where>: server.rateLimit.burst must be ...`.
  resolveServerConfig(o.server as ServerConfig | undefined, `${where}: server.`);
  for (const [section, check] of [
    ["console", () => resolveConsoleOptions(o.console as ConsoleOptions)],
    ["mcp", () => resolveMcpHttpOptions(o.mcp as McpHttpOptions)],
  ] as const) {
    if (o[section] === undefined) continue;
    try {
      check();
    } catch (e) {
      bad((e as Error).message);
    }
  }
}
