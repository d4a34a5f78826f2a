/**
 * What a command works with: the parsed global flags, the printer, and the config and runtime,
 * loaded on first use and closed when the command ends.
 */
import { userInfo } from "node:os";
import { isAbsolute, join } from "node:path";
import { findConfig, loadConfig } from "../config/load-config.js";
import type { WritConfig } from "../config/define-config.js";
import type { Actor, Scope } from "../core/types.js";
import type { Logger } from "../host/options.js";
import type { OpenRuntimeOptions, Runtime } from "../runtime/runtime.js";
import { TENANT_SPACE } from "../core/reserved.js";
import { flag, parseActor, str, type Values } from "./args.js";
import { usageError } from "./exit-codes.js";
import { Printer, type CliIo } from "./output.js";

export interface CliEnvironment {
  cwd: string;
  env: Readonly<Record<string, string | undefined>>;
  io: CliIo;
}

const SCOPE_ID_RE = /^[A-Za-z0-9_.:-]{1,200}$/;

export class CliContext {
  readonly out: Printer;
  readonly values: Values;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly io: CliIo;
  private loaded: Promise<{ path: string; config: WritConfig }> | undefined;
  private opened: Promise<Runtime> | undefined;

  constructor(environment: CliEnvironment, values: Values) {
    this.values = values;
    this.cwd = environment.cwd;
    this.env = environment.env;
    this.io = environment.io;
    this.out = new Printer(environment.io, flag(values, "json"));
  }

  /** The scope from --tenant / --space (or $WRIT_TENANT / $WRIT_SPACE), "default" each otherwise. */
  scope(): Scope {
    const tenantId = str(this.values, "tenant") ?? this.env.WRIT_TENANT ?? "default";
    const spaceId = str(this.values, "space") ?? this.env.WRIT_SPACE ?? "default";
    if (!SCOPE_ID_RE.test(tenantId)) throw usageError(`--tenant must be 1-200 characters of letters, digits, _ . : -, not ${JSON.stringify(tenantId)}`);
    // The reserved tenant journal (API key changes) may be read and verified from the CLI.
    if (!SCOPE_ID_RE.test(spaceId) && spaceId !== TENANT_SPACE) throw usageError(`--space must be 1-200 characters of letters, digits, _ . : -, not ${JSON.stringify(spaceId)}`);
    return { tenantId, spaceId };
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

  /** The config file path: --config, $WRIT_CONFIG, or writ.config.* in the current directory. */
  configPath(): string {
    return findConfig(this.cwd, str(this.values, "config") ?? this.env.WRIT_CONFIG);
  }

  config(): Promise<{ path: string; config: WritConfig }> {
    this.loaded ??= (async () => {
      const path = this.configPath();
      return { path, config: await loadConfig(path) };
    })();
    return this.loaded;
  }

  /** Opens the runtime (store, keys, policy, host) once; `close()` releases it. */
  runtime(options: Omit<OpenRuntimeOptions, "cwd"> = {}): Promise<Runtime> {
    this.opened ??= this.config().then(async ({ config }) => {
      // Imported on demand: commands that never open the store start faster.
      const { openRuntime } = await import("../runtime/runtime.js");
      return openRuntime(config, { cwd: this.cwd, ...options });
    });
    return this.opened;
  }

  /** Resolves a path the way the runtime does: relative paths against the working directory. */
  resolvePath(p: string): string {
    return isAbsolute(p) ? p : join(this.cwd, p);
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    const rt = await opened.catch(() => null);
    await rt?.close();
  }
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
    io.stderr.write(`[writ] ${level}: ${msg ?? ""}${extra}\n`);
  };
  const debugLine = write("debug");
  return {
    debug(obj, msg) {
      if (msg === "writ event" && options.events) {
        const e = obj as { event?: string; invocationId?: string; tenantId?: string; spaceId?: string; status?: string };
        io.stderr.write(`[writ] ${e.tenantId ?? "?"}/${e.spaceId ?? "?"} ${e.invocationId ?? ""} ${e.event ?? ""} -> ${e.status ?? "?"}\n`);
      } else if (options.debug) debugLine(obj, msg);
    },
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
  };
}
