/**
 * What `writ doctor` checks, as a function that prints nothing and changes nothing (it never
 * creates a database, a key or a migration): the config loads, the policy set parses, every step
 * has a registered connector with that operation, an active signing key exists with a private file
 * only its owner can read, and the store answers at the schema version this build needs.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";
import { loadConfig } from "../config/load-config.js";
import type { WritConfig } from "../config/define-config.js";
import type { Store } from "../core/store.js";
import { errorMessage, isWritError } from "../core/errors.js";
import { readKeyFile } from "../runtime/key-files.js";
import { policyFromConfig, storeFromConfig } from "../runtime/runtime.js";
import { whyNotCreatable } from "../runtime/store-from-config.js";
import { POSTGRES_SCHEMA_VERSION } from "../stores/postgres/postgres-migrations.js";
import { SQLITE_SCHEMA_VERSION } from "../stores/sqlite/sqlite-migrations.js";
import { EXIT, type ExitCode } from "./exit-codes.js";
import { effectiveSettings, type EffectiveSettings } from "./settings.js";

export interface DoctorCheck {
  /** config, policy, connectors, keys, store. */
  name: string;
  /** ok, warning (works, but worth knowing), or problem. */
  status: "ok" | "warning" | "problem";
  /** What was found. */
  detail: string;
  /** How to fix it, for problems and warnings. */
  fix?: string;
}

export interface DoctorReport {
  configPath: string | null;
  checks: DoctorCheck[];
  /** What `writ serve` would run with, defaults filled in; secrets are never included. Absent when the config does not load. */
  settings?: EffectiveSettings;
  /** 0 healthy (warnings allowed), 3 the config does not load, 4 the store cannot be reached, 1 any other problem. */
  exitCode: ExitCode;
}

export interface DoctorOptions {
  /** Finds the config path (rejects when there is none). */
  findConfigPath: () => string | Promise<string>;
}

/** Runs every check it can; a config that does not load stops the others (they need it). */
export async function diagnose(options: DoctorOptions): Promise<DoctorReport> {
  const checks: DoctorCheck[] = [];
  let configPath: string | null = null;
  let config: WritConfig;
  try {
    configPath = await options.findConfigPath();
    config = await loadConfig(configPath, { cacheDir: join(dirname(configPath), ".writ", "cache") });
    checks.push({ name: "config", status: "ok", detail: `${configPath} loads: ${config.actions.length} action(s), ${config.connectors.length} connector(s)` });
  } catch (e) {
    checks.push({ name: "config", status: "problem", detail: errorMessage(e), fix: "pass --config <file> (or set WRIT_CONFIG, or a writ.config field in package.json) to a file whose default export is defineConfig({...}); see docs/cli.md" });
    return { configPath, checks, exitCode: EXIT.CONFIG };
  }
  checks.push(checkPolicy(config));
  checks.push(checkConnectors(config));
  // Relative paths of the config resolve against its directory, as the runtime resolves them.
  checks.push(checkKeys(config, dirname(configPath)));
  const store = await checkStore(config, dirname(configPath));
  checks.push(store.check);
  const exitCode = store.unreachable ? EXIT.STORE : checks.some((c) => c.status === "problem") ? EXIT.FAILED : EXIT.OK;
  return { configPath, checks, settings: effectiveSettings(config), exitCode };
}

function checkPolicy(config: WritConfig): DoctorCheck {
  if ("evaluate" in config.policy) return { name: "policy", status: "ok", detail: "a custom PolicyEngine (not checked further)" };
  try {
    const engine = policyFromConfig(config) as { policyRef?: string };
    return { name: "policy", status: "ok", detail: `Cedar policy set parses${engine.policyRef ? ` (${engine.policyRef})` : ""}` };
  } catch (e) {
    return { name: "policy", status: "problem", detail: `the Cedar policy set does not parse: ${errorMessage(e)}`, fix: "correct the policies (and schema) named above; docs/policy.md describes what Writ accepts" };
  }
}

/** Every step (and compensation step) names a registered connector that has the operation. */
export function connectorProblems(config: WritConfig): string[] {
  const problems: string[] = [];
  const ops = new Map<string, Set<string>>();
  for (const c of config.connectors) {
    if (ops.has(c.id)) problems.push(`connector ${c.id} is registered twice`);
    ops.set(c.id, new Set(Object.keys(c.operations ?? {})));
  }
  const seen = new Set<string>();
  for (const a of config.actions) {
    if (seen.has(a.id)) problems.push(`action ${a.id} is defined twice`);
    seen.add(a.id);
    for (const s of a.steps) {
      const uses: Array<[string, string, string]> = [[s.name, s.connector, s.operation]];
      if (s.compensate) uses.push([`${s.name} (compensation)`, s.compensate.connector, s.compensate.operation]);
      for (const [step, connector, op] of uses) {
        const have = ops.get(connector);
        if (!have) problems.push(`action ${a.id} step ${step} uses connector ${connector}, which is not registered`);
        else if (!have.has(op)) problems.push(`action ${a.id} step ${step} calls ${connector}.${op}, but connector ${connector} has no operation ${op} (it has ${[...have].join(", ") || "none"})`);
      }
    }
  }
  return problems;
}

function checkConnectors(config: WritConfig): DoctorCheck {
  const problems = connectorProblems(config);
  if (problems.length === 0) return { name: "connectors", status: "ok", detail: `every step of ${config.actions.length} action(s) has its connector and operation` };
  return { name: "connectors", status: "problem", detail: problems.join("; "), fix: "add the missing connectors to `connectors` in the config, or correct the step's connector/operation" };
}

function checkKeys(config: WritConfig, baseDir: string): DoctorCheck {
  const rel = config.keys?.dir ?? ".writ/keys";
  const dir = isAbsolute(rel) ? rel : join(baseDir, rel);
  let keys;
  try {
    keys = readKeyFile(dir);
  } catch (e) {
    return { name: "keys", status: "problem", detail: errorMessage(e), fix: `repair or move away ${join(dir, "keyring.json")}, then \`writ keys generate\`` };
  }
  const active = keys.filter((k) => k.status === "active").at(-1);
  if (!active) return { name: "keys", status: "problem", detail: `no active signing key in ${dir}`, fix: "run `writ keys generate` (writ serve also creates one on first start)" };
  const priv = join(dir, `${active.kid}.private.json`);
  if (!existsSync(priv)) return { name: "keys", status: "problem", detail: `the active key ${active.kid} has no private file ${priv}`, fix: `restore ${priv}, or \`writ keys revoke ${active.kid}\` and \`writ keys generate\`` };
  const mode = statSync(priv).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    return { name: "keys", status: "problem", detail: `the private key ${priv} is readable by others (mode 0${mode.toString(8)})`, fix: `chmod 600 ${priv}` };
  }
  return { name: "keys", status: "ok", detail: `active signing key ${active.kid} (private file 0${mode.toString(8)})` };
}

const PROBE_SCOPE = { tenantId: "writ-doctor", spaceId: "probe" };

async function checkStore(config: WritConfig, baseDir: string): Promise<{ check: DoctorCheck; unreachable: boolean }> {
  const kind = config.store?.kind ?? "sqlite";
  if (kind === "memory") return { check: { name: "store", status: "warning", detail: "memory store: nothing persists between processes", fix: "use { kind: \"sqlite\" } or { kind: \"postgres\", url } for writ serve" }, unreachable: false };
  if (config.store?.kind === "sqlite" || config.store === undefined) {
    const p = config.store?.path ?? ".writ/writ.db";
    const file = p === ":memory:" || isAbsolute(p) ? p : join(baseDir, p);
    if (file !== ":memory:" && !existsSync(file)) {
      const blocked = whyNotCreatable(file);
      if (blocked) return { check: { name: "store", status: "problem", detail: `the sqlite database ${file} cannot be created: ${blocked}`, fix: "point store.path at a writable directory" }, unreachable: true };
      return { check: { name: "store", status: "problem", detail: `the sqlite database ${file} does not exist yet`, fix: "run `writ migrate` (writ serve also creates it on start)" }, unreachable: false };
    }
  }
  let store: Store;
  try {
    store = await storeFromConfig(config, baseDir);
  } catch (e) {
    return { check: { name: "store", status: "problem", detail: `cannot open the ${kind} store: ${errorMessage(e)}`, fix: "check the store settings in the config and that the database is reachable" }, unreachable: true };
  }
  try {
    const withVersion = store as Store & { schemaVersion?: () => Promise<number> };
    const needed = kind === "postgres" ? POSTGRES_SCHEMA_VERSION : kind === "sqlite" ? SQLITE_SCHEMA_VERSION : undefined;
    if (typeof withVersion.schemaVersion === "function" && needed !== undefined) {
      const v = await withVersion.schemaVersion();
      if (v < needed) return { check: { name: "store", status: "problem", detail: `the ${kind} store is at schema version ${v}; this build needs ${needed}`, fix: "run `writ migrate`" }, unreachable: false };
      if (v > needed) return { check: { name: "store", status: "problem", detail: `the ${kind} store is at schema version ${v}, newer than this build (${needed})`, fix: "upgrade Writ to the version that migrated this database" }, unreachable: false };
    }
    await store.transact((tx) => tx.journalHead(PROBE_SCOPE));
    return { check: { name: "store", status: "ok", detail: `the ${kind} store answers${needed !== undefined ? ` and is migrated (schema version ${needed})` : ""}` }, unreachable: false };
  } catch (e) {
    const unreachable = isWritError(e, "STORE_ERROR") || isWritError(e, "STORE_CLOSED");
    return { check: { name: "store", status: "problem", detail: `the ${kind} store does not answer: ${errorMessage(e)}`, fix: "check that the database is running and reachable with the configured settings" }, unreachable };
  } finally {
    await store.close().catch(() => undefined);
  }
}
