/**
 * The local demo bootstrap. A config with a `demo` section (see {@link withDemo}) makes
 * `writ serve` ensure, on every start, that the demo scope has an admin API key (created on first
 * start, kept in a 0600 file and printed each start) and the authorities the demo requests act
 * under. For a local demo only: a real deployment has no `demo` section and creates keys with
 * `writ api-keys create`.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { WritConfig } from "../config/define-config.js";
import { WritError } from "../core/errors.js";
import type { ActionRequest, Actor, Json, Scope } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { systemClock, systemRandom } from "../node/clock.js";
import { defaultCrypto } from "../node/defaults.js";
import { createApiKey, verifyApiKey } from "../runtime/api-keys.js";
import type { Runtime } from "../runtime/runtime.js";

/** An authority the demo needs (created when missing, never changed when present). */
export interface DemoAuthority {
  authorityRef: string;
  principal: Actor;
  actions: string[];
  constraints?: { [k: string]: Json };
}

export interface DemoSetup {
  tenantId: string;
  spaceId: string;
  /** Where the admin key is kept (0600), relative to the working directory. @defaultValue ".writ/demo-admin-key" */
  adminKeyFile?: string;
  /** The key's name; over HTTP it acts (approves, resolves) as `user:<name>`. @defaultValue "demo-admin" */
  adminKeyName?: string;
  authorities?: DemoAuthority[];
  /** The request of the ready-to-paste curl line (tenant and space come from above). */
  sampleRequest?: Omit<ActionRequest, "tenantId" | "spaceId">;
}

export type DemoConfig = WritConfig & { demo: DemoSetup };

/**
 * Adds a demo section to a config: `writ serve` then bootstraps the local demo (see the module doc).
 * @example
 * export default withDemo(defineConfig({ actions, connectors, policy }), { tenantId: "demo", spaceId: "default" });
 */
export function withDemo(config: WritConfig, demo: DemoSetup): DemoConfig {
  checkDemo(demo);
  return { ...config, demo };
}

const ID_RE = /^[A-Za-z0-9_.:-]{1,200}$/;

function checkDemo(d: unknown): asserts d is DemoSetup {
  const bad = (m: string): never => {
    throw new WritError("INVALID_OPTION", `demo: ${m}`);
  };
  if (typeof d !== "object" || d === null) bad("must be an object { tenantId, spaceId, ... }");
  const o = d as Record<string, unknown>;
  if (typeof o.tenantId !== "string" || !ID_RE.test(o.tenantId)) bad("tenantId must be 1-200 characters of letters, digits, _ . : -");
  if (typeof o.spaceId !== "string" || !ID_RE.test(o.spaceId)) bad("spaceId must be 1-200 characters of letters, digits, _ . : -");
  if (o.adminKeyFile !== undefined && (typeof o.adminKeyFile !== "string" || o.adminKeyFile.length === 0)) bad("adminKeyFile must be a path");
  if (o.authorities !== undefined) {
    if (!Array.isArray(o.authorities)) bad("authorities must be a list");
    for (const a of o.authorities as DemoAuthority[]) {
      if (typeof a?.authorityRef !== "string") bad("every authority needs an authorityRef");
      const p = checkActor(a.principal, `authority ${a.authorityRef}: principal`);
      if (p.length > 0) bad(p.join("; "));
    }
  }
}

/** The demo section of a loaded config, checked, or null when it has none. */
export function demoOf(config: WritConfig): DemoSetup | null {
  const d = (config as Partial<DemoConfig>).demo;
  if (d === undefined) return null;
  checkDemo(d);
  return d;
}

export interface DemoState {
  scope: Scope;
  /** The admin key text (the one secret the demo prints). */
  adminKey: string;
  adminKeyFile: string;
  /** True when this start created the key. */
  created: boolean;
  /** Authorities created by this start. */
  authoritiesCreated: string[];
}

const GRANTOR: Actor = { type: "user", id: "writ-demo-setup" };

/** Ensures the admin key (reusing the stored one while it still verifies) and the demo authorities. */
export async function ensureDemo(rt: Runtime, demo: DemoSetup, resolvePath: (p: string) => string): Promise<DemoState> {
  const scope = { tenantId: demo.tenantId, spaceId: demo.spaceId };
  const keyFile = resolvePath(demo.adminKeyFile ?? ".writ/demo-admin-key");
  const crypto = defaultCrypto();
  let adminKey: string | null = null;
  if (existsSync(keyFile)) {
    const text = readFileSync(keyFile, "utf8").trim();
    const rec = text.length > 0 ? await verifyApiKey(rt.store, crypto, text) : null;
    // A key of another tenant, revoked, or from a deleted database is replaced.
    if (rec && rec.tenantId === demo.tenantId && rec.roles.includes("admin")) adminKey = text;
  }
  let created = false;
  if (adminKey === null) {
    const { key } = await createApiKey(rt.store, crypto, systemRandom, { tenantId: demo.tenantId, roles: ["admin"], name: demo.adminKeyName ?? "demo-admin" }, systemClock.now());
    mkdirSync(dirname(keyFile), { recursive: true, mode: 0o700 });
    writeFileSync(keyFile, key + "\n", { mode: 0o600 });
    adminKey = key;
    created = true;
  }
  chmodSync(keyFile, 0o600);
  const authoritiesCreated: string[] = [];
  for (const a of demo.authorities ?? []) {
    if (await rt.host.authorities.get(scope, a.authorityRef)) continue;
    await rt.host.authorities.create(scope, { ...a, grantor: GRANTOR });
    authoritiesCreated.push(a.authorityRef);
  }
  return { scope, adminKey, adminKeyFile: keyFile, created, authoritiesCreated };
}

/** A shell-safe single-quoted word. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A curl line that submits the demo's sample request to a server at `url`. */
export function demoCurl(url: string, demo: DemoSetup, adminKey: string): string | null {
  if (!demo.sampleRequest) return null;
  const path = `${url.replace(/\/$/, "")}/v1/spaces/${encodeURIComponent(demo.spaceId)}/invocations`;
  return `curl -s -X POST ${path} -H ${shellQuote(`Authorization: Bearer ${adminKey}`)} -H 'Content-Type: application/json' -d ${shellQuote(JSON.stringify(demo.sampleRequest))}`;
}
