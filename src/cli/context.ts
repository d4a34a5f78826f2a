/**
 * What a command works with: the parsed global flags, the printer, and the config and runtime,
 * loaded on first use and closed when the command ends.
 */
import { userInfo } from "node:os";
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { WritConfig } from "../config/define-config.js";
import type { PolicyEngine } from "../core/policy.js";
import type { Actor, Scope } from "../core/types.js";
import type { Logger } from "../host/options.js";
import type { Store } from "../core/store.js";
import type { InvocationReads } from "../host/reads.js";
import type { ReadRuntime } from "../runtime/reads.js";
import type { OpenRuntimeOptions, Runtime } from "../runtime/runtime.js";
import { TENANT_SPACE } from "../core/reserved.js";
import { escapeForTerminal } from "../core/text.js";
import { flag, parseActor, str, type Values } from "./args.js";
import { configError, usageError } from "./exit-codes.js";
import { Printer, type CliIo } from "./output.js";

export interface CliEnvironment {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  io: CliIo;
}

const SCOPE_ID_RE = /^[A-Za-z0-9_.:-]{1,200}$/;

/** Where a default came from, for the hint an empty list prints (e.g. `$WRIT_TENANT`). */
export interface Source {
  value: string;
  from: string;
}

/** What `runtime()` takes besides the runtime's own options. */
export interface CliRuntimeOptions extends Omit<OpenRuntimeOptions, "cwd"> {
  /**
   * Parse the Cedar policy set when the runtime opens (long-running commands: a broken policy stops
   * them at start). Otherwise it is parsed on the first evaluation, so commands that evaluate
   * nothing (`writ ls`) skip the cost. @defaultValue false
   */
  eagerPolicy?: boolean;
}

export class CliContext {
  readonly out: Printer;
  readonly values: Values;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly io: CliIo;
  private loaded: Promise<{ path: string; config: WritConfig }> | undefined;
  private opened: Promise<Runtime> | undefined;
  private openedReads: Promise<ReadRuntime> | undefined;
  private scoped: Promise<{ scope: Scope; tenant: Source; space: Source }> | undefined;

  constructor(environment: CliEnvironment, values: Values) {
    this.values = values;
    this.cwd = environment.cwd;
    this.env = environment.env;
    this.io = environment.io;
    this.out = new Printer(environment.io, flag(values, "json"));
  }

  /**
   * The scope: --tenant / --space, else $WRIT_TENANT / $WRIT_SPACE, else the config's demo scope
   * (the one `npm start` serves), else "default" each.
   */
  async scope(): Promise<Scope> {
    return (await this.scopeSources()).scope;
  }

  private scopeSources(): Promise<{ scope: Scope; tenant: Source; space: Source }> {
    this.scoped ??= (async () => {
      const given = (name: "tenant" | "space", variable: string): Source | undefined => {
        const flagValue = str(this.values, name);
        if (flagValue !== undefined) return { value: flagValue, from: `--${name}` };
        const envValue = this.env[variable];
        return envValue !== undefined && envValue.length > 0 ? { value: envValue, from: `$${variable}` } : undefined;
      };
      let tenant = given("tenant", "WRIT_TENANT");
      const named = given("space", "WRIT_SPACE");
      // The demo section of the config `npm start` serves names its scope; no config: the defaults.
      const demo = tenant === undefined || named === undefined ? await this.config().then(
        ({ path, config }) => ({ path, demo: (config as { demo?: { tenantId?: unknown; spaceId?: unknown } }).demo }),
        () => null,
      ) : null;
      const from = demo ? `the demo section of ${this.relative(demo.path)}` : "";
      if (tenant === undefined && typeof demo?.demo?.tenantId === "string") tenant = { value: demo.demo.tenantId, from };
      tenant ??= { value: "default", from: "the default" };
      if (!SCOPE_ID_RE.test(tenant.value)) throw usageError(`--tenant must be 1-200 characters of letters, digits, _ . : -, not ${JSON.stringify(tenant.value)}`);
      // The one default-space rule (src/runtime/default-space.ts); the CLI holds no API key.
      const tenantId = tenant.value;
      const { defaultSpace, tenantSpacesOf } = await import("../runtime/default-space.js");
      const chosen = await defaultSpace({
        named: named && { spaceId: named.value, from: named.from },
        tenantSpaces: async () => (named === undefined ? tenantSpacesOf((await this.reads()).store, tenantId) : []),
        demoSpace: typeof demo?.demo?.spaceId === "string" ? demo.demo.spaceId : undefined,
      });
      const space: Source = chosen === null ? { value: "default", from: "the default" } : { value: chosen.spaceId, from: chosen.from === "the config's demo space" ? from : chosen.from };
      // The reserved tenant journal (API key changes) may be read and verified from the CLI.
      if (!SCOPE_ID_RE.test(space.value) && space.value !== TENANT_SPACE) throw usageError(`--space must be 1-200 characters of letters, digits, _ . : -, not ${JSON.stringify(space.value)}`);
      return { scope: { tenantId: tenant.value, spaceId: space.value }, tenant, space };
    })();
    return this.scoped;
  }

  /**
   * One line saying which scope and config a command used, for an empty list (stderr, people only):
   * `(nothing in demo/default: tenant and space from the demo section of examples/writ.config.ts; ...)`.
   */
  async explainEmpty(what: string): Promise<void> {
    if (this.out.json || flag(this.values, "quiet")) return;
    const { scope, tenant, space } = await this.scopeSources();
    const config = await this.findConfigFile().then(({ path, from }) => `${this.relative(path)} (from ${from})`, () => "none found");
    const origin = tenant.from === space.from ? `scope from ${tenant.from}` : `tenant from ${tenant.from}, space from ${space.from}`;
    const missing = (await this.openedReads?.catch(() => null))?.missing;
    const store = missing ? `; no store yet: ${missing} does not exist (writ serve or writ migrate creates it)` : "";
    this.out.note(`(no ${what} in ${scope.tenantId}/${scope.spaceId}; ${origin}; config ${config}${store}. --tenant/--space or $WRIT_TENANT/$WRIT_SPACE pick another scope.)`);
  }

  /** The operator acting: --as, else $WRIT_ACTOR, else user:<login name>. */
  operator(): Actor {
    const text = str(this.values, "as") ?? this.env.WRIT_ACTOR;
    if (text !== undefined) return parseActor(text, "as");
    let name = "operator";
    try {
      name = userInfo().username || name;
    } catch {
      // no login name (some containers): keep the placeholder
    }
    return { type: "user", id: name };
  }

  /**
   * The config file path: --config, else $WRIT_CONFIG, else writ.config.* in the current directory,
   * else the `writ.config` field of ./package.json (where `npm start` finds it in this repository).
   */
  async configPath(): Promise<string> {
    return (await this.findConfigFile()).path;
  }

  private async findConfigFile(): Promise<{ path: string; from: string }> {
    const { findConfig } = await import("../config/load-config.js");
    const flagValue = str(this.values, "config");
    if (flagValue !== undefined) return { path: findConfig(this.cwd, flagValue), from: "--config" };
    const envValue = this.env.WRIT_CONFIG;
    if (envValue !== undefined && envValue.length > 0) return { path: findConfig(this.cwd, envValue), from: "$WRIT_CONFIG" };
    try {
      return { path: findConfig(this.cwd), from: "the current directory" };
    } catch (e) {
      const fromPackage = packageConfig(this.cwd);
      if (fromPackage === null) throw e;
      if (!existsSync(fromPackage)) throw configError(`package.json names the config ${fromPackage} (field writ.config), which does not exist`);
      return { path: fromPackage, from: "the writ.config field of package.json" };
    }
  }

  /** `p` relative to the working directory when it lies inside it (for messages). */
  relative(p: string): string {
    return p.startsWith(this.cwd + "/") ? p.slice(this.cwd.length + 1) : p;
  }

  /**
   * Loads the config once. Its relative paths (store, keys, demo key files) and the bundle cache
   * resolve against the config file's directory, not the working directory: a client that starts
   * `writ` elsewhere (an MCP client, a service manager) finds the same store (docs/cli.md).
   */
  config(): Promise<{ path: string; config: WritConfig }> {
    this.loaded ??= (async () => {
      const { path } = await this.findConfigFile();
      const { loadConfig } = await import("../config/load-config.js");
      return { path, config: await loadConfig(path, { cacheDir: join(dirname(path), ".writ", "cache") }) };
    })();
    return this.loaded;
  }

  /** The config file's directory: relative paths in the config resolve against it. */
  async configDir(): Promise<string> {
    return dirname((await this.config()).path);
  }

  /** Opens the runtime (store, keys, policy, host) once; `close()` releases it. */
  runtime(options: CliRuntimeOptions = {}): Promise<Runtime> {
    const { eagerPolicy, ...rest } = options;
    this.opened ??= this.config().then(async ({ path, config }) => {
      // Imported on demand: commands that never open the store start faster.
      const { openRuntime, policyFromConfig } = await import("../runtime/runtime.js");
      const policy = eagerPolicy === true ? config.policy : lazyPolicy(() => policyFromConfig(config));
      return openRuntime({ ...config, policy }, { cwd: dirname(path), ...rest });
    });
    return this.opened;
  }

  /**
   * Reads without opening the host (docs/cli.md, Start-up): invocation reads as the host answers
   * them, and the store to read the rest from (steps, approvals, reconciliations). The runtime's
   * host and store when the runtime is open.
   */
  async reads(): Promise<{ config: WritConfig; reads: InvocationReads; store: Store }> {
    if (this.opened) {
      const rt = await this.opened;
      return { config: rt.config, reads: rt.host, store: rt.store };
    }
    this.openedReads ??= this.config().then(async ({ path, config }) => {
      const { openReads } = await import("../runtime/reads.js");
      return openReads(config, { cwd: dirname(path), ifMissing: "empty" });
    });
    const light = await this.openedReads;
    return { config: light.config, reads: light.reads, store: light.readable };
  }

  /** Resolves a path given on the command line (`--out`, `--file`): relative paths against the working directory. */
  resolvePath(p: string): string {
    return isAbsolute(p) ? p : join(this.cwd, p);
  }

  async close(): Promise<void> {
    const reads = this.openedReads;
    this.openedReads = undefined;
    if (reads) await (await reads.catch(() => null))?.close();
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    const rt = await opened.catch(() => null);
    await rt?.close();
  }
}

/** The `writ.config` field of `<dir>/package.json`, resolved against `dir`; null when there is none. */
export function packageConfig(dir: string): string | null {
  let pkg: unknown;
  try {
    pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  } catch {
    return null;
  }
  const field = (pkg as { writ?: { config?: unknown } } | null)?.writ?.config;
  return typeof field === "string" && field.length > 0 ? resolve(dir, field) : null;
}

/** A policy engine built on its first use (the Cedar set is parsed then, not when the runtime opens). */
function lazyPolicy(build: () => PolicyEngine): PolicyEngine {
  let engine: PolicyEngine | undefined;
  const get = (): PolicyEngine => (engine ??= build());
  return {
    evaluate: (input) => get().evaluate(input),
    acceptedPolicyRefs: (scope) => get().acceptedPolicyRefs(scope),
  };
}

/**
 * A logger for long-running commands: one line per message on stderr. Host transitions (logged at
 * debug as "writ event") print as `[writ] <scope> <invocation> -> <status>` unless `events` is off;
 * other debug lines only with `debug`.
 */
export function stderrLogger(io: CliIo, options: { events: boolean; debug: boolean }): Logger {
  const write = (level: string) => (obj: object, msg?: string) => {
    let extra = "";
    try {
      const s = JSON.stringify(obj);
      extra = s === "{}" ? "" : ` ${s}`;
    } catch {
      extra = "";
    }
    io.stderr.write(escapeForTerminal(`[writ] ${level}: ${msg ?? ""}${extra}`) + "\n");
  };
  const debugLine = write("debug");
  return {
    debug(obj, msg) {
      if (msg === "writ event" && options.events) {
        const e = obj as { event?: string; invocationId?: string; tenantId?: string; spaceId?: string; status?: string };
        io.stderr.write(escapeForTerminal(`[writ] ${e.tenantId ?? "?"}/${e.spaceId ?? "?"} ${e.invocationId ?? ""} ${e.event ?? ""} -> ${e.status ?? "?"}`) + "\n");
      } else if (options.debug) debugLine(obj, msg);
    },
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
  };
}
