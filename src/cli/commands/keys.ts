/**
 * `writ keys generate|ls|revoke` (decision signing keys on disk), `writ api-keys
 * create|ls|delegate|revoke` (per-tenant API keys, stored hashed, each bound to a principal) and
 * `writ migrate`.
 */
import { readCommitted } from "../../core/store.js";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { API_ROLES, type ApiRole } from "../../core/types.js";
import { systemClock, systemRandom } from "../../node/clock.js";
import { defaultCrypto } from "../../node/defaults.js";
import { createApiKey, revokeApiKey } from "../../runtime/api-keys.js";
import { actorText, keyPrincipal, setKeyDelegation } from "../../runtime/principals.js";
import { generateKeyFile, readKeyFile, revokeKeyFile } from "../../runtime/key-files.js";
import { flag, list, parseActor, str } from "../args.js";
import { AS_OPTION, QUIET_OPTION, printList, type CommandBody } from "../command.js";
import type { CliContext } from "../context.js";
import { usageError } from "../exit-codes.js";
import { time } from "../output.js";

/** The keys directory the config names, resolved as the runtime resolves it (against the config's directory). */
export async function keysDirOf(ctx: CliContext): Promise<string> {
  const { config } = await ctx.config();
  const { keysDirOf: fromConfig } = await import("../../runtime/store-from-config.js");
  return fromConfig(config, await ctx.configDir());
}

/** The private key file of `kid` and its permission bits, or null when missing. */
export function privateKeyFile(dir: string, kid: string): { path: string; mode: number } | null {
  const path = join(dir, `${kid}.private.json`);
  if (!existsSync(path)) return null;
  return { path, mode: statSync(path).mode & 0o777 };
}

const KID_RE = /^[A-Za-z0-9_.-]{1,100}$/;

export const keysGenerate: CommandBody = {
  options: { kid: { type: "string", value: "<kid>", description: "key id (default: key-<date>-<random>)" } },
  details: "Running processes keep the key they started with: restart writ serve / writ worker to sign with the new key.",
  async run(ctx) {
    const kid = str(ctx.values, "kid");
    if (kid !== undefined && !KID_RE.test(kid)) throw usageError(`--kid must be 1-100 characters of letters, digits, _ . -, not ${JSON.stringify(kid)}`);
    const dir = await keysDirOf(ctx);
    const entry = generateKeyFile(dir, kid);
    ctx.out.result({ key: { kid: entry.kid, status: entry.status, createdAt: entry.createdAt, publicJwk: entry.publicJwk }, dir }, () => {
      ctx.out.line(`generated key ${entry.kid} (active) in ${dir}; its private half is ${join(dir, `${entry.kid}.private.json`)} (0600)`);
      ctx.out.line("restart running writ processes to sign with it");
    });
  },
};

export const keysLs: CommandBody = {
  options: { ...QUIET_OPTION },
  async run(ctx) {
    const dir = await keysDirOf(ctx);
    const items = readKeyFile(dir).map((k) => {
      const priv = privateKeyFile(dir, k.kid);
      return { kid: k.kid, status: k.status, createdAt: k.createdAt, privateFile: priv ? { path: priv.path, mode: `0${priv.mode.toString(8)}` } : null };
    });
    printList(ctx, { dir, items }, items, (k) => k.kid, () =>
      ctx.out.table(
        items,
        [
          { header: "kid", value: (k) => k.kid },
          { header: "status", value: (k) => k.status },
          { header: "created", value: (k) => k.createdAt },
          { header: "private key", value: (k) => (k.privateFile ? `present (${k.privateFile.mode})` : "none") },
        ],
        `(no keys in ${dir}: \`writ keys generate\` creates one; writ serve creates one on first start)`,
      ),
    );
  },
};

export const keysRevoke: CommandBody = {
  options: {},
  async run(ctx, p) {
    const kid = p[0]!;
    const dir = await keysDirOf(ctx);
    const k = revokeKeyFile(dir, kid);
    const active = readKeyFile(dir).some((x) => x.status === "active");
    ctx.out.result({ key: { kid: k.kid, status: k.status }, activeKeyLeft: active }, () => {
      ctx.out.line(`revoked key ${k.kid}; its private half is deleted`);
      if (!active) ctx.out.line("no active key is left: run `writ keys generate` (writ serve would generate one on start)");
    });
  },
};

export const apiKeysCreate: CommandBody = {
  options: {
    name: { type: "string", value: "<name>", description: "what the key is for" },
    role: { type: "string", multiple: true, value: "<role>", description: `${API_ROLES.join(", ")}; repeatable (required)` },
    "key-space": { type: "string", multiple: true, value: "<space>", description: "a space the key may act in; repeatable (default: all of the tenant's spaces)" },
    "approver-role": { type: "string", multiple: true, value: "<role>", description: "a policy approver role (e.g. finance, for @approvers(\"finance\")) the holder may approve as; repeatable" },
    principal: { type: "string", value: "<type:id>", description: "who the key belongs to, e.g. agent:support-bot (default: user:<name>); submits and votes act as it" },
    "acts-for": { type: "string", multiple: true, value: "<type:id>", description: "an actor the key may also submit for (its delegation list); repeatable" },
  },
  async run(ctx) {
    const roles = list(ctx.values, "role");
    if (roles.length === 0) throw usageError(`\`writ api-keys create\` needs at least one --role (${API_ROLES.join(", ")})`);
    const bad = roles.find((r) => !(API_ROLES as readonly string[]).includes(r));
    if (bad !== undefined) throw usageError(`--role must be one of ${API_ROLES.join(", ")}, not ${JSON.stringify(bad)}`);
    const spaces = list(ctx.values, "key-space");
    const principalText = str(ctx.values, "principal");
    const principal = principalText !== undefined ? parseActor(principalText, "principal") : undefined;
    const actsFor = list(ctx.values, "acts-for").map((a) => parseActor(a, "acts-for"));
    const { tenantId } = await ctx.scope();
    const rt = await ctx.runtime();
    const { key, record } = await createApiKey(
      rt.store,
      defaultCrypto(),
      systemRandom,
      {
        tenantId,
        roles: roles as ApiRole[],
        name: str(ctx.values, "name") ?? "",
        ...(spaces.length > 0 ? { spaces } : {}),
        ...(list(ctx.values, "approver-role").length > 0 ? { approverRoles: list(ctx.values, "approver-role") } : {}),
        ...(principal ? { principal } : {}),
        ...(actsFor.length > 0 ? { actsFor } : {}),
      },
      systemClock.now(),
    );
    const shown = { keyId: record.keyId, tenantId: record.tenantId, name: record.name, roles: record.roles, spaces: record.spaces, principal: keyPrincipal(record), actsFor: record.actsFor ?? [], createdAt: record.createdAt };
    ctx.out.result({ key, record: shown }, () => {
      ctx.out.line(key);
      ctx.out.note(`API key ${record.keyId} for tenant ${tenantId}, principal ${actorText(shown.principal)} (roles ${record.roles.join(", ")}; spaces ${record.spaces.join(", ")}). It is shown this once: store it now.`);
    });
  },
};

export const apiKeysLs: CommandBody = {
  options: { ...QUIET_OPTION },
  async run(ctx) {
    const { tenantId } = await ctx.scope();
    // Reads only: nothing is created where no store exists yet (docs/cli.md, Start-up).
    const { store } = await ctx.reads();
    const recs = await readCommitted(store, (tx) => tx.listApiKeys(tenantId));
    const items = recs.map((r) => ({ keyId: r.keyId, name: r.name, principal: keyPrincipal(r), actsFor: r.actsFor ?? [], roles: r.roles, spaces: r.spaces, createdAt: r.createdAt, ...(r.revokedAt !== undefined ? { revokedAt: r.revokedAt } : {}) }));
    printList(ctx, { items }, items, (k) => k.keyId, () =>
      ctx.out.table(items, [
        { header: "key id", value: (k) => k.keyId },
        { header: "name", value: (k) => k.name || "-" },
        { header: "principal", value: (k) => actorText(k.principal) },
        { header: "acts for", value: (k) => k.actsFor.map(actorText).join(",") || "-" },
        { header: "roles", value: (k) => k.roles.join(",") },
        { header: "spaces", value: (k) => k.spaces.join(",") },
        { header: "created", value: (k) => time(k.createdAt) },
        { header: "revoked", value: (k) => time(k.revokedAt) },
      ]),
    );
    if (items.length === 0) await ctx.explainEmpty(`API keys of tenant ${tenantId}`);
  },
};

export const apiKeysRevoke: CommandBody = {
  options: {},
  async run(ctx, p) {
    const keyId = p[0]!;
    const { tenantId } = await ctx.scope();
    const rt = await ctx.runtime();
    const rec = await revokeApiKey(rt.store, keyId, tenantId, systemClock.now());
    ctx.out.result({ keyId: rec.keyId, revokedAt: rec.revokedAt }, () => ctx.out.line(`revoked API key ${rec.keyId}`));
  },
};

export const apiKeysDelegate: CommandBody = {
  options: {
    "acts-for": { type: "string", multiple: true, value: "<type:id>", description: "an actor the key may submit for; repeatable" },
    none: { type: "boolean", description: "clear the delegation list" },
    ...AS_OPTION,
  },
  details: "The change is journaled in the tenant journal (space ~tenant) with the operator (--as) as its author.",
  async run(ctx, p) {
    const keyId = p[0]!;
    const actsFor = list(ctx.values, "acts-for").map((a) => parseActor(a, "acts-for"));
    const none = flag(ctx.values, "none");
    if (none === (actsFor.length > 0)) throw usageError("`writ api-keys delegate` needs either --acts-for <type:id> (repeatable) or --none");
    const { tenantId } = await ctx.scope();
    const rt = await ctx.runtime();
    const rec = await setKeyDelegation(rt.store, defaultCrypto(), { tenantId, keyId, actsFor, by: ctx.operator() }, systemClock.now());
    const shown = { keyId: rec.keyId, principal: keyPrincipal(rec), actsFor: rec.actsFor ?? [] };
    ctx.out.result(shown, () => ctx.out.line(`API key ${rec.keyId} (${actorText(shown.principal)}) may act for: ${shown.actsFor.map(actorText).join(", ") || "its principal only"}`));
  },
};

export const migrate: CommandBody = {
  options: {},
  async run(ctx) {
    const { config } = await ctx.config();
    const { storeFromConfig } = await import("../../runtime/runtime.js");
    const store = await storeFromConfig(config, await ctx.configDir());
    try {
      await store.migrate();
      const version = "schemaVersion" in store && typeof store.schemaVersion === "function" ? await (store.schemaVersion as () => Promise<number>)() : undefined;
      ctx.out.result({ store: store.kind, schemaVersion: version ?? null }, () => ctx.out.line(`store ${store.kind} migrated${version !== undefined ? ` (schema version ${version})` : ""}`));
    } finally {
      await store.close();
    }
  },
};
