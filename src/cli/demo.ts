/**
 * The local demo bootstrap. A config with a `demo` section (see {@link withDemo}) makes
 * `writ serve` ensure, on every start, that the demo scope has three API keys (created on first
 * start, kept in 0600 files and printed each start): an agent key (role submit, principal the
 * sample request's actor), an approver key (roles approve and operate, principal
 * `user:demo-approver`) and an admin key; and the authorities the demo requests act under. The
 * agent key cannot approve what it submitted (four eyes); the approver key approves it. For a
 * local demo only: a real deployment has no `demo` section and creates keys with
 * `writ api-keys create --principal ...`.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { WritConfig } from "../config/define-config.js";
import { WritError } from "../core/errors.js";
import type { ActionRequest, Actor, ApiRole, Json, Scope } from "../core/types.js";
import { checkActor } from "../core/validate.js";
import { systemClock, systemRandom } from "../node/clock.js";
import { defaultCrypto } from "../node/defaults.js";
import { createApiKey, verifyApiKey } from "../runtime/api-keys.js";
import { actorText, keyPrincipal } from "../runtime/principals.js";
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
  /** Where the admin key is kept (0600), relative to the config file's directory. @defaultValue ".writ/demo-admin-key" */
  adminKeyFile?: string;
  /** The key's name; over HTTP it acts as `user:<name>`. @defaultValue "demo-admin" */
  adminKeyName?: string;
  /** Where the agent key (role submit) is kept. @defaultValue ".writ/demo-agent-key" */
  agentKeyFile?: string;
  /** Where the approver key (roles approve, operate) is kept. @defaultValue ".writ/demo-approver-key" */
  approverKeyFile?: string;
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
  for (const f of ["adminKeyFile", "agentKeyFile", "approverKeyFile"]) {
    if (o[f] !== undefined && (typeof o[f] !== "string" || o[f].length === 0)) bad(`${f} must be a path`);
  }
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

/** One demo API key: its text (printed by the demo), file and principal. */
export interface DemoKey {
  key: string;
  file: string;
  principal: Actor;
  roles: ApiRole[];
  /** True when this start created the key. */
  created: boolean;
}

export interface DemoState {
  scope: Scope;
  /** The admin key text. */
  adminKey: string;
  adminKeyFile: string;
  /** True when this start created the admin key. */
  created: boolean;
  /** The agent's key (submit): the demo's requests are submitted with it. */
  agent: DemoKey;
  /** The approver's key (approve, operate): approves and resolves what the agent submitted. */
  approver: DemoKey;
  /** Authorities created by this start. */
  authoritiesCreated: string[];
}

const GRANTOR: Actor = { type: "user", id: "writ-demo-setup" };
const DEMO_APPROVER: Actor = { type: "user", id: "demo-approver" };
const DEMO_AGENT: Actor = { type: "agent", id: "demo-agent" };

/** The key kept in `keyFile` while it still verifies with these roles and principal, else a new one. */
async function ensureKey(rt: Runtime, tenantId: string, keyFile: string, want: { roles: ApiRole[]; name: string; principal?: Actor }): Promise<DemoKey> {
  const crypto = defaultCrypto();
  if (existsSync(keyFile)) {
    const text = readFileSync(keyFile, "utf8").trim();
    const rec = text.length > 0 ? await verifyApiKey(rt.store, crypto, text) : null;
    // A key of another tenant or principal, revoked, or from a deleted database is replaced.
    const principal = rec ? keyPrincipal(rec) : null;
    if (rec && principal && rec.tenantId === tenantId && want.roles.every((r) => rec.roles.includes(r)) && (!want.principal || actorText(principal) === actorText(want.principal))) {
      chmodSync(keyFile, 0o600);
      return { key: text, file: keyFile, principal, roles: rec.roles, created: false };
    }
  }
  const { key, record } = await createApiKey(rt.store, crypto, systemRandom, { tenantId, roles: want.roles, name: want.name, ...(want.principal ? { principal: want.principal } : {}) }, systemClock.now());
  mkdirSync(dirname(keyFile), { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, key + "\n", { mode: 0o600 });
  chmodSync(keyFile, 0o600);
  return { key, file: keyFile, principal: keyPrincipal(record), roles: record.roles, created: true };
}

/** Ensures the demo keys (reusing stored ones while they still verify) and the demo authorities. */
export async function ensureDemo(rt: Runtime, demo: DemoSetup, resolvePath: (p: string) => string): Promise<DemoState> {
  const scope = { tenantId: demo.tenantId, spaceId: demo.spaceId };
  const admin = await ensureKey(rt, demo.tenantId, resolvePath(demo.adminKeyFile ?? ".writ/demo-admin-key"), { roles: ["admin"], name: demo.adminKeyName ?? "demo-admin" });
  const agentPrincipal = demo.sampleRequest?.actor ?? demo.authorities?.[0]?.principal ?? DEMO_AGENT;
  const agent = await ensureKey(rt, demo.tenantId, resolvePath(demo.agentKeyFile ?? ".writ/demo-agent-key"), { roles: ["submit"], name: "demo-agent", principal: agentPrincipal });
  const approver = await ensureKey(rt, demo.tenantId, resolvePath(demo.approverKeyFile ?? ".writ/demo-approver-key"), { roles: ["approve", "operate"], name: "demo-approver", principal: DEMO_APPROVER });
  const authoritiesCreated: string[] = [];
  for (const a of demo.authorities ?? []) {
    if (await rt.host.authorities.get(scope, a.authorityRef)) continue;
    await rt.host.authorities.create(scope, { ...a, grantor: GRANTOR });
    authoritiesCreated.push(a.authorityRef);
  }
  return { scope, adminKey: admin.key, adminKeyFile: admin.file, created: admin.created, agent, approver, authoritiesCreated };
}

/** A shell-safe single-quoted word. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A curl line that submits the demo's sample request to a server at `url` with the agent's key. */
export function demoCurl(url: string, demo: DemoSetup, agentKey: string): string | null {
  if (!demo.sampleRequest) return null;
  const path = `${url.replace(/\/$/, "")}/v1/spaces/${encodeURIComponent(demo.spaceId)}/invocations`;
  return `curl -s -X POST ${path} -H ${shellQuote(`Authorization: Bearer ${agentKey}`)} -H 'Content-Type: application/json' -d ${shellQuote(JSON.stringify(demo.sampleRequest))}`;
}
